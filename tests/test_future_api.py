"""``Build`` next to ``concurrent.futures.Future``: the same method names with the same meanings."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from trt_widget import Build, BuildCancelled, BuildError, models

SMALL = models.deep_residual(4).SerializeToString()


def test_done_running_and_cancelled_follow_the_life_cycle(wait_until: Callable[..., Any]) -> None:
    build = Build(models.deep_residual(1000), history=False)
    assert not build.done() and not build.running() and not build.cancelled()
    build.start()
    assert build.running() and not build.done()
    wait_until(lambda: build.model.innermost_running() is not None, what="a phase")
    build.stop()
    assert build.running()  # cancelling is still running, as a Future whose cancel has not landed yet
    build.wait(60)
    assert build.done() and not build.running() and build.cancelled()


def test_exception_returns_the_error_raises_a_cancel_and_none_on_success() -> None:
    ok = Build(SMALL, history=False).start()
    assert ok.exception(120) is None
    bad = Build(b"garbage", history=False).start()
    error = bad.exception(120)
    assert isinstance(error, BuildError) and not isinstance(error, BuildCancelled)
    stopped = Build(models.deep_residual(1000), history=False).start()
    stopped.stop()
    with pytest.raises(BuildCancelled):
        stopped.exception(60)
    with pytest.raises(RuntimeError, match="not started"):
        Build(SMALL, history=False).exception()


def test_exception_times_out_like_a_future() -> None:
    build = Build(models.deep_residual(1000), history=False).start()
    try:
        with pytest.raises(TimeoutError):
            build.exception(timeout=0.01)
    finally:
        build.stop()
        build.wait(60)


def test_add_done_callback_runs_once_even_after_the_end_and_survives_a_raising_callback(caplog: Any) -> None:
    build = Build(SMALL, history=False)
    calls: list[str] = []
    build.add_done_callback(lambda b: (_ for _ in ()).throw(ValueError("boom")))
    build.add_done_callback(lambda b: calls.append(b.status))
    build.start().wait(120)
    build.add_done_callback(lambda b: calls.append("late " + b.status))  # already done: called at once
    assert calls == ["succeeded", "late succeeded"]
    assert any("boom" in (r.exc_text or "") for r in caplog.records if r.name == "trt_widget")


def test_done_is_a_method_and_cancel_is_stop_in_futures_words(long_model_bytes: bytes) -> None:
    build = Build(long_model_bytes, history=False)
    assert build.done() is False and build.cancel() is False  # never started: nothing to cancel
    build.start()
    assert build.cancel() is True  # running: asked to stop
    build.wait(120)
    assert build.done() is True and build.cancelled() and build.cancel() is False  # ended: too late


def test_wait_async_is_woken_by_the_end_not_by_sleep_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    build = Build(models.deep_residual(20), history=False).start()
    result: list[Any] = []

    async def no_sleep(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("wait_async polled with asyncio.sleep")

    def run() -> None:  # a loop of its own, on its own thread
        monkeypatch.setattr(asyncio, "sleep", no_sleep)
        result.append(asyncio.run(build.wait_async()))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    assert result == ["succeeded"]
