"""A model file that shrinks while a thread build reads it (an exporter rewriting it) fails that build with a clear
error, never the user's process: the model was memory-mapped, and a mapped file that shrinks is SIGBUS."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

BUILDER = textwrap.dedent(
    """
    import sys
    from trt_widget import Build

    statuses = []
    for _ in range(int(sys.argv[2])):
        build = Build(sys.argv[1], isolation="thread", history=False, resources=False).start()
        build.wait()
        statuses.append(build.status)
    print("ENDED", " ".join(statuses), flush=True)
    """
)

# a real process that shrinks and regrows the file in a loop (zeros where the model was): a build maps it whole
# and reads pages that are gone a moment later
TRUNCATOR = textwrap.dedent(
    """
    import os, sys, time
    path, size = sys.argv[1], int(sys.argv[2])
    while True:
        os.truncate(path, size // 8)
        time.sleep(0.002)
        os.truncate(path, size)
        time.sleep(0.002)
    """
)


def test_a_model_truncated_during_the_parse_never_kills_the_process(tmp_path: Path, resnet50_bytes: bytes) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(resnet50_bytes)
    builder_py, truncator_py = tmp_path / "builder.py", tmp_path / "truncator.py"
    builder_py.write_text(BUILDER)
    truncator_py.write_text(TRUNCATOR)
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    truncator = subprocess.Popen([sys.executable, str(truncator_py), str(model), str(len(resnet50_bytes))])
    try:
        done = subprocess.run(
            [sys.executable, str(builder_py), str(model), "12"], capture_output=True, text=True, env=env, timeout=300
        )
    finally:
        truncator.kill()
        truncator.wait()
    assert done.returncode != -signal.SIGBUS, "the process died of SIGBUS"
    assert done.returncode == 0, done.stderr[-3000:]
    (ended,) = [line for line in done.stdout.splitlines() if line.startswith("ENDED")]
    assert set(ended.split()[1:]) <= {"failed", "succeeded"}
