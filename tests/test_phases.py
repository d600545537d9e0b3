"""PhaseModel driven by synthetic callback sequences (no TensorRT): nesting, repeats, clock, rows, listeners."""

from __future__ import annotations

from typing import Any

import pytest

from trt_widget._phases import CANCELLED, DONE, FAILED, FINISHED_EARLY, RUNNING, Framing, PhaseModel


class FakeClock:
    """A clock the test advances by hand, so start/end/duration are exact."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_fake_clock_gives_exact_start_end_and_duration() -> None:
    clock = FakeClock(100.0)
    model = PhaseModel(clock)
    clock.t = 101.5
    model.phase_start("Building engine", None, 2)
    clock.t = 102.0
    model.phase_start("Optimizing", "Building engine", 1)
    clock.t = 104.25
    model.step_complete("Optimizing", 0)
    model.phase_finish("Optimizing")
    clock.t = 110.0
    model.step_complete("Building engine", 1)
    model.phase_finish("Building engine")
    outer, inner = model.timings()
    assert (outer["start_s"], outer["end_s"], outer["duration_s"]) == (1.5, 10.0, 8.5)
    assert (inner["start_s"], inner["end_s"], inner["duration_s"]) == (2.0, 4.25, 2.25)
    assert model.now() == 10.0


def test_restart_clock_moves_time_zero() -> None:
    clock = FakeClock(5.0)
    model = PhaseModel(clock)
    clock.t = 50.0
    model.restart_clock()
    clock.t = 51.0
    phase = model.phase_start("a", None, 1)
    assert phase.start_s == 1.0


def test_nesting_resolves_parent_by_name_and_sets_depth() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("root", None, 1)
    model.phase_start("child", "root", 1)
    model.phase_start("grandchild", "child", 1)
    rows = model.timings()
    assert [(r["name"], r["parent"], r["depth"]) for r in rows] == [
        ("root", None, 0),
        ("child", 0, 1),
        ("grandchild", 1, 2),
    ]


def test_unknown_parent_makes_a_root_phase() -> None:
    model = PhaseModel(FakeClock())
    phase = model.phase_start("orphan", "never started", 3)
    assert (phase.parent, phase.depth) == (None, 0)


def test_repeated_names_under_one_parent_are_separate_instances() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("Computing profile costs", None, 3)
    for _ in range(3):
        model.phase_start("Timing tactics", "Computing profile costs", 2)
        model.step_complete("Timing tactics", 0)
        model.step_complete("Timing tactics", 1)
        model.phase_finish("Timing tactics")
    model.phase_finish("Computing profile costs")
    rows = model.timings()
    assert len(rows) == 4
    repeats = rows[1:]
    assert [r["id"] for r in repeats] == [1, 2, 3]
    assert all(r["parent"] == 0 and r["depth"] == 1 for r in repeats)
    assert all(r["status"] == DONE and r["step"] == 2 for r in repeats)


def test_parent_is_the_newest_active_instance_of_its_name() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("p", None, 1)  # id 0
    model.phase_start("p", None, 1)  # id 1, newest active "p"
    assert model.phase_start("c", "p", 1).parent == 1
    model.phase_finish("p")  # closes id 1 (newest active)
    assert model.phase_start("c", "p", 1).parent == 0


def test_early_finish_then_late_step_promotes_to_done() -> None:
    clock = FakeClock(0.0)
    model = PhaseModel(clock)
    model.phase_start("refit", None, 2)
    model.step_complete("refit", 0)
    clock.t = 3.0
    model.phase_finish("refit")
    assert model.timings()[0]["status"] == FINISHED_EARLY
    clock.t = 4.0
    model.step_complete("refit", 1)  # the late step for the finished phase
    row = model.timings()[0]
    assert (row["status"], row["step"], row["end_s"]) == (DONE, 2, 3.0)


def test_steps_only_move_forward() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("a", None, 10)
    model.step_complete("a", 5)
    version = model.version
    model.step_complete("a", 2)  # out of order: ignored, no change
    assert model.timings()[0]["step"] == 6
    assert model.version == version


def test_steps_and_finishes_for_unknown_names_are_counted_not_raised() -> None:
    model = PhaseModel(FakeClock())
    assert model.step_complete("nobody", 3) is None
    assert model.phase_finish("nobody") is None
    assert model.ignored == 2
    assert len(model) == 0


def test_finish_with_no_steps_declared_is_done() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("zero", None, 0)
    model.phase_finish("zero")
    assert model.timings()[0]["status"] == DONE


def test_close_all_ends_every_running_phase_with_the_status() -> None:
    clock = FakeClock(0.0)
    model = PhaseModel(clock)
    model.phase_start("a", None, 1)
    model.phase_start("b", "a", 1)
    model.step_complete("b", 0)
    model.phase_finish("b")
    model.phase_start("c", "a", 5)
    clock.t = 7.0
    closed = model.close_all()
    assert sorted(p.name for p in closed) == ["a", "c"]
    rows = {r["name"]: r for r in model.timings()}
    assert rows["a"]["status"] == rows["c"]["status"] == CANCELLED
    assert rows["a"]["end_s"] == rows["c"]["end_s"] == 7.0
    assert rows["b"]["status"] == DONE
    assert model.running_count() == 0 and model.innermost_running() is None
    assert model.phase_finish("a") is None  # nothing active any more


def test_innermost_running_is_the_latest_started_running_phase_as_a_copy() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("outer", None, 1)
    model.phase_start("inner", "outer", 1)
    innermost = model.innermost_running()
    assert innermost is not None and innermost.name == "inner"
    innermost.name = "changed by a reader"
    assert model.timings()[1]["name"] == "inner"
    model.phase_finish("inner")
    assert model.innermost_running().name == "outer"  # type: ignore[union-attr]


def test_rows_are_copy_on_write() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("a", None, 3)
    model.phase_start("b", None, 3)
    first = model.rows()
    again = model.rows()
    assert again is not first  # a new list every call
    assert all(x is y for x, y in zip(first, again, strict=True))  # but the same row objects when nothing changed
    model.step_complete("b", 0)
    model.phase_start("c", None, 1)
    third = model.rows()
    assert third[0] is first[0]
    assert third[1] is not first[1] and third[1]["step"] == 1
    assert first[1]["step"] == 0  # the old snapshot was not mutated
    assert len(third) == 3 and third[2]["name"] == "c"


def test_timings_are_plain_copies_with_every_key() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("a", None, 1)
    rows = model.timings()
    assert set(rows[0]) >= {
        "id",
        "name",
        "parent",
        "depth",
        "start_s",
        "end_s",
        "duration_s",
        "step",
        "num_steps",
        "status",
    }
    rows[0]["name"] = "mutated"
    assert model.timings()[0]["name"] == "a"
    assert model.rows()[0]["name"] == "a"


def test_memory_grows_with_phase_starts_not_steps() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("long", None, 100_000)
    for step in range(100_000):
        model.step_complete("long", step)
    assert len(model) == 1 and len(model.rows()) == 1
    assert model.timings()[0]["step"] == 100_000


def test_version_counters() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("a", None, 2)
    assert (model.version, model.structure_version) == (1, 1)
    model.step_complete("a", 0)
    assert (model.version, model.structure_version) == (2, 1)
    model.phase_finish("a")
    assert (model.version, model.structure_version) == (3, 2)


def test_listeners_see_every_event_and_a_broken_listener_is_harmless() -> None:
    model = PhaseModel(FakeClock())
    seen: list[tuple[str, str]] = []
    structure: list[int] = []

    def broken(event: str, phase: Any) -> None:
        raise RuntimeError("reader bug")

    model.subscribe(broken)
    model.subscribe(lambda event, phase: seen.append((event, phase.name)))
    stop = model.subscribe(lambda event, _phase: structure.append(model.structure_version) if event != "step" else None)
    model.phase_start("a", None, 1)
    model.step_complete("a", 0)
    model.phase_finish("a")
    model.phase_start("b", None, 1)
    model.close_all()
    assert seen == [
        ("phase_start", "a"),
        ("step", "a"),
        ("phase_finish", "a"),
        ("phase_start", "b"),
        ("phase_finish", "b"),
    ]
    assert structure == [1, 2, 3, 4]  # start/finish/close only, not steps
    stop()
    model.phase_start("c", None, 1)
    assert structure == [1, 2, 3, 4] and seen[-1] == ("phase_start", "c")  # unsubscribed: only the other listener


def test_cancelling_marks_short_phases_cancelled() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("a", None, 5)
    model.phase_start("b", None, 1)
    model.step_complete("b", 0)
    model.cancelling = True
    model.phase_finish("b")
    model.phase_finish("a")
    assert [r["status"] for r in model.timings()] == [CANCELLED, DONE]


def test_phases_returns_independent_copies() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("a", None, 1)
    copy = model.phases()[0]
    copy.status = DONE
    assert model.timings()[0]["status"] == RUNNING


def test_a_late_stop_that_did_not_cancel_leaves_phases_finished_early() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("a", None, 6)
    model.step_complete("a", 4)
    model.cancelling = True
    model.phase_finish("a")
    assert model.timings()[0]["status"] == CANCELLED
    before = model.rows()[0]
    model.uncancel()
    assert model.timings()[0]["status"] == FINISHED_EARLY
    assert model.rows()[0] is not before and not model.cancelling


def test_repeated_or_backward_steps_notify_no_listener() -> None:
    model = PhaseModel(FakeClock())
    seen: list[int] = []
    model.subscribe(lambda event, phase: seen.append(phase.step) if event == "step" else None)
    model.phase_start("a", None, 9)
    for step in (0, 0, 3, 1, 3, 4):
        model.step_complete("a", step)
    assert seen == [1, 4, 5]


# -- found by scripts/mutate.py -----------------------------------------------------------------------------------
def test_last_event_time_follows_every_callback_and_replayed_times_are_capped_at_now() -> None:
    clock = FakeClock(10.0)
    assert PhaseModel(clock).last_event_s is None  # no callback yet
    model = PhaseModel(clock)
    clock.t = 11.0
    model.phase_start("a", None, 2, at=50.0)  # a replayed time later than now counts as now
    assert model.timings()[0]["start_s"] == 1.0 and model.last_event_s == 1.0
    clock.t = 12.5
    model.step_complete("a", 0)
    assert model.last_event_s == 2.5
    clock.t = 13.0
    model.phase_finish("a", at=12.75)  # an earlier replayed time is kept as it is
    assert model.timings()[0]["end_s"] == 2.75 and model.last_event_s == 2.75


def test_callbacks_return_the_instance_they_changed() -> None:
    model = PhaseModel(FakeClock())
    started = model.phase_start("a", None, 2)
    assert model.step_complete("a", 0) is started
    assert model.phase_finish("a") is started
    assert model.step_complete("missing", 0) is None and model.phase_finish("missing") is None


def test_each_thread_steps_and_finishes_its_own_instance_of_a_name() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("Timing", None, 2, thread=1)
    model.phase_start("Timing", None, 2, thread=2)
    mine = model.phase_start("Measure", "Timing", 1, thread=1)
    theirs = model.phase_start("Measure", "Timing", 1, thread=2)
    assert mine.parent == 0 and theirs.parent == 1  # the parent its own thread started
    model.step_complete("Timing", 0, thread=1)  # the older instance: thread 1's
    assert [r["step"] for r in model.timings()[:2]] == [1, 0]
    assert model.phase_finish("Measure", thread=1) is mine
    assert model.phase_finish("Timing", thread=2).id == 1  # type: ignore[union-attr]
    model.step_complete("Timing", 1)  # no thread: the newest active instance (thread 1's, the only one left)
    assert model.timings()[0]["step"] == 2


def test_the_parent_thread_picks_among_same_named_parents() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("Timing", None, 1, thread=1)
    model.phase_start("Timing", None, 1, thread=2)
    child = model.phase_start("Measure", "Timing", 1, thread=3, parent_thread=1)  # a worker thread of thread 1
    assert child.parent == 0 and child.depth == 1
    assert model.phase_start("Measure", "Timing", 1, thread=1, parent_thread=2).parent == 1


def test_uncancel_bumps_the_version_so_readers_see_it() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("a", None, 4)
    model.cancelling = True
    model.phase_finish("a")
    before = model.version
    model.uncancel()
    assert model.version == before + 1 and model.timings()[0]["status"] == FINISHED_EARLY


def test_a_listener_without_steps_gets_starts_and_finishes_and_unsubscribing_ends_both() -> None:
    model = PhaseModel(FakeClock())
    coarse: list[str] = []
    fine: list[str] = []
    stop_coarse = model.subscribe(lambda event, phase: coarse.append(event), steps=False)
    stop_fine = model.subscribe(lambda event, phase: fine.append(event))
    model.phase_start("a", None, 2)
    model.step_complete("a", 0)
    model.phase_finish("a")
    assert coarse == ["phase_start", "phase_finish"]
    assert fine == ["phase_start", "step", "phase_finish"]
    stop_coarse()
    stop_fine()
    model.phase_start("b", None, 2)
    model.step_complete("b", 0)
    model.phase_finish("b")
    assert len(coarse) == 2 and len(fine) == 3


def test_unsubscribing_one_step_listener_keeps_the_others() -> None:
    model = PhaseModel(FakeClock())
    first: list[str] = []
    second: list[str] = []
    stop_first = model.subscribe(lambda event, phase: first.append(event))
    model.subscribe(lambda event, phase: second.append(event))
    model.phase_start("a", None, 2)
    stop_first()
    model.step_complete("a", 0)
    model.phase_finish("a")
    assert first == ["phase_start"] and second == ["phase_start", "step", "phase_finish"]


def test_phases_nest_256_deep_and_a_deeper_start_is_refused_leaving_the_model_intact() -> None:
    model = PhaseModel(FakeClock())
    model.phase_start("p0", None, 1)
    for depth in range(1, 257):  # depths 0..256: MAX_DEPTH is 256 (a real build nests about 8 deep)
        assert model.phase_start(f"p{depth}", f"p{depth - 1}", 1).depth == depth
    version = model.version
    with pytest.raises(ValueError, match="nest more than 256 deep"):
        model.phase_start("p257", "p256", 1)
    assert len(model) == 257 and model.version == version and model.running_count() == 257


FRAMED = Framing(after="after", own=frozenset({"before", "after"}))


def _names(model: PhaseModel) -> list[tuple[str, str]]:
    return [(row["name"], row["status"]) for row in model.timings()]


def test_the_after_row_opens_when_the_last_top_level_tensorrt_phase_ends_and_closes_on_the_next() -> None:
    clock = FakeClock(10.0)
    model = PhaseModel(clock, framing=FRAMED)
    events: list[tuple[str, str]] = []
    model.subscribe(lambda event, phase: events.append((event, phase.name)), steps=False)
    model.phase_start("before", None, 0)
    clock.t = 11.0
    model.phase_finish("before")  # a framing row of its own: no "after" follows it
    model.phase_start("Building engine", None, 1)
    model.phase_start("Optimizing", "Building engine", 0)
    clock.t = 12.0
    model.phase_finish("Optimizing")  # nested: not the end
    model.phase_start("Second", None, 0)
    model.phase_finish("Second")  # top-level, but "Building engine" still runs
    assert _names(model)[-1] == ("Second", DONE) and model.running_count() == 1
    clock.t = 13.5
    model.step_complete("Building engine", 0)
    version, structure = model.version, model.structure_version
    model.phase_finish("Building engine")
    assert (model.version, model.structure_version) == (version + 2, structure + 2)  # its end, and "after"
    after = model.timings()[-1]
    assert (after["name"], after["status"], after["depth"], after["parent"]) == ("after", RUNNING, 0, None)
    assert after["start_s"] == 3.5 and after["num_steps"] == 0 and model.running_count() == 1
    assert events[-2:] == [("phase_finish", "Building engine"), ("phase_start", "after")]
    version = model.version
    model.phase_start("before", None, 0)  # a framing row starting does not end "after"
    model.phase_start("Inner", "no such parent", 0)  # a root phase, but named under a parent: not the end either
    assert model.timings()[-3]["status"] == RUNNING and model.version == version + 2
    model.phase_finish("before")
    model.phase_finish("Inner")
    clock.t = 15.0
    model.phase_start("Refitting", None, 0)  # another top-level TensorRT phase: not the end after all
    assert [row["status"] for row in model.timings() if row["name"] == "after"] == [DONE]
    assert model.timings()[-4]["end_s"] == 5.0
    model.phase_finish("Refitting")
    assert _names(model)[-1] == ("after", RUNNING)  # a new "after" row after the new last phase
    clock.t = 16.0
    closed = model.end_after()
    assert closed is not None and closed.name == "after" and closed.end_s == 6.0 and closed.status == DONE
    assert model.end_after() is None and model.running_count() == 0
    assert model.step_complete("after", 0) is closed and model.ignored == 0  # a late step: the newest "after"


def test_no_after_row_after_a_cancelled_phase_after_close_all_or_without_framing() -> None:
    model = PhaseModel(FakeClock(), framing=FRAMED)
    model.phase_start("Building engine", None, 0)
    model.phase_finish("Building engine", ended=CANCELLED)
    assert _names(model) == [("Building engine", CANCELLED)]
    model.phase_start("Building engine", None, 0)
    model.close_all()
    model.phase_start("Late", None, 0)
    model.phase_finish("Late")  # the build ended: no "after" row now
    assert [name for name, _ in _names(model)] == ["Building engine", "Building engine", "Late"]
    plain = PhaseModel(FakeClock())
    plain.phase_start("Building engine", None, 0)
    plain.phase_finish("Building engine")
    assert len(plain) == 1 and plain.end_after() is None
    open_after = PhaseModel(FakeClock(), framing=FRAMED)
    open_after.phase_start("Building engine", None, 0)
    open_after.phase_finish("Building engine")
    assert open_after.close_all() and _names(open_after)[-1] == ("after", CANCELLED)
    assert open_after.end_after() is None


def test_a_recording_says_how_a_phase_ended() -> None:
    model = PhaseModel(FakeClock())
    for name in ("cancelled", "failed", "plain"):
        model.phase_start(name, None, 2)
    model.phase_finish("cancelled", ended=CANCELLED)
    model.phase_finish("failed", ended=FAILED)
    model.phase_finish("plain", ended="something else")  # not a way to end: the status follows from its steps
    assert [row["status"] for row in model.timings()] == [CANCELLED, FAILED, FINISHED_EARLY]
