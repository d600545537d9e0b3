"""Replaying recorded builds: a real recording, a GPU-shaped synthetic one, bad and truncated recordings."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cli_recordings import view_with_report
from fixture_types import RunAsync, WaitUntil

from trt_widget import Build, BuildCancelled, BuildError, BuildWidget, models
from trt_widget._events import schema
from trt_widget._phases import PhaseRow
from trt_widget.runners import RecordingError, gpu_shaped_events


def _shape(rows: Sequence[PhaseRow]) -> list[tuple[object, ...]]:
    names: dict[int | None, str] = {r["id"]: r["name"] for r in rows}
    return [(r["name"], names.get(r["parent"]), r["depth"], r["num_steps"], r["step"], r["status"]) for r in rows]


def test_a_real_recording_replays_to_the_same_tree_and_times(tmp_path: Path, run_async: RunAsync) -> None:
    recording = tmp_path / "build.jsonl"
    original = Build(models.deep_residual(20), history=False, events=str(recording)).start()
    assert original.wait(120) == "succeeded"
    assert original.events is not None and original.events.join(30)  # build_end written and the file closed
    replay = Build.from_events(recording).start()
    assert replay.wait(60) == "succeeded", replay.status_detail
    assert _shape(replay.timings()) == _shape(original.timings())
    recorded_starts = {
        e["id"]: e["t"] for e in map(json.loads, recording.read_text().splitlines()) if e["event"] == "phase_start"
    }
    assert {r["id"]: r["start_s"] for r in replay.timings()} == pytest.approx(recorded_starts, abs=1e-6)
    assert "replayed recording" in replay.status_detail and replay.engine == b""
    assert run_async(_awaited(replay)) == b""  # a Future of no bytes: the recording holds none
    assert replay.engine_size == original.engine_size == len(original.engine or b"")
    with pytest.raises(Exception, match="replayed recording holds no engine"):
        replay.save(str(tmp_path / "x.engine"))


def test_a_failed_and_a_cancelled_recording_replay_their_rows_as_they_ended(
    tmp_path: Path, run_async: RunAsync
) -> None:
    """The phase a build failed or was stopped in replays as failed or cancelled, not as finished early."""
    not_onnx = tmp_path / "not.onnx"
    not_onnx.write_bytes(b"\x08not an onnx model")
    failed = Build(str(not_onnx), history=False, isolation="thread", events=str(tmp_path / "failed.jsonl")).start()
    stopped = Build(models.deep_residual(20), history=False, isolation="thread", events=str(tmp_path / "stop.jsonl"))

    def stop_when_deep(event: str, phase: Any) -> None:
        if event == "phase_start" and phase.depth >= 2:
            stopped.stop()

    stopped.model.subscribe(stop_when_deep)
    stopped.start()
    for original, name, ended in ((failed, "failed.jsonl", "failed"), (stopped, "stop.jsonl", "cancelled")):
        assert original.wait(120) == ended and original.events is not None and original.events.join(30)
        assert ended in {r["status"] for r in original.timings()}
        replay = Build.from_events(tmp_path / name).start()
        assert replay.wait(60) == ended
        assert _shape(replay.timings()) == _shape(original.timings())
        with pytest.raises(BuildCancelled if ended == "cancelled" else BuildError):  # await: what result() raises
            run_async(_awaited(replay))


async def _awaited(build: Build) -> bytes:
    return await build


@pytest.mark.parametrize("threads", [1, 4])
def test_a_gpu_shaped_recording_is_schema_valid_and_replays_exactly(threads: int) -> None:
    events = list(gpu_shaped_events(measurements=1100, threads=threads, seed=threads))
    validator = jsonschema.Draft202012Validator(schema())
    for event in events:
        validator.validate(event)
    widget = BuildWidget.from_events(events).start()
    assert widget.wait(60) == "succeeded"
    rows = widget.timings()
    measuring = [r for r in rows if r["name"] == "Measuring tactic time"]
    assert len(measuring) == 1100 and max(r["depth"] for r in rows) == 7  # depth 8: levels 0..7
    by_id: dict[int | None, PhaseRow] = {r["id"]: r for r in rows}
    recorded_parent = {e["id"]: e["parent"] for e in events if e["event"] == "phase_start"}
    assert all(r["parent"] == recorded_parent[r["id"]] for r in rows)  # interleaved or not, parents exact
    assert all(r["status"] == "done" for r in rows)
    assert all(by_id[r["parent"]]["name"] == "Evaluating tactic times" for r in measuring)
    assert len(json.loads(widget.phases_json)) == len(rows)


def test_bad_lines_are_named() -> None:
    good = json.dumps({"event": "build_start", "model": "m", "backend": "rtx", "version": "1", "options": {}, "t": 0.0})
    with pytest.raises(RecordingError, match="line 2: not JSON"):
        Build.from_events([good, "{not json"])
    with pytest.raises(RecordingError, match="line 1: not a trt_widget build event"):
        Build.from_events(['{"hello": 1}'])
    with pytest.raises(RecordingError, match="line 2: field 'id' of a phase_start event must be an integer"):
        Build.from_events([good, '{"event": "phase_start", "name": "x", "t": 0.1}'])


def test_a_truncated_recording_shows_what_it_has_and_says_it_ended_early() -> None:
    events = list(gpu_shaped_events(measurements=50))[:60]
    build = Build.from_events(events).start()
    assert build.wait(60) == "failed"
    assert "ends early, after line 60" in str(build.error)
    rows = build.timings()
    assert rows and all(r["end_s"] is not None for r in rows)  # closed, not left running


def test_a_paced_replay_stops_on_stop(wait_until: WaitUntil) -> None:
    events = list(gpu_shaped_events(measurements=200, seconds=60))
    build = Build.from_events(events, speed=1.0).start()
    wait_until(lambda: len(build.timings()) > 3, what="a few replayed phases")
    assert build.running()
    build.stop()
    assert build.wait(10) == "cancelled"
    assert len(build.timings()) < 200


def test_the_cli_views_a_recording_and_writes_its_report(tmp_path: Path) -> None:
    recording = tmp_path / "gpu.jsonl"
    recording.write_text("".join(json.dumps(e) + "\n" for e in gpu_shaped_events(measurements=30)))
    report = tmp_path / "gpu.html"
    printed = view_with_report(recording, report)
    assert "Measuring tactic time" in printed and "Replayed a build that succeeded" in printed
    assert "its engine was " in printed and "(a recording holds no engine)" in printed
    assert "976.6 KiB" in printed  # the recorded engine's 1,000,000 B
    assert "Measuring tactic time" in report.read_text()
    refused = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(recording), "--trace", str(recording)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2 and "is the recording" in refused.stderr
    assert recording.read_text().count("\n") > 30  # untouched
    (tmp_path / "bad.jsonl").write_text("{bad\n")
    bad = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(tmp_path / "bad.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1 and "line 1: not JSON" in bad.stderr


# -- issue 35, defect 22: a pace or a recorded clock no wait can hold ---------------------------------------------


def _jumping(gap: float) -> list[dict[str, Any]]:
    """A GPU-shaped recording whose clock jumps by ``gap`` seconds after its first phase starts."""
    events = list(gpu_shaped_events(measurements=3, threads=1, seed=2))
    first = next(i for i, e in enumerate(events) if e["event"] == "phase_start")
    for event in events[first + 1 :]:
        t = event["t"]
        assert isinstance(t, float)
        event["t"] = t + gap
    return events


@pytest.mark.parametrize("speed", [1e-12, 0.0, -1.0, float("nan"), float("inf"), 1e300, True])
def test_a_speed_no_replay_can_keep_is_refused_before_reading(speed: Any) -> None:
    with pytest.raises(ValueError, match=r"speed must be a number from 0\.001"):
        Build.from_events(_jumping(0.0), speed=speed)


def test_a_recorded_clock_that_jumps_years_pauses_at_most_max_wait_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """5e10 recorded seconds at speed 1000: the pause is capped (here at 0.2 s), the replay reaches the end."""
    from trt_widget.runners import _replay

    monkeypatch.setattr(_replay, "MAX_WAIT_S", 0.2)
    build = Build.from_events(_jumping(5e10), speed=1000.0).start()
    assert build.wait(60) == "succeeded", build.status_detail
    assert "replayed recording" in build.status_detail


def test_a_paced_replay_across_a_huge_jump_waits_and_stops(wait_until: WaitUntil) -> None:
    """Without the cap the wait raised OverflowError and the replay ended "failed"; now it waits (MAX_WAIT_S)."""
    build = Build.from_events(_jumping(5e10), speed=1.0).start()
    wait_until(lambda: build.timings(), what="the first replayed phase")
    assert build.running()
    build.stop()
    assert build.wait(30) == "cancelled", build.error


def test_the_cli_refuses_a_speed_out_of_range_in_one_line(tmp_path: Path) -> None:
    recording = tmp_path / "r.jsonl"
    recording.write_text("".join(json.dumps(e) + "\n" for e in _jumping(0.0)))
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(recording), "--speed", "1e-12"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        done.returncode == 2
        and done.stderr == "trt-widget: error: --speed must be a number from 0.001 to 1e+06, got 1e-12\n"
    )
