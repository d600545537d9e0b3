"""``Build`` next to ``concurrent.futures.Future``: the same method names with the same meanings."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

import pytest
from fixture_types import RunAsync, WaitUntil

from trt_widget import Build, BuildCancelled, BuildError, models

SMALL = models.deep_residual(4).SerializeToString()


def test_done_running_and_cancelled_follow_the_life_cycle(wait_until: WaitUntil) -> None:
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
    """Its own wake-ups (for a SIGINT) every 600 s here: only the build's end can end the wait within the test."""
    build = Build(models.deep_residual(200), history=False)  # ~0.5 s: running when awaited, however loaded
    result: list[Any] = []

    async def no_sleep(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("wait_async polled with asyncio.sleep")

    async def wait() -> tuple[bool, str]:
        build.start()  # here, so that nothing but the next line runs between its start and the wait
        return build.done(), await build.wait_async(poll=600)

    def run() -> None:  # a loop of its own, on its own thread
        monkeypatch.setattr(asyncio, "sleep", no_sleep)
        result.append(asyncio.run(wait()))

    thread = threading.Thread(target=run, daemon=True)  # a daemon: a wait never woken does not hold the exit
    thread.start()
    thread.join(120)
    assert result == [(False, "succeeded")]  # it awaited a running build, and was woken by its end


# -- a concurrent.futures.Future: what asyncio and concurrent.futures do with one -------------------------
def test_a_build_is_a_future_of_its_engine() -> None:
    build = Build(SMALL, history=False)
    assert isinstance(build, concurrent.futures.Future) and build.future is build
    assert issubclass(BuildCancelled, concurrent.futures.CancelledError)  # what a cancelled Future's result raises


def test_await_of_a_failed_build_raises_its_build_error(run_async: RunAsync) -> None:
    async def run() -> bytes:
        return await Build(b"garbage", history=False).start()

    with pytest.raises(BuildError, match="ONNX") as raised:
        run_async(run())
    assert not isinstance(raised.value, BuildCancelled)


def test_await_of_a_stopped_build_raises_build_cancelled_and_wait_async_says_cancelled(
    wait_until: WaitUntil, run_async: RunAsync
) -> None:
    build = Build(models.deep_residual(1000), history=False).start()
    wait_until(lambda: build.model.innermost_running() is not None, what="a phase")
    build.stop()

    async def run() -> tuple[str, BaseException | None]:
        try:
            await build
        except BuildCancelled as exc:
            return await build.wait_async(), exc
        return await build.wait_async(), None

    status, error = run_async(run())
    assert status == "cancelled" and isinstance(error, BuildCancelled) and error is build.error


def test_await_of_a_build_never_started_raises_at_once(run_async: RunAsync) -> None:
    async def run() -> bytes:
        return await Build(SMALL, history=False)

    with pytest.raises(RuntimeError, match="not started"):
        run_async(run())


def test_as_completed_and_wait_take_builds() -> None:
    good, bad = Build(SMALL, history=False).start(), Build(b"garbage", history=False).start()
    ended = list(concurrent.futures.as_completed([good, bad], timeout=120))
    assert sorted(ended, key=id) == sorted([good, bad], key=id)  # the builds themselves
    assert good.result() and isinstance(bad.exception(), BuildError)
    long = Build(models.deep_residual(1000), history=False).start()
    failing = Build(b"garbage", history=False).start()
    try:
        done, pending = concurrent.futures.wait([long, failing], timeout=120, return_when="FIRST_EXCEPTION")
        assert done == {failing} and pending == {long}  # woken by the failure, the long build still running
    finally:
        long.stop()
    done, pending = concurrent.futures.wait([long], timeout=120)
    assert done == {long} and long.cancelled()


def test_wrap_future_gives_the_engine_or_the_error_and_cancelling_the_task_stops_the_build(
    wait_until: WaitUntil, run_async: RunAsync
) -> None:
    async def run() -> tuple[bytes, BaseException | None, str]:
        engine = await asyncio.wrap_future(Build(SMALL, history=False).start())
        try:
            await asyncio.wrap_future(Build(b"garbage", history=False).start())
            error = None
        except BuildError as exc:
            error = exc
        long = Build(models.deep_residual(1000), history=False).start()
        task = asyncio.ensure_future(asyncio.wrap_future(long))
        await asyncio.to_thread(wait_until, lambda: long.model.innermost_running() is not None, what="a phase")
        task.cancel()  # asyncio cancels the wrapped Future: Build.cancel(), i.e. a stop
        return engine, error, await long.wait_async()

    engine, error, status = run_async(run())
    assert len(engine) > 1000 and isinstance(error, BuildError) and status == "cancelled"


def test_a_stopped_build_is_a_cancelled_future_to_asyncio(wait_until: WaitUntil, run_async: RunAsync) -> None:
    """``asyncio.wrap_future`` cancels its asyncio future when the Future was cancelled, as for any Future;
    ``await build`` raises the BuildCancelled with the reason."""
    build = Build(models.deep_residual(1000), history=False).start()
    wait_until(lambda: build.model.innermost_running() is not None, what="a phase")
    build.stop()

    async def run() -> None:
        await asyncio.wrap_future(build)

    with pytest.raises(asyncio.CancelledError):
        run_async(run())
    assert build.cancelled()


def test_a_done_callback_that_waits_does_not_wait_for_itself() -> None:
    seen: list[str] = []
    build = Build(SMALL, history=False)
    build.add_done_callback(lambda b: seen.append(b.wait(30)) if isinstance(b, Build) else None)
    assert build.start().wait(120) == "succeeded" and seen == ["succeeded"]
