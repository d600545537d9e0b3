"""Sixteenth adversarial re-run (issue 35): a recording is untrusted and "every event is checked field by field",
but ``build_end``'s ``engine_bytes`` is taken as any integer. One of 401 digits (valid JSON, which Python parses)
reaches ``fmt_bytes`` (``float(size)``): ``view --report`` ends in a Python traceback with no report written, and
the terminal view drops its summary line with a warning naming an OverflowError. A real build's recording."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_recordings import record_build

from trt_widget.models import deep_residual


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    """The events of a real build's ``--json`` recording."""
    path = record_build(tmp_path_factory.mktemp("rec"), deep_residual(2), "rec.jsonl", timeout=300)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _cli(events: list[dict[str, object]], folder: Path, command: str, *args: str) -> tuple[int, str]:
    """``trt-widget COMMAND RECORDING ARGS...`` with ``events`` as the recording: its exit code, what it printed."""
    rec = folder / "sent.jsonl"
    rec.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", command, str(rec), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout + done.stderr


def test_a_huge_recorded_engine_size_is_refused_or_shown_without_a_traceback(
    recording: list[dict[str, object]], tmp_path: Path
) -> None:
    events = [{**e, "engine_bytes": 10**400} if e.get("event") == "build_end" else e for e in recording]
    assert any(e.get("event") == "build_end" for e in events)
    code, said = _cli(events, tmp_path, "view", "--plain", "--report", str(tmp_path / "r.html"))
    assert "Traceback" not in said and "OverflowError" not in said, said[-1500:]
    # refused in one line naming the field, nothing written
    assert code == 1 and "field 'engine_bytes' of a build_end event must be from 0 to 2**63" in said, said[-1500:]
    assert not (tmp_path / "r.html").exists()


def test_a_huge_recorded_memory_figure_is_refused_or_inspected_without_a_traceback(
    recording: list[dict[str, object]], tmp_path: Path
) -> None:
    events = []
    for event in recording:
        report = event.get("report")
        if event.get("event") == "engine_report" and isinstance(report, dict):
            memory = report.get("memory")
            assert isinstance(memory, dict)
            event = {**event, "report": {**report, "memory": {**memory, "weights": 10**400}}}
        events.append(event)
    code, said = _cli(events, tmp_path, "inspect")
    assert "Traceback" not in said and "OverflowError" not in said, said[-1500:]
    assert code == 0 and "  memory: activations " in said, said[-1500:]  # shown, the huge weights as absent


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [("build_end", "engine_bytes", -7), ("phase_start", "id", 10**400), ("step", "step", 10**400)],
    ids=["negative-engine-size", "huge-phase-id", "huge-step"],
)
def test_every_count_of_a_recording_is_bounded_by_one_rule(
    recording: list[dict[str, object]], kind: str, field: str, value: int
) -> None:
    """Sizes, ids and steps alike: from 0 to 2**63, else one line naming the field (a negative engine size was shown
    as "its engine was -7 B"); its digits are not repeated."""
    from trt_widget import Build
    from trt_widget.runners import RecordingError

    events = [{**e, field: value} if e.get("event") == kind else e for e in recording]
    assert any(e.get("event") == kind for e in recording)
    with pytest.raises(RecordingError, match=f"field '{field}' of a {kind} event must be from 0 to 2\\*\\*63") as got:
        Build.from_events(events)
    assert len(str(got.value)) < 200 and "\n" not in str(got.value)
