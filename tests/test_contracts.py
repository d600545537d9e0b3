"""Contracts a mutation check showed no test held: each test fails when its contract is broken.

- a Stop that arrives after TensorRT made the engine: the build succeeds and nothing reads "cancelled";
- atomic writes flush the data to disk (fsync) before the rename;
- the pump sends the cancelling state at once, not at its next throttled tick;
- ``await widget`` waits for the build and for the widget's final state.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trt_widget import Build, BuildWidget, _files, models
from trt_widget._phases import CANCELLED

ROOT = "Building engine"


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_stop_after_the_engine_was_made_leaves_the_build_succeeded(isolation: str) -> None:
    build = Build(models.deep_residual(4), history=False, isolation=isolation)
    asked: list[bool] = []

    def stop_when_the_root_ends(event: str, phase: Any) -> None:
        if event == "phase_finish" and phase.name == ROOT and not asked:
            asked.append(build.stop("late stop"))  # TensorRT has no step left to cancel at

    build.model.subscribe(stop_when_the_root_ends)
    build.start()
    assert build.wait(120) == "succeeded", build.status_detail
    assert asked == [True]  # the stop really was asked for while the build was running
    assert build.engine and build.error is None
    assert not build.model.cancelling
    assert not [r for r in build.timings() if r["status"] == CANCELLED]


def test_atomic_write_fsyncs_the_data_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, Any]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(("fsync", os.fstat(fd).st_size))
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        calls.append(("replace", Path(dst).name))
        real_replace(src, dst)

    monkeypatch.setattr(_files.os, "fsync", fsync)
    monkeypatch.setattr(_files.os, "replace", replace)
    _files.atomic_write(tmp_path / "engine.plan", b"x" * 1000)
    assert calls == [("fsync", 1000), ("replace", "engine.plan")]


@pytest.mark.rtx_long_step
def test_the_cancelling_state_is_sent_at_once_not_at_the_next_tick(wait_until: Callable[..., Any]) -> None:
    widget = BuildWidget(models.deep_residual(1000), history=False, isolation="thread")
    widget._pump.interval = 3600.0  # one throttled tick an hour: only an urgent wake-up can send in time
    widget.start()
    try:
        wait_until(
            lambda: (p := widget.build.model.innermost_running()) is not None and p.name == "Determining refit engines",
            what="the long step",
        )
        seen = threading.Event()
        widget.observe(lambda change: seen.set() if change["new"] == "cancelling" else None, names="status")
        widget.stop()
        assert seen.wait(10), f"status still {widget.status!r}: the Stop waited for the throttle"
    finally:
        widget.build.wait(300)


def test_awaiting_a_widget_waits_for_the_build_and_its_final_state() -> None:
    widget = BuildWidget(models.deep_residual(20), history=False).start()
    result: list[Any] = []

    def run() -> None:  # a loop of its own: the e2e session may keep one running on this thread
        result.append(asyncio.run(widget.wait_async()))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(300)
    assert result == ["succeeded"]
    assert widget.build.done() and widget.status == "succeeded" and widget.engine_size == len(widget.engine or b"")
