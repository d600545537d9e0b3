"""BuildMonitor: the IProgressMonitor adapter never lets an exception escape and answers per cancel state."""

from __future__ import annotations

import _thread
import threading
from typing import Any

import pytest

from trt_widget import BuildMonitor
from trt_widget._engine import CaptureLogger, ModelSource, build_engine
from trt_widget._options import BuildOptions
from trt_widget._phases import PhaseModel
from trt_widget.models import deep_residual


class RaisingModel(PhaseModel):
    """A phase model whose every callback raises, as a bug in the model would."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.exc = exc

    def phase_start(self, *args: Any, **kwargs: Any) -> Any:
        raise self.exc

    def step_complete(self, *args: Any, **kwargs: Any) -> Any:
        raise self.exc

    def phase_finish(self, *args: Any, **kwargs: Any) -> Any:
        raise self.exc


def test_constructible_with_no_arguments() -> None:
    monitor = BuildMonitor()
    assert isinstance(monitor.model, PhaseModel)
    assert isinstance(monitor.cancel_event, threading.Event)
    assert not monitor.cancelled and monitor.errors == []


def test_callbacks_feed_the_model() -> None:
    monitor = BuildMonitor()
    monitor.phase_start("Building engine", None, 2)
    monitor.phase_start("Optimizing", "Building engine", 1)
    assert monitor.step_complete("Optimizing", 0) is True
    monitor.phase_finish("Optimizing")
    rows = monitor.timings()
    assert [(r["name"], r["parent"], r["depth"], r["status"]) for r in rows] == [
        ("Building engine", None, 0, "running"),
        ("Optimizing", 0, 1, "done"),
    ]


def test_timings_have_the_documented_keys() -> None:
    monitor = BuildMonitor()
    monitor.phase_start("a", None, 1)
    (row,) = monitor.timings()
    assert {"id", "name", "parent", "depth", "start_s", "duration_s", "step", "num_steps", "status"} <= set(row)


def test_cancel_makes_step_complete_return_false() -> None:
    event = threading.Event()
    monitor = BuildMonitor(cancel_event=event)
    monitor.phase_start("a", None, 3)
    assert monitor.step_complete("a", 0) is True
    monitor.cancel()
    assert event.is_set() and monitor.cancelled
    assert monitor.step_complete("a", 1) is False
    assert monitor.step_complete("unknown phase", 0) is False


def test_a_shared_cancel_event_set_elsewhere_cancels() -> None:
    event = threading.Event()
    monitor = BuildMonitor(PhaseModel(), event)
    event.set()
    assert monitor.step_complete("a", 0) is False


@pytest.mark.parametrize("cancelled", [False, True])
def test_exceptions_inside_the_model_are_caught(cancelled: bool) -> None:
    monitor = BuildMonitor(RaisingModel(ValueError("model bug")))
    if cancelled:
        monitor.cancel()
    monitor.phase_start("a", None, 1)
    assert monitor.step_complete("a", 0) is (not cancelled)
    monitor.phase_finish("a")
    assert len(monitor.errors) == 3
    assert all("ValueError: model bug" in tb for tb in monitor.errors)


def test_caught_tracebacks_are_capped() -> None:
    monitor = BuildMonitor(RaisingModel(ValueError("model bug")))
    for step in range(100):
        assert monitor.step_complete("a", step) is True
    assert len(monitor.errors) == 20


def test_keyboard_interrupt_inside_a_callback_cancels_instead_of_vanishing() -> None:
    monitor = BuildMonitor(RaisingModel(KeyboardInterrupt()))
    assert monitor.step_complete("a", 0) is False
    assert monitor.cancelled


def test_ctrl_c_during_a_main_thread_build_cancels_it(sigint_raises: None) -> None:
    """A real RTX build on this thread: Ctrl-C lands inside a callback; the monitor turns it into a cancel."""
    monitor = BuildMonitor()
    fired: list[bool] = []

    def interrupt_once(event: str, phase: Any) -> None:
        if event == "phase_start" and not fired:
            fired.append(True)
            _thread.interrupt_main()

    monitor.model.subscribe(interrupt_once)
    engine = build_engine(ModelSource.of(deep_residual(50)), BuildOptions(), monitor, CaptureLogger())
    assert fired
    assert engine is None
    assert monitor.cancelled
    assert any("KeyboardInterrupt" in tb for tb in monitor.errors)


def test_the_watchs_monitor_is_the_one_adapter_and_then_calls_the_codes_own() -> None:
    """A watched build's monitor is a BuildMonitor (the thread runner's and the builder process's adapter): it
    feeds the phase model, catches the model's failure, and passes each callback on to the code's monitor, whose
    False (or exception) from ``step_complete`` cancels, as TensorRT's would."""
    from trt_widget.watch._monitor import WatchMonitor

    calls: list[tuple[str, str]] = []

    class Theirs:
        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int, /) -> None:
            calls.append(("start", phase_name))

        def step_complete(self, phase_name: str, step: int, /) -> bool:
            calls.append(("step", phase_name))
            return step < 1

        def phase_finish(self, phase_name: str, /) -> None:
            raise ValueError("their bug")

    monitor = WatchMonitor(PhaseModel(), threading.Event(), Theirs())
    assert isinstance(monitor, BuildMonitor)
    monitor.phase_start("Building engine", None, 3)
    assert monitor.step_complete("Building engine", 0) is True
    assert monitor.step_complete("Building engine", 1) is False and monitor.cancelled_by_theirs
    monitor.phase_finish("Building engine")
    assert calls == [("start", "Building engine"), ("step", "Building engine"), ("step", "Building engine")]
    assert [(r["name"], r["step"], r["status"]) for r in monitor.timings()] == [
        ("Building engine", 2, "finished-early")
    ]
    assert len(monitor.errors) == 1 and "in your progress monitor's phase_finish" in monitor.errors[0]
    broken = WatchMonitor(RaisingModel(ValueError("model bug")), threading.Event())
    broken.phase_start("A", None, 1)
    assert broken.step_complete("A", 0) is True and broken.errors[0].startswith("in trt_widget: ")
    broken.cancel()
    assert broken.step_complete("A", 0) is False and broken.cancelled
