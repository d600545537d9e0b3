"""The scripted runner: recorded TensorRT callback sequences through the real monitor adapter, phase model, pump
and widget, on a clock the test moves (the fast tier's way to test what needs no TensorRT)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest

from trt_widget import Build, BuildCancelled, BuildWidget
from trt_widget._build import FRAME_PHASES
from trt_widget.runners import ManualClock, ScriptedRunner, parse_script
from trt_widget.runners._scripted import Finish, Hold, Start, Step, Wait

MODEL = b"not read: the scripted runner builds nothing"


def scripted(runner: ScriptedRunner, clock: ManualClock | None = None, **kwargs: Any) -> Build:
    return Build(MODEL, runner=runner, clock=clock or runner.clock or ManualClock(), history=False, resources=False,
                 **kwargs)  # fmt: skip


def test_a_recorded_build_gives_its_phase_tree_with_exact_durations() -> None:
    record = json.loads((resources.files("trt_widget.runners") / "scripts" / "deep_residual_40.json").read_text())
    clock = ManualClock()
    build = scripted(ScriptedRunner.recorded("deep_residual_40", clock=clock)).start()
    assert build.wait(30) == "succeeded", build.status_detail
    starts = [c for c in record["callbacks"] if c[0] == "start"]
    rows = [r for r in build.model.rows() if r["name"] not in FRAME_PHASES or r["name"] == starts[0][1]]
    assert [r["name"] for r in rows] == [c[1] for c in starts]  # every phase instance, in order
    by_name = {r["name"]: r for r in rows}
    assert by_name["Building engine"]["parent"] is None and by_name["Cloning network graph"]["parent"] is not None
    # the time between a phase's start and finish is what the recording says passed inside TensorRT
    first = record["callbacks"]
    i, j = first.index(starts[0]), first.index(["finish", starts[0][1]])
    expected = sum(c[1] for c in first[i:j] if c[0] == "wait")
    assert rows[0]["duration_s"] == pytest.approx(expected, abs=1e-9)


def test_a_stop_in_a_long_step_cancels_at_the_next_step_boundary_and_closes_every_phase() -> None:
    runner = ScriptedRunner(
        [Start("Building engine", None, 2), Start("Determining refit engines", "Building engine", 1), Hold(),
         Step("Determining refit engines", 1), Finish("Determining refit engines"), Step("Building engine", 2),
         Finish("Building engine")],
        clock=ManualClock(),
    )  # fmt: skip
    build = scripted(runner).start()
    _wait_until(lambda: runner.played >= 3)
    build.stop()
    assert build.wait(30) == "cancelled"
    assert runner.played == 4  # the step after the hold returned False: nothing after it ran
    statuses = {r["name"]: r["status"] for r in build.model.rows()}
    # the refit's one step completed (TensorRT calls step_complete when a step is done) and the cancel was heard
    # there: the refit is done, its parent cut short of its 2 steps is cancelled (issue 39, sixth trial)
    assert statuses["Building engine"] == "cancelled" and statuses["Determining refit engines"] == "done"
    with pytest.raises(BuildCancelled):
        build.result(0)


def test_the_widget_sends_the_cancelling_state_at_once_not_at_the_next_tick() -> None:
    # a step that goes on after the stop, as RTX's long step does: the widget says "cancelling" meanwhile
    runner = ScriptedRunner([Start("Building engine", None, 1), Hold(until_stop=False), Step("Building engine", 1)])
    widget = BuildWidget(scripted(runner, ManualClock()))
    widget._pump.interval = 3600.0  # one throttled tick an hour: only an urgent wake-up can send in time
    widget.start()
    try:
        _wait_until(lambda: runner.played >= 2)
        seen = threading.Event()
        widget.observe(lambda change: seen.set() if change["new"] == "cancelling" else None, names="status")
        widget.stop()
        assert seen.wait(10), f"status still {widget.status!r}: the Stop waited for the throttle"
    finally:
        runner.release.set()
        assert widget.build.wait(30) == "cancelled"


def test_waits_move_the_given_clock_and_a_release_ends_a_hold() -> None:
    clock = ManualClock(5.0)
    runner = ScriptedRunner([Start("p", None, 1), Wait(2.5), Hold(), Step("p", 1), Finish("p")], clock=clock)
    build = scripted(runner).start()
    _wait_until(lambda: runner.played >= 3)
    runner.release.set()
    assert build.wait(30) == "succeeded"
    assert clock() == 7.5
    (row,) = [r for r in build.model.rows() if r["name"] == "p"]
    assert row["duration_s"] == 2.5 and row["status"] == "done"
    assert build.result(0) == runner.engine


def test_a_script_is_checked_callback_by_callback() -> None:
    assert parse_script([["start", "p", None, 3], ["step", "p", 1], ["finish", "p"]]) == [
        Start("p", None, 3), Step("p", 1), Finish("p")
    ]  # fmt: skip
    with pytest.raises(ValueError, match=r"callback 2: not one of"):
        parse_script([["start", "p", None, 3], ["explode"]])


def _wait_until(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    finished = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        finished.wait(0.01)
    raise AssertionError("timed out")
