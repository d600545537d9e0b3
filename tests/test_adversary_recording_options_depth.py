"""Sixteenth adversarial re-run (issue 35): a report made from a recording shows the recorded build's options
(6dd17db: ``Build.recorded_options`` from ``build_start``), which the recording checks take as any JSON object.
An option nested just less deep than the recording's reader takes (the reader refuses deeper ones: "JSON nested too
deeply") loads, then ``_options_text``'s ``json.dumps``, a few frames deeper on the stack, raises RecursionError:
``trt-widget view rec --report r.html`` ends in a traceback (depths 985-988 there), ``to_html`` raises it in a
notebook. A real build's recording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_recordings import record_build

from trt_widget import Build
from trt_widget.models import deep_residual
from trt_widget.runners import RecordingError


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The lines of a real build's ``--json`` recording."""
    path = record_build(tmp_path_factory.mktemp("rec"), deep_residual(2), "rec.jsonl", timeout=300)
    return path.read_text(encoding="utf-8").splitlines()


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


def test_every_recording_that_loads_makes_a_report(recording: list[str], tmp_path: Path) -> None:
    deepest = 0
    for depth in range(1200, 0, -1):  # the deepest options the recording reader takes, here
        try:
            Build.from_events(str(_nested(recording, depth, tmp_path / "probe.jsonl")))
        except RecordingError:
            continue
        deepest = depth
        break
    assert deepest >= 8, "options nested as deep as a build's profiles were refused"
    for depth in range(deepest, max(deepest - 12, 0), -1):
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
    with pytest.raises(RecordingError, match="field 'options' of a build_start event nests"):
        Build.from_events(str(_nested(recording, deepest + 1, tmp_path / "deeper.jsonl")))  # one line, naming it
