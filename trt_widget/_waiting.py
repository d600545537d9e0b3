"""A build as a ``concurrent.futures.Future`` of its engine bytes: ``as_completed``, ``wait``, ``add_done_callback``,
``asyncio.wrap_future`` take it as it is; ``await build`` gives the engine or raises what ``result()`` raises;
``wait()`` / ``wait_async()`` wait without raising and say the status.

One ``Condition`` (the Future's own) guards the build's state; the Future's done callbacks are the only callback
list. A base class of :class:`~trt_widget.Build`: it reads the build's state, declared below.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Generator
from concurrent.futures import Future
from concurrent.futures._base import FINISHED
from typing import TYPE_CHECKING

from ._errors import BuildCancelled, BuildError
from ._status import FINAL, IDLE, BuildStatus, log

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11

WAKE_S = 0.1  # how often a waiter wakes: Python handles a SIGINT only when the main thread runs


class Waiting(Future[bytes]):
    """``wait()``, ``await build``, ``result()``, ``exception()`` over the Future's state and condition."""

    _status: BuildStatus
    _thread: threading.Thread | None
    _done_callbacks: list[Callable[[Future[bytes]], object]]  # the Future's own list
    engine: bytes | None
    error: BuildError | None

    def __init__(self) -> None:
        super().__init__()
        self._settled = False  # the build ended and its done callbacks have run (what wait() waits for)

    def stop(self, reason: str = "stopped by user") -> bool:  # Build's: an interrupted wait asks for a stop
        raise NotImplementedError

    # -- the end, once: the Future's state, waiters and callbacks ------------------------------------------
    def _end_locked(self) -> None:
        """Mark the Future finished with the build's engine or error (the caller holds ``_condition`` and has set
        ``_status`` to a final one): ``as_completed`` and ``concurrent.futures.wait`` wake now."""
        if self.error is not None:
            self._exception = self.error
            for waiter in self._waiters:
                waiter.add_exception(self)
        else:  # the engine stays where Build keeps it (result() reads it, from output= if need be)
            for waiter in self._waiters:
                waiter.add_result(self)
        self._state = FINISHED
        self._condition.notify_all()

    def _settle(self) -> None:
        """Run the done callbacks (outside the condition: each is guarded), then let ``wait()`` return."""
        for callback in self._done_callbacks:
            callback(self)
        with self._condition:
            self._settled = True
            self._condition.notify_all()

    def add_done_callback(self, fn: Callable[[Self], object]) -> None:
        """Call ``fn(build)`` once the build has ended (at once if it has), as ``Future.add_done_callback``; it
        runs on the builder's thread, and an exception in ``fn`` (even SystemExit) is logged to the
        ``trt_widget`` logger: ``wait()`` still returns and the other callbacks still run."""

        def guarded(_future: Future[bytes]) -> None:
            try:
                fn(self)
            except BaseException:
                log.exception("exception calling done callback %r for %r", fn, self)

        super().add_done_callback(guarded)

    # -- waiting ---------------------------------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> BuildStatus:
        """Block until the build ends (or ``timeout`` s pass) and return the status; never raises the build's error.

        A KeyboardInterrupt while waiting asks the build to cancel, then re-raises at once. Before
        ``start()`` there is nothing to wait for: returns "idle" at once.
        """
        # a done callback (run on the builder thread) that waits must not wait for itself
        on_builder = threading.current_thread() is self._thread
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with self._condition:
                while self._status != IDLE and not (self._settled or (on_builder and self._state == FINISHED)):
                    left = WAKE_S if deadline is None else min(WAKE_S, deadline - time.monotonic())
                    if left <= 0:
                        break
                    # in slices: a pending Ctrl-C (a signal flag, not always an interrupted system call) is raised
                    # between two, not only at the end of the build
                    self._condition.wait(left)
                return self._status
        except KeyboardInterrupt:
            self.stop("interrupted (KeyboardInterrupt)")
            # a fresh one, raised here: its traceback ends at this wait(), not in threading's lock internals
            raise KeyboardInterrupt("wait() was interrupted: the build was asked to stop") from None

    async def wait_async(self, poll: float = WAKE_S) -> BuildStatus:
        """Await the end of the build without blocking the event loop (widget messages get through) and return the
        status; never raises the build's error. Woken by the end; it also wakes every ``poll`` s, so that a kernel
        interrupt's SIGINT, which may land on another thread, is handled while it awaits.

        Interrupting or cancelling the awaiting task asks the build to cancel, then re-raises."""
        if self._status == IDLE:
            return self._status
        loop = asyncio.get_running_loop()
        settled: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not settled.done():
                settled.set_result(None)

        def on_done(_build: Future[bytes]) -> None:  # after the callbacks added before it: the widget's, the events'
            try:
                loop.call_soon_threadsafe(wake)
            except RuntimeError:  # the loop closed before the build ended
                log.debug("a wake-up call failed", exc_info=True)

        self.add_done_callback(on_done)  # called at once where the build already ended: then wait for the settling
        try:
            # the end wakes it; the done callbacks added before it (a server's "ended at" stamp) may still be running
            # on the builder thread where the build had ended already, so it returns only once they have (settled)
            while not (settled.done() and self._settled):
                await asyncio.wait((settled,), timeout=max(poll, 0.01) if not settled.done() else 0.005)
        except (KeyboardInterrupt, asyncio.CancelledError):
            self.stop("interrupted while awaiting")
            raise
        return self._status

    def __await__(self) -> Generator[object, None, bytes]:
        """``await build``: the engine bytes, or the BuildError (BuildCancelled) that ``result()`` raises."""
        return self._result_async().__await__()

    async def _result_async(self) -> bytes:
        await self.wait_async()
        return self.result(0)

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
