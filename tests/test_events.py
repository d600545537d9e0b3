"""The JSON event stream: real RTX builds to a file and a callable, checked against the shipped JSON Schema and
``Build.timings()``; step throttling checked with a synthetic driver on a fake clock."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from trt_widget._build import Build
from trt_widget._engine import CaptureLogger
from trt_widget._events import attach_events, schema
from trt_widget._options import BuildOptions
from trt_widget._phases import PhaseModel
from trt_widget.models import deep_residual


def _validator() -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema())
    return jsonschema.Draft202012Validator(schema())


def _check_stream(events: list[dict[str, Any]], build: Build) -> None:
    """Order, ids and parents of a complete stream against the build's own record."""
    validator = _validator()
    for event in events:
        validator.validate(event)
    assert events[0]["event"] == "build_start"
    assert events[-1]["event"] == "build_end"
    assert [e["event"] for e in events].count("build_start") == 1
    assert [e["event"] for e in events].count("build_end") == 1
    timings = {row["id"]: row for row in build.timings()}
    starts = {e["id"]: e for e in events if e["event"] == "phase_start"}
    finishes = {e["id"]: e for e in events if e["event"] == "phase_finish"}
    assert set(starts) == set(finishes) == set(timings)
    position = {id(e): i for i, e in enumerate(events)}
    for pid, row in timings.items():
        start, finish = starts[pid], finishes[pid]
        assert (start["name"], start["parent"], start["depth"], start["num_steps"]) == (
            row["name"],
            row["parent"],
            row["depth"],
            row["num_steps"],
        )
        assert start["t"] == row["start_s"] and finish["t"] == row["end_s"]
        assert finish["duration_s"] == pytest.approx(row["duration_s"])
        assert (finish["status"], finish["step"]) == (row["status"], row["step"])
        if row["parent"] is not None:
            assert position[id(starts[row["parent"]])] < position[id(start)]
        steps = [e for e in events if e["event"] == "step" and e["id"] == pid]
        assert all(position[id(start)] < position[id(e)] < position[id(finish)] for e in steps)
        assert [e["step"] for e in steps] == sorted({e["step"] for e in steps})  # strictly increasing
        if row["step"] > 0:
            assert steps and steps[-1]["step"] == row["step"]  # the last step always precedes the finish
    end = events[-1]
    assert end["status"] == build.status
    assert end["elapsed_s"] == pytest.approx(build.elapsed_s)


def test_real_build_streams_to_a_file_and_a_callable(tmp_path: Path, wait_until: Any) -> None:
    path = tmp_path / "events.jsonl"
    build = Build(deep_residual(150), events=path, history=False, output=str(tmp_path / "m.engine"))
    received: list[dict[str, Any]] = []
    threads: set[str] = set()

    def sink(event: dict[str, Any]) -> None:
        threads.add(threading.current_thread().name)
        received.append(event)

    stream = attach_events(build, sink)
    build.start()
    assert build.wait(180) == "succeeded"
    assert stream.join(30)
    lines = wait_until(
        lambda: (text := path.read_text()).endswith("\n") and '"build_end"' in text and text,
        what="build_end in the events file",
    )
    from_file = [json.loads(line) for line in lines.splitlines()]
    _check_stream(from_file, build)
    _check_stream(received, build)
    assert [(e["event"], e.get("id")) for e in received] == [(e["event"], e.get("id")) for e in from_file]
    assert threads == {"trt_widget-events"}  # the callable never runs on the builder thread
    end = from_file[-1]
    assert end["engine_bytes"] == len(build.engine or b"") > 0
    assert end["output"] == str(tmp_path / "m.engine") and end["error"] is None
    start = from_file[0]
    assert start["backend"] in ("rtx", "tensorrt") and start["options"]["output"] == str(tmp_path / "m.engine")
    steps_seen = sum(1 for e in from_file if e["event"] == "step")
    steps_total = sum(row["step"] for row in build.timings())
    assert steps_seen < steps_total  # "Cloning network graph" alone has ~450 steps


def test_cancelled_build_ends_with_every_phase_closed(long_model_bytes: bytes, wait_until: Any) -> None:
    received: list[dict[str, Any]] = []
    build = Build(long_model_bytes, events=received.append, history=False)
    build.start()
    wait_until(
        lambda: any(e["event"] == "phase_start" and e["depth"] >= 2 for e in received), what="a nested phase to start"
    )
    assert build.stop()
    assert build.wait(180) == "cancelled"
    wait_until(lambda: received and received[-1]["event"] == "build_end", what="build_end")
    _check_stream(received, build)
    end = received[-1]
    assert end["engine_bytes"] is None and end["output"] is None
    assert "cancelled" in end["error"] and end["detail"] == "stopped by user"
    assert any(e["event"] == "phase_finish" and e["status"] == "cancelled" for e in received)


def test_failed_build_sends_error_logs_and_the_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08this is not an onnx model")
    out = io.StringIO()
    build = Build(bad, history=False)
    stream = attach_events(build, out)
    build.start()
    assert build.wait(60) == "failed"
    assert stream.join(30)
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    _check_stream(events, build)
    logs = [e for e in events if e["event"] == "log"]
    assert logs and all(e["severity"] in ("ERROR", "INTERNAL_ERROR", "WARNING") for e in logs)
    end = events[-1]
    assert end["status"] == "failed" and "could not parse" in end["error"] and end["detail"]


class SyntheticBuild:
    """A synthetic driver for the event stream: a PhaseModel on a fake clock, fed directly (no TensorRT)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.model = PhaseModel(lambda: self.now)
        self.logger = CaptureLogger(clock=lambda: self.now)
        self.options = BuildOptions()
        self.source = type("Source", (), {"label": "synthetic"})()
        self.status, self.status_detail, self.engine, self.error = "idle", "", None, None
        self._on_start: list[Any] = []
        self._on_done: list[Any] = []

    @property
    def elapsed_s(self) -> float:
        return self.model.now()

    def on_start(self, callback: Any) -> None:
        self._on_start.append(callback)

    def on_done(self, callback: Any) -> None:
        self._on_done.append(callback)

    def start(self) -> None:
        self.status = "running"
        for callback in self._on_start:
            callback(self)

    def finish(self) -> None:
        self.status, self.engine = "succeeded", b"engine"
        for callback in self._on_done:
            callback(self)


def test_step_events_are_throttled_per_phase_and_keep_the_last_step() -> None:
    build = SyntheticBuild()
    received: list[dict[str, Any]] = []
    stream = attach_events(build, received.append)  # type: ignore[arg-type]
    build.start()
    build.model.phase_start("outer", None, 3)
    for index in range(3):
        build.model.phase_start("fast", "outer", 5000)
        for step in range(5000):  # 1 ms per step: 5 s per phase
            build.now += 0.001
            build.model.step_complete("fast", step)
        build.model.phase_finish("fast")
        build.model.step_complete("outer", index)
    build.model.phase_start("slow", "outer", 4)
    for step in range(4):  # slower than the interval: every step is sent
        build.now += 0.25
        build.model.step_complete("slow", step)
    build.model.phase_finish("slow")
    build.model.phase_finish("outer")
    build.finish()
    assert stream.join(10)
    validator = _validator()
    for event in received:
        validator.validate(event)
    by_phase: dict[int, list[dict[str, Any]]] = {}
    for event in received:
        if event["event"] == "step":
            by_phase.setdefault(event["id"], []).append(event)
    fast_ids = [e["id"] for e in received if e["event"] == "phase_start" and e["name"] == "fast"]
    assert len(fast_ids) == 3
    for pid in fast_ids:
        steps = by_phase[pid]
        assert steps[-1]["step"] == 5000
        assert 2 <= len(steps) <= 5.0 / stream.step_interval_s + 2  # bounded by duration, not by 5000 steps
        assert [e["step"] for e in steps] == sorted({e["step"] for e in steps})
    slow_id = next(e["id"] for e in received if e["event"] == "phase_start" and e["name"] == "slow")
    assert [e["step"] for e in by_phase[slow_id]] == [1, 2, 3, 4]
    assert received[-1]["event"] == "build_end" and received[-1]["engine_bytes"] == len(b"engine")


def test_bad_sinks_are_rejected_at_once(tmp_path: Path, small_model: Any) -> None:
    with pytest.raises(TypeError, match="events="):
        Build(small_model, events=42, history=False)
    with pytest.raises(IsADirectoryError, match="directory"):
        Build(small_model, events=tmp_path, history=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Build(small_model, events=tmp_path / "missing" / "e.jsonl", history=False)


def test_a_failing_callable_never_breaks_the_build(small_model: Any) -> None:
    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("sink is broken")

    build = Build(small_model, events=broken, history=False)
    with pytest.warns(RuntimeWarning, match="events sink .*broken.* failed writing an event: RuntimeError"):
        build.start()
        assert build.wait(120) == "succeeded"
        assert build.events.join(30)
    assert [p["severity"] for p in build.problems if "events sink" in p["message"]] == ["WARNING"]
