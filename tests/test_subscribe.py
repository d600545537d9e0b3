"""One way to follow a build: build.subscribe(fn) -> unsubscribe, used by every front end."""

from __future__ import annotations

import io
import json
import threading
from typing import Any, cast

from trt_widget import Build, BuildWidget, models
from trt_widget._subscribe import BuildEvent
from trt_widget._terminal import TerminalView


def _summary(events: list[BuildEvent]) -> list[tuple[str, int | None]]:
    return [(e.kind, e.phase.id if e.phase else None) for e in events]


def test_two_widgets_the_terminal_and_two_subscribers_all_see_every_event() -> None:
    build = Build(models.deep_residual(20), history=False, isolation="thread")
    seen: dict[str, list[BuildEvent]] = {"a": [], "b": []}
    threads: set[int] = set()

    def on_a(event: BuildEvent) -> None:
        seen["a"].append(event)
        if event.phase is not None:
            threads.add(threading.get_ident())

    build.subscribe(on_a)
    build.subscribe(seen["b"].append)
    first, second = BuildWidget(None, build=build), BuildWidget(None, build=build)
    out = io.StringIO()
    terminal = TerminalView(build, out, style="plain")
    first.start()  # starts the build; the second widget's pump is started by hand, as displaying it would
    second._pump.start()
    assert build.wait(120) == "succeeded"
    for widget in (first, second):
        widget._pump.join(10)
    terminal.join(10)

    rows = build.model.rows()
    kinds = [e.kind for e in seen["a"]]
    assert kinds[0] == "start" and kinds[-1] == "end"
    assert kinds.count("phase_start") == kinds.count("phase_finish") == len(rows)
    assert _summary(seen["a"]) == _summary(seen["b"])
    assert threading.get_ident() not in threads  # phase events come on the builder's thread, not this one
    for widget in (first, second):  # neither widget took the other's place (one single-slot hook before)
        assert json.loads(widget.phases_json) == rows and widget.status == "succeeded"
    text = out.getvalue()
    assert all(r["name"] in text for r in rows)


def test_unsubscribe_stops_delivery_and_a_raising_subscriber_breaks_nothing() -> None:
    build = Build(models.deep_residual(20), history=False, isolation="thread")
    got: list[str] = []
    later: list[str] = []

    def broken(_event: BuildEvent) -> None:
        raise RuntimeError("a broken reader")

    build.subscribe(broken)
    unsubscribe = build.subscribe(lambda e: got.append(e.kind))
    build.subscribe(lambda e: later.append(e.kind))

    def stop_after_first_phase(event: BuildEvent) -> None:
        if event.kind == "phase_start":
            unsubscribe()

    build.subscribe(stop_after_first_phase)
    assert build.start().wait(120) == "succeeded"
    assert got[0] == "start" and got[-1] == "phase_start" and got.count("phase_start") == 1, got
    assert later.count("phase_start") > 1 and later[-1] == "end"


def test_subscribing_to_an_ended_build_gets_its_end_at_once() -> None:
    build = Build(models.deep_residual(3), history=False, isolation="thread").start()
    assert build.wait(120) == "succeeded"
    got: list[Any] = []
    build.subscribe(lambda e: got.append(e.kind))
    assert got == ["end"]


class _Synthetic:
    """What subscribe() reads of a build: a phase model, a log, start and end callbacks (no TensorRT)."""

    def __init__(self) -> None:
        from trt_widget._engine import CaptureLogger
        from trt_widget._phases import PhaseModel

        self.model = PhaseModel()
        self.logger = CaptureLogger()
        self.on_start = self.add_done_callback = lambda fn: None


def test_steps_and_log_lines_are_delivered_by_default_and_unsubscribing_detaches_from_the_build() -> None:
    from trt_widget._subscribe import subscribe

    build = _Synthetic()
    got: list[BuildEvent] = []
    unsubscribe = subscribe(cast(Build, build), got.append)  # a stand-in: what subscribe() reads of a Build
    build.model.phase_start("a", None, 2)
    build.model.step_complete("a", 0)
    build.logger.log(2, "a warning")
    assert [e.kind for e in got] == ["phase_start", "step", "log"]
    assert got[2].record is not None and got[2].record["message"] == "a warning" and got[2].phase is None
    unsubscribe()
    assert not build.model._listeners and not build.model._step_listeners and not build.logger._listeners
