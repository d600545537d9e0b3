"""Chrome trace-event JSON of builds: validated against the trace-event format for a real RTX build and for a
synthetic callback driver that feeds a PhaseModel from four threads with overlapping, same-named phases."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from trt_widget import Build, BuildWidget, PhaseModel, models
from trt_widget.report import trace

REQUIRED = ("ph", "ts", "pid", "tid", "name")


def validate(doc: dict[str, Any]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Check the trace-event format; returns the matched (begin, end, enclosing phase id) slices per async track.

    Every event has ph/ts/pid/tid/name; async events have cat and id, and per (pid, cat, id) they nest properly:
    each "e" closes the innermost open "b" of the same name, never before it began, and nothing stays open.
    """
    assert isinstance(doc["traceEvents"], list) and doc["traceEvents"]
    open_: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    slices: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for event in doc["traceEvents"]:
        missing = [k for k in REQUIRED if k not in event]
        assert not missing, (missing, event)
        assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0, event
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int), event
        assert isinstance(event["name"], str), event
        ph = event["ph"]
        assert ph in ("M", "b", "e", "C", "i"), event
        if ph == "M":
            assert event["name"] in ("process_name", "thread_name") and "name" in event["args"]
        elif ph in ("b", "e"):
            assert event.get("cat") and isinstance(event.get("id"), str), event
            key = (event["pid"], event["cat"], event["id"])
            if ph == "b":
                enclosing = open_[key][-1]["args"].get("phase_id") if open_[key] else None
                open_[key].append({**event, "enclosing": enclosing})
            else:
                assert open_[key], f"'e' without an open 'b' on track {key}: {event}"
                begin = open_[key].pop()
                assert begin["name"] == event["name"], (begin, event)
                assert begin["ts"] <= event["ts"], (begin, event)
                slices[key].append({"begin": begin, "end": event, "enclosing": begin["enclosing"]})
        elif ph == "C":
            assert event["args"] and all(isinstance(v, (int, float)) for v in event["args"].values()), event
        elif ph == "i":
            assert event.get("s") in ("g", "p", "t"), event
    assert not any(open_.values()), {k: [e["name"] for e in v] for k, v in open_.items() if v}
    return slices


def phase_slices(slices: dict[tuple[Any, ...], list[dict[str, Any]]]) -> dict[int, dict[str, Any]]:
    """phase id -> its slice (each phase instance exactly once)."""
    out: dict[int, dict[str, Any]] = {}
    for key, items in slices.items():
        for item in items:
            phase_id = item["begin"]["args"].get("phase_id")
            if phase_id is None:
                continue  # the whole-build slice
            assert phase_id not in out, f"phase {phase_id} appears twice"
            out[phase_id] = {**item, "track": key}
    return out


def test_a_real_build_is_a_valid_trace(tmp_path: Path) -> None:
    build = Build(models.deep_residual(4), history=False)
    trace.record_steps(build)
    build.start()
    assert build.wait(180) == "succeeded"
    text = build.to_trace(tmp_path / "build.json")
    assert (tmp_path / "build.json").read_text(encoding="utf-8") == text
    doc = json.loads(text)
    slices = validate(doc)
    rows = {r["id"]: r for r in build.timings()}
    by_phase = phase_slices(slices)
    assert set(by_phase) == set(rows)
    for phase_id, item in by_phase.items():
        row = rows[phase_id]
        assert item["begin"]["name"] == row["name"] and row["end_s"] is not None
        assert abs(item["begin"]["ts"] - row["start_s"] * 1e6) < 1 and abs(item["end"]["ts"] - row["end_s"] * 1e6) < 1
        if item["enclosing"] is not None:  # nested on a track: inside its own parent
            assert item["enclosing"] == row["parent"]
    assert all(
        item["enclosing"] == row["parent"] for item, row in ((by_phase[i], rows[i]) for i in rows)
    )  # one thread: the whole tree nests on one track
    whole = [s for items in slices.values() for s in items if s["begin"]["args"].get("phase_id") is None]
    assert len(whole) == 1 and whole[0]["begin"]["name"] == "build: succeeded"
    assert abs(whole[0]["end"]["ts"] - build.elapsed_s * 1e6) < 1
    counters: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in doc["traceEvents"]:
        if event["ph"] == "C":
            counters[event["id"]].append(event)
    stepped = {i for i, r in rows.items() if r["num_steps"] > 1}
    assert {int(k) for k in counters} == stepped
    for key, events in counters.items():
        values = [e["args"]["completed"] for e in events]
        assert values == sorted(values) and values[0] == 0 and values[-1] == rows[int(key)]["step"]
        assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    logs = [e for e in doc["traceEvents"] if e["ph"] == "i" and e["cat"] == "log"]
    assert len(logs) == len(build.logs) > 0
    assert (
        doc["otherData"]["status"] == "succeeded" and doc["otherData"]["engine_bytes"] == len(build.engine or b"") > 0
    )


def test_widget_and_build_give_the_same_trace_without_a_step_recorder() -> None:
    widget = BuildWidget(models.deep_residual(4), history=False, isolation="thread").start()
    assert widget.wait(180) == "succeeded"
    doc = json.loads(widget.to_trace())
    validate(doc)
    assert doc == json.loads(widget.build.to_trace())
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    assert counters and all(len([c for c in counters if c["id"] == e["id"]]) == 2 for e in counters)  # start, end


def synthetic_callback_driver(model: PhaseModel, threads: int = 4, rounds: int = 6) -> None:
    """Feed ``model`` as TensorRT's builder threads would: a root phase on this thread, then ``threads`` threads
    that each start a same-named phase under it at the same moment and run nested, stepped phases that overlap
    the other threads' ones in time."""
    main = threading.get_ident()
    model.phase_start("Building engine", None, 1, thread=main)
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            me = threading.get_ident()
            rng = random.Random(seed)
            barrier.wait()
            model.phase_start("Computing profile costs", "Building engine", rounds, thread=me, parent_thread=main)
            for step in range(rounds):
                model.phase_start("Timing tactics", "Computing profile costs", 3, thread=me)
                for k in range(3):
                    model.phase_start("Timing graph nodes", "Timing tactics", 1, thread=me)
                    time.sleep(rng.uniform(0.0005, 0.002))
                    model.step_complete("Timing graph nodes", 0, thread=me)
                    model.phase_finish("Timing graph nodes", thread=me)
                    model.step_complete("Timing tactics", k, thread=me)
                model.phase_finish("Timing tactics", thread=me)
                model.step_complete("Computing profile costs", step, thread=me)
            model.phase_finish("Computing profile costs", thread=me)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(30)
    model.step_complete("Building engine", 0, thread=main)
    model.phase_finish("Building engine", thread=main)
    assert not errors, errors


def test_phases_overlapping_on_four_threads_nest_correctly() -> None:
    model = PhaseModel()
    recorder = trace.record_steps(model)
    synthetic_callback_driver(model)
    phases = {p.id: p for p in model.phases()}
    assert len(phases) == 1 + 4 * (1 + 6 * (1 + 3)) and model.ignored == 0
    doc = json.loads(trace.to_trace(model))
    by_phase = phase_slices(validate(doc))
    assert set(by_phase) == set(phases)
    for phase_id, item in by_phase.items():
        phase = phases[phase_id]
        assert item["begin"]["tid"] == item["end"]["tid"]
        if item["enclosing"] is not None:
            assert item["enclosing"] == phase.parent  # nesting on a track is always the true parent
        parent = phases.get(phase.parent) if phase.parent is not None else None
        if parent is not None:  # a child lies within its parent in time, whichever track it is on
            assert phase.end_s is not None and parent.end_s is not None  # the driver finished every phase
            assert parent.start_s <= phase.start_s and phase.end_s <= parent.end_s
    # the four concurrent "Computing profile costs" instances overlap, so they cannot share one track
    costs = [i for i, p in phases.items() if p.name == "Computing profile costs"]
    assert len({by_phase[i]["track"] for i in costs}) == 4
    # each thread's own phases are attributed to that thread
    tids = {by_phase[i]["begin"]["tid"] for i in costs}
    assert len(tids) == 4 and by_phase[0]["begin"]["tid"] not in tids
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sum(n.startswith("TensorRT thread") for n in names) == 5
    assert recorder.samples and all(t >= 0 for t, _, _ in recorder.samples)
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    assert {int(e["id"]) for e in counters} == {i for i, p in phases.items() if p.num_steps > 1}


def test_a_child_that_outlives_its_parent_still_gives_a_valid_trace() -> None:
    now = [0.0]
    model = PhaseModel(clock=lambda: now[0])
    model.phase_start("A", None, 1, thread=1)
    now[0] = 1.0
    model.phase_start("B", "A", 1, thread=2)
    now[0] = 2.0
    model.phase_finish("A", thread=1)
    now[0] = 3.0
    model.phase_finish("B", thread=2)  # ends after its parent: it must not nest inside A on A's track
    model.phase_start("C", None, 1, thread=1)  # still running: ends at the end of the trace
    now[0] = 4.0
    doc = json.loads(trace.to_trace(model))
    by_phase = phase_slices(validate(doc))
    assert by_phase[1]["track"] != by_phase[0]["track"]
    assert by_phase[2]["end"]["args"]["status"] == "running"


def test_hostile_names_stay_data_in_the_trace() -> None:
    model = PhaseModel()
    name = '"}]},{"ph":"X"</script>\n\u2028'
    model.phase_start(name, None, 1)
    model.phase_finish(name)
    doc = json.loads(trace.to_trace(model))
    validate(doc)
    assert [e["name"] for e in doc["traceEvents"] if e["ph"] == "b"] == [name]
