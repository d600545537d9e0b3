"""Attacks through recordings (Build.from_events, trt-widget view): recordings are untrusted input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from attacks import SMALL

from trt_widget import Build

# -- recordings are untrusted input ---------------------------------------------------------------------------

_START = {"event": "build_start", "model": "m", "backend": "rtx", "version": "1", "options": {}, "t": 0.0}
_PHASE = {"event": "phase_start", "id": 0, "name": "p", "parent": None, "depth": 0, "num_steps": 2, "t": 0.1}


@pytest.mark.parametrize(
    ("event", "said"),
    [
        (
            {k: v for k, v in _PHASE.items() if k != "name"},
            "line 2: field 'name' of a phase_start event must be a string",
        ),
        ({**_PHASE, "name": {"a": 1}}, "line 2: field 'name' of a phase_start event must be a string, got dict"),
        ({**_PHASE, "num_steps": "3"}, "line 2: field 'num_steps' of a phase_start event must be an integer"),
        ({"event": "step", "id": 0, "name": "p", "step": "x", "t": 0.2}, "line 2: field 'step' of a step event"),
        ({"event": "log", "severity": [], "message": "m", "t": 0.2}, "line 2: field 'severity' of a log event"),
        ({"event": "build_end", "status": "won", "t": 1.0}, "line 2: build_end status must be one of"),
        ({**_PHASE, "t": float("nan")}, "line 2: field 't' must be a finite time"),
    ],
)
def test_a_bad_field_names_its_line_and_field(event: dict[str, Any], said: str) -> None:
    from trt_widget.runners import RecordingError

    with pytest.raises(RecordingError, match=said.replace("(", r"\(")):
        Build.from_events([json.dumps(_START), json.dumps(event)])


def test_view_says_one_line_for_any_file_that_is_not_a_recording(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    missing.write_text(json.dumps(_START) + "\n" + json.dumps({"event": "step", "id": 0, "t": 0.2}) + "\n")
    utf = tmp_path / "latin1.jsonl"
    utf.write_bytes(json.dumps(_START).encode() + b"\n" + b'{"event": "log", "message": "\xe9", "t": 1}\n')
    onnx_file = tmp_path / "model.onnx"
    onnx_file.write_bytes(SMALL)
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    digits = tmp_path / "digits.jsonl"
    digits.write_text(json.dumps(_START) + "\n" + '{"event": "step", "id": ' + "9" * 5000 + ', "t": 1}\n')
    for path, said in [
        (digits, "line 2: not a usable JSON value"),
        (missing, "line 2: field 'name' of a step event must be a string"),
        (utf, "line 2: not UTF-8 text"),
        (onnx_file, "is not a recording"),
        (deep, "line 1: JSON nested too deeply"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "trt_widget", "view", str(path), "--plain"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, done
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("trt-widget: error: ") and said in done.stderr, done.stderr


def test_a_huge_line_or_too_many_events_are_refused_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracemalloc

    from trt_widget.runners import RecordingError, _replay

    huge = tmp_path / "huge.jsonl"
    with open(huge, "wb") as handle:
        handle.write(json.dumps(_START).encode() + b"\n" + b'{"event": "log", "message": "')
        for _ in range(64):
            handle.write(b"x" * (1 << 20))  # 64 MB, one line
    tracemalloc.start()
    try:
        with pytest.raises(RecordingError, match="line 2: longer than 1,048,576 bytes"):
            Build.from_events(huge)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
    monkeypatch.setattr(_replay, "MAX_EVENTS", 1000)
    many = [json.dumps(_START)] + [json.dumps({"event": "log", "message": "m", "t": 0.1})] * 1000
    with pytest.raises(RecordingError, match="more than 1,000 events"):
        Build.from_events(many)
    nested = [json.dumps(_START)] + [
        json.dumps({**_PHASE, "id": i, "parent": i - 1 if i else None, "t": 0.1}) for i in range(300)
    ]
    with pytest.raises(RecordingError, match="line 259: phases nest more than 256 deep"):
        Build.from_events(nested)


def test_phases_nested_by_name_rather_than_by_id_are_bounded_too(tmp_path: Path) -> None:
    """Each phase names a finished parent id, so the loader sees depth 1; the phase model resolves the parent by
    name (the newest running 'A') and would nest 3,000 deep, and every renderer recurse as deep."""
    events = [_START, {**_PHASE, "id": 0, "name": "A", "parent": None, "t": 0.0}]
    events.append({"event": "phase_finish", "id": 0, "name": "A", "t": 0.0})
    events += [{**_PHASE, "id": i, "name": "A", "parent": 0, "t": i / 1000} for i in range(1, 3000)]
    events.append({"event": "build_end", "status": "succeeded", "t": 3.0})
    path = tmp_path / "by-name.jsonl"
    path.write_text("\n".join(map(json.dumps, events)) + "\n")
    build = Build.from_events(path).start()
    assert build.wait(60) == "failed" and "line 261: phases nest more than 256 deep" in str(build.error)
    build.to_html(tmp_path / "r.html")  # what was replayed until then renders
    build.to_trace(tmp_path / "t.json")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(path), "--plain", "--trace", str(tmp_path / "t2.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("phases nest more than 256 deep ('A' under 'A')")
