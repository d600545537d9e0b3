"""PhaseModel under random synthetic callback sequences (checked against a small reference model) and threads."""

from __future__ import annotations

import itertools
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trt_widget._phases import CANCELLED, DONE, FINISHED_EARLY, PHASE_STATUSES, RUNNING, PhaseModel, PhaseRow

NAMES = ["Building engine", "Timing tactics", "Computing reformatting costs", "refit"]
PARENTS = [None, "never started", *NAMES]
ALLOWED = {  # status -> statuses it may move to
    RUNNING: {RUNNING, DONE, FINISHED_EARLY, CANCELLED},
    FINISHED_EARLY: {FINISHED_EARLY, DONE},
    DONE: {DONE},
    CANCELLED: {CANCELLED},
}


class TickClock:
    """Every reading is 0.5 s later than the one before: strictly increasing, exact in binary floats."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.5
        return self.t


@dataclass
class Ref:
    """The reference: the phase model's documented rules, written as plainly as possible."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    active: dict[str, list[int]] = field(default_factory=dict)  # name -> ids, oldest first
    newest: dict[str, int] = field(default_factory=dict)
    ignored: int = 0
    cancelling: bool = False
    refused: bool = False  # a step came while cancelling: the builder was told to stop, open phases are cut short

    def start(self, name: str, parent_name: str | None, num_steps: int) -> None:
        stack = self.active.get(parent_name, []) if parent_name is not None else []
        parent = stack[-1] if stack else None
        pid = len(self.rows)
        self.rows.append(
            {
                "id": pid,
                "name": name,
                "parent": parent,
                "num_steps": num_steps,
                "step": 0,
                "depth": self.rows[parent]["depth"] + 1 if parent is not None else 0,
                "status": RUNNING,
            }
        )
        self.active.setdefault(name, []).append(pid)
        self.newest[name] = pid

    def step(self, name: str, step: int) -> None:
        stack = self.active.get(name)
        pid = stack[-1] if stack else self.newest.get(name)
        if pid is None:
            self.ignored += 1
            return
        self.refused = self.refused or self.cancelling
        row = self.rows[pid]
        row["step"] = max(row["step"], step + 1)
        if row["status"] == FINISHED_EARLY and row["step"] >= row["num_steps"]:
            row["status"] = DONE

    def finish(self, name: str) -> None:
        stack = self.active.get(name)
        if not stack:
            self.ignored += 1
            return
        row = self.rows[stack.pop()]
        if row["step"] >= row["num_steps"] and (row["num_steps"] > 0 or not self.refused):
            row["status"] = DONE
        else:
            row["status"] = CANCELLED if self.cancelling else FINISHED_EARLY

    def close_all(self) -> None:
        for row in self.rows:
            if row["status"] == RUNNING:
                row["status"] = CANCELLED
        self.active.clear()


ops = st.one_of(
    st.tuples(st.just("start"), st.sampled_from(NAMES), st.sampled_from(PARENTS), st.integers(0, 4)),
    st.tuples(st.just("step"), st.sampled_from([*NAMES, "never started"]), st.integers(0, 5)),
    st.tuples(st.just("finish"), st.sampled_from([*NAMES, "never started"])),
    st.tuples(st.just("close_all")),
    st.tuples(st.just("cancelling")),
    st.tuples(st.just("rows")),
)

KEYS = ("id", "name", "parent", "depth", "num_steps", "step", "status")


def end(row: PhaseRow) -> float:
    """The end of a closed phase's row."""
    assert row["end_s"] is not None, row
    return row["end_s"]


def parent(rows: list[PhaseRow], row: PhaseRow) -> PhaseRow:
    """The row of a child phase's parent."""
    assert row["parent"] is not None, row
    return rows[row["parent"]]


def check_structure(rows: list[PhaseRow]) -> None:
    """Invariants any snapshot must satisfy."""
    for i, row in enumerate(rows):
        assert row["id"] == i  # dense, in start order
        assert row["status"] in PHASE_STATUSES
        if row["parent"] is not None:
            assert row["parent"] < row["id"]
            assert rows[row["parent"]]["depth"] + 1 == row["depth"]
        else:
            assert row["depth"] == 0
        if row["status"] == RUNNING:
            assert row["end_s"] is None
        else:
            assert end(row) >= row["start_s"] and row["duration_s"] == end(row) - row["start_s"]


@settings(
    max_examples=300 if os.environ.get("TRT_WIDGET_FAST_TIER") else 2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(ops, max_size=60))
def test_random_callback_sequences_match_the_reference(sequence: list[tuple[Any, ...]]) -> None:
    model, ref = PhaseModel(TickClock()), Ref()
    statuses: list[str] = []  # last status seen per phase, for the transition check
    last_rows: list[PhaseRow] = []
    last_copies: list[PhaseRow] = []
    starts = 0
    for op in sequence:
        kind = op[0]
        if kind == "start":
            model.phase_start(op[1], op[2], op[3])
            ref.start(op[1], op[2], op[3])
            starts += 1
        elif kind == "step":
            model.step_complete(op[1], op[2])
            ref.step(op[1], op[2])
        elif kind == "finish":
            model.phase_finish(op[1])
            ref.finish(op[1])
        elif kind == "close_all":
            model.close_all()
            ref.close_all()
            assert model.running_count() == 0 and model.innermost_running() is None
            assert all(r["status"] != RUNNING for r in model.rows())
        elif kind == "cancelling":
            model.request_cancel()
            ref.cancelling = True
        else:  # an extra read changes nothing: the very same row objects come back
            again = model.rows()
            assert len(again) == len(last_rows) and all(x is y for x, y in zip(again, last_rows, strict=True))

        rows = model.rows()
        # copy-on-write against the last snapshot (strict=False: rows of phases started since then are not compared)
        for old, old_copy, new in zip(last_rows, last_copies, rows, strict=False):
            assert old == old_copy  # a handed-out row is never mutated
            assert (new is old) == (new == old)  # unchanged rows are the same object, changed ones new
        assert [{k: v for k, v in r.items() if k in KEYS} for r in rows] == ref.rows
        check_structure(rows)
        for i, row in enumerate(rows):
            if i < len(statuses):
                assert row["status"] in ALLOWED[statuses[i]], (statuses[i], row["status"])
        statuses = [r["status"] for r in rows]
        last_rows, last_copies = rows, [row.copy() for row in rows]  # a row holds scalars only: a shallow copy

    assert len(model) == starts  # memory follows phase starts, never steps
    assert model.ignored == ref.ignored
    innermost = model.innermost_running()
    running = [r for r in ref.rows if r["status"] == RUNNING]
    assert (innermost.id if innermost else None) == (running[-1]["id"] if running else None)
    model.close_all()
    final = model.timings()
    check_structure(final)
    assert all(r["status"] != RUNNING and end(r) >= r["start_s"] for r in final)


def test_eight_threads_of_callbacks_keep_the_invariants() -> None:
    threads, rounds, steps = 8, 60, 25
    model = PhaseModel()
    barrier = threading.Barrier(threads + 2)  # builders, the reader and this thread
    stop_reading = threading.Event()
    errors: list[BaseException] = []

    def builder(i: int) -> None:
        try:
            barrier.wait(60)
            for _ in range(rounds):
                model.phase_start(f"root-{i}", None, steps)
                model.phase_start("shared", f"root-{i}", steps)
                model.phase_start(f"own-{i}", "shared", steps)
                for s in range(steps):
                    model.step_complete(f"own-{i}", s)
                    model.step_complete("shared", s)
                    model.step_complete(f"root-{i}", s)
                    model.step_complete("never started", s)
                model.phase_finish(f"own-{i}")
                model.phase_finish("shared")
                model.phase_finish(f"root-{i}")
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    def reader() -> None:
        try:
            barrier.wait(60)
            while not stop_reading.is_set():
                check_structure(model.rows())
                model.innermost_running()
                model.timings()
        except BaseException as exc:
            errors.append(exc)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the threads as much as possible
    try:
        workers = [threading.Thread(target=builder, args=(i,)) for i in range(threads)]
        watcher = threading.Thread(target=reader)
        for thread in [*workers, watcher]:
            thread.start()
        barrier.wait(60)
        for thread in workers:
            thread.join(120)
        stop_reading.set()
        watcher.join(120)
    finally:
        sys.setswitchinterval(old_interval)

    assert not errors, errors
    rows = model.rows()
    check_structure(rows)
    assert len(rows) == threads * rounds * 3
    assert model.structure_version == 2 * len(rows)  # every start and every finish counted exactly once
    assert model.running_count() == 0 and all(r["status"] != RUNNING for r in rows)
    assert model.ignored == threads * rounds * steps  # the unknown name, and only it
    for row in rows:
        if row["name"].startswith("own-"):
            shared = parent(rows, row)
            assert shared["name"] == "shared" and row["depth"] == 2
            assert parent(rows, shared)["name"].startswith("root-")
            assert (row["status"], row["step"]) == (DONE, steps)
        elif row["name"] == "shared":
            assert parent(rows, row)["name"].startswith("root-") and row["depth"] == 1
        else:
            assert row["parent"] is None and row["status"] == DONE and row["step"] == steps
    # each thread's own phases ran one after another: its roots start in order and never overlap
    for i in range(threads):
        roots = [r for r in rows if r["name"] == f"root-{i}"]
        assert len(roots) == rounds
        assert all(end(a) <= b["start_s"] for a, b in itertools.pairwise(roots))
        assert all(r["depth"] == 0 for r in roots)
