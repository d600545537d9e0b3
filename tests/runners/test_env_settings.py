"""A bad ``TRT_WIDGET_WORKER_IDLE_S`` (inf, nan, 1e300, a word, a negative number) gets one clear warning line and
the default; the builds still run (inf printed four thread tracebacks, one per idle timer)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trt_widget.models import deep_residual, to_bytes

SCRIPT = textwrap.dedent(
    """
    import sys
    from trt_widget import Build

    for _ in range(2):  # each build's worker goes back to the pool: an idle timer each time
        build = Build(sys.argv[1], history=False).start()
        build.wait()
        print("ENDED", build.status, flush=True)
    """
)


@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "-1", "soon\x1b[2J"])
def test_a_bad_idle_setting_warns_once_and_builds(tmp_path: Path, value: str) -> None:
    model = tmp_path / "small.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    script = tmp_path / "build.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "TRT_WIDGET_WORKER_IDLE_S": value, "TRT_WIDGET_HISTORY": "off"}
    done = subprocess.run(
        [sys.executable, str(script), str(model)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0 and done.stdout.split() == ["ENDED", "succeeded"] * 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "TRT_WIDGET_WORKER_IDLE_S" in lines[0] and "default 300 s" in lines[0], lines
    assert "\x1b" not in done.stderr
