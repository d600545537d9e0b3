"""Sixteenth adversarial re-run (issue 35): a report made from a recording shows the recorded build's options
(6dd17db: ``Build.recorded_options`` from ``build_start``), which the recording checks take as any JSON object.
An option nested just less deep than the recording's reader takes (the reader refuses deeper ones: "JSON nested too
deeply") loads, then ``_options_text``'s ``json.dumps``, a few frames deeper on the stack, raises RecursionError:
``trt-widget view rec --report r.html`` ends in a traceback (depths 985-988 there), ``to_html`` raises it in a
notebook. A real build's recording."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget import Build
from trt_widget.models import deep_residual, to_bytes
from trt_widget.runners import RecordingError


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The lines of a real build's ``--json`` recording."""
    folder = tmp_path_factory.mktemp("rec")
    (folder / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", "m.onnx", "-o", "m.engine", "--json"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _nested(lines: list[str], depth: int, path: Path) -> Path:
    """The recording with its build_start's options holding one option nested ``depth`` lists deep."""
    out = []
    for line in lines:
        event = json.loads(line)
        if event.get("event") == "build_start":
            event["options"] = "@OPTIONS@"
            text = '{"optimization_level": ' + "[" * depth + "]" * depth + "}"
            line = json.dumps(event).replace('"@OPTIONS@"', text)
        out.append(line)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


@pytest.mark.xfail(
    strict=True,
    reason="issue 35, 16th re-run R2: a recording's build_start options nested just under the reader's limit load, "
    "then the report's json.dumps of them raises RecursionError (to_html, view --report)",
)
def test_every_recording_that_loads_makes_a_report(recording: list[str], tmp_path: Path) -> None:
    deepest = 0
    for depth in range(1200, 0, -1):  # the deepest options the recording reader takes, here
        try:
            Build.from_events(str(_nested(recording, depth, tmp_path / "probe.jsonl")))
        except RecordingError:
            continue
        deepest = depth
        break
    assert deepest > 100, "no nested options loaded at all"
    for depth in range(deepest, deepest - 12, -1):
        build = Build.from_events(str(_nested(recording, depth, tmp_path / f"d{depth}.jsonl")))
        build.start()
        build.wait(120)
        assert build.status == "succeeded", build.status
        try:
            build.to_html(str(tmp_path / f"d{depth}.html"))
        except RecursionError:
            pytest.fail(f"options nested {depth} deep loaded (the reader takes up to {deepest}) but to_html raised "
                        "RecursionError")  # fmt: skip
        assert (tmp_path / f"d{depth}.html").is_file()
