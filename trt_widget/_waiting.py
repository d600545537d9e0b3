"""Waiting for a build, in the vocabulary of ``concurrent.futures.Future``: ``wait``, ``await``, ``result``,
``exception``. A mixin of :class:`~trt_widget.Build`: it reads the build's own state, declared below."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Generator
from typing import Any

from ._errors import BuildCancelled, BuildError
from ._status import FINAL, IDLE, log


def _quietly(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:  # e.g. an event loop closed before the build ended
        log.debug("a wake-up call failed", exc_info=True)


class Waiting:
    """``wait()``, ``await build``, ``result()``, ``exception()`` over the build's end events."""

    _status: str
    _lock: threading.Lock
    _done: threading.Event  # the build has ended (status final)
    _settled: threading.Event  # ... and its done callbacks have run (what wait() waits for)
    _settle_wakers: list[Callable[[], Any]]
    _thread: threading.Thread | None
    engine: bytes | None
    error: BuildError | None

    def stop(self, reason: str = "stopped by user") -> bool:  # Build's: an interrupted wait asks for a stop
        raise NotImplementedError

    def wait(self, timeout: float | None = None) -> str:
        """Block until the build ends (or ``timeout`` s pass) and return the status.

        A KeyboardInterrupt while waiting asks the build to cancel, then re-raises at once. Before
        ``start()`` there is nothing to wait for: returns "idle" at once.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        # a done callback (run on the builder thread) that waits must not wait for itself
        ended = self._done if threading.current_thread() is self._thread else self._settled
        try:
            while not ended.is_set() and self._status != IDLE:
                left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
                if left <= 0:
                    break
                ended.wait(left)
        except KeyboardInterrupt:
            self.stop("interrupted (KeyboardInterrupt)")
            # a fresh one, raised here: its traceback ends at this wait(), not in threading's lock internals
            raise KeyboardInterrupt("wait() was interrupted: the build was asked to stop") from None
        return self._status

    async def wait_async(self, poll: float | None = None) -> str:
        """Await the end of the build without blocking the event loop (lets widget messages through); wakes
        when the build ends (``poll`` is ignored, kept for compatibility).

        Interrupting or cancelling the awaiting task asks the build to cancel, then re-raises. The loop also
        wakes every 0.1 s: a kernel interrupt's SIGINT may land on another thread, and Python runs the
        handler only when the main thread runs (ipykernel 6 otherwise sees it when the build ends)."""
        if self._status == IDLE:
            return self._status
        loop = asyncio.get_running_loop()
        settled: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not settled.done():
                settled.set_result(None)

        self._when_settled(lambda: loop.call_soon_threadsafe(wake))
        try:
            while not settled.done():
                await asyncio.wait((settled,), timeout=0.1)
        except (KeyboardInterrupt, asyncio.CancelledError):
            self.stop("interrupted while awaiting")
            raise
        return self._status

    def __await__(self) -> Generator[Any, None, str]:
        return self.wait_async().__await__()

    def result(self, timeout: float | None = None) -> bytes:
        """The engine bytes; raises the build's BuildError (BuildCancelled if cancelled) or TimeoutError."""
        if self._status == IDLE:
            raise RuntimeError("the build has not started: call start() first")
        if self.wait(timeout) not in FINAL:
            raise TimeoutError(f"the build is still {self._status} after {timeout} s")
        if self.error is not None:
            raise self.error
        assert self.engine is not None
        return self.engine

    def exception(self, timeout: float | None = None) -> BuildError | None:
        """The build's error once it ended (None if it succeeded), as ``Future.exception()``: raises the
        BuildCancelled of a cancelled build, and TimeoutError when it is still running after ``timeout`` s."""
        if self._status == IDLE:
            raise RuntimeError("the build has not started: call start() first")
        if self.wait(timeout) not in FINAL:
            raise TimeoutError(f"the build is still {self._status} after {timeout} s")
        if isinstance(self.error, BuildCancelled):
            raise self.error
        return self.error

    def _when_settled(self, waker: Callable[[], Any]) -> None:
        """Call ``waker()`` once ``wait()`` would return (at once if it would now); never raises."""
        with self._lock:
            if not self._settled.is_set():
                self._settle_wakers.append(waker)
                return
        _quietly(waker)
