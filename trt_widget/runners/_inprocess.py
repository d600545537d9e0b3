"""TensorRT builds on this process's own threads (``isolation="thread"``, ``watch_call``) and the interpreter's exit.

A thread still inside TensorRT when the interpreter finalizes crashes it (SIGSEGV in TensorRT's static destructors,
or SIGABRT when the thread unwinds through C++ frames as it is stopped): at exit every such build is cancelled
and the exit waits, up to ``EXIT_WAIT_S``, for each to leave TensorRT at its next step boundary. Builds that
start after that are cancelled at their first step.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

from .._fork import PerProcess

EXIT_WAIT_S = 60.0  # a longer step than this still crashes the exit; a crash is worse than a wait
NOTICE_AFTER_S = 1.0


class _Calls:
    """This process's builds inside TensorRT, by key: the thread, its ``cancel`` and the event set as it leaves."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[int, tuple[threading.Thread, Callable[[], object], threading.Event]] = {}
        self.exiting = threading.Event()


# a forked child has none of its parent's builds or their threads (its exit must not wait for them, nor cancel
# them), and the parent's lock may have been held by one of those threads
_state = PerProcess(_Calls)


@contextlib.contextmanager
def tensorrt_call(cancel: Callable[[], object]) -> Iterator[None]:
    """Around one TensorRT build on a thread of this process: at the interpreter's exit ``cancel()`` is called
    and the exit waits for the block to end."""
    state = _state.get()
    left = threading.Event()
    key = id(left)
    with state.lock:
        state.calls[key] = (threading.current_thread(), cancel, left)
    if state.exiting.is_set():
        _quietly(cancel)
    try:
        yield
    finally:
        left.set()
        with state.lock:
            state.calls.pop(key, None)


def _quietly(fn: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):  # an exit hook must not raise
        fn()


def wait_for_builds_at_exit(timeout: float = EXIT_WAIT_S) -> None:
    """Cancel every TensorRT build running on another thread of this process and wait for each to leave TensorRT."""
    state = _state.get()  # in a forked child: its own builds, none of its parent's
    state.exiting.set()
    me = threading.current_thread()
    with state.lock:
        calls = [(cancel, left) for thread, cancel, left in state.calls.values() if thread is not me]
    for cancel, _ in calls:
        _quietly(cancel)
    deadline = time.monotonic() + timeout
    said = False
    for _, left in calls:
        while not left.wait(min(NOTICE_AFTER_S, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                return
            if not said:
                said = True
                with contextlib.suppress(Exception):
                    sys.stderr.write(
                        "trt_widget: waiting for TensorRT to reach its next step boundary before exiting "
                        f"(at most {timeout:g} s; a build cancels only there)\n"
                    )
                    sys.stderr.flush()


# threading's exit hooks run before the interpreter joins its threads and long before it finalizes
getattr(threading, "_register_atexit", lambda fn: None)(wait_for_builds_at_exit)
