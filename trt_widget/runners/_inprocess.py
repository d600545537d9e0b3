"""TensorRT builds on this process's own threads (``isolation="thread"``, ``watch_call``) and the interpreter's exit.

A thread still inside TensorRT when the interpreter finalizes crashes it (SIGSEGV in TensorRT's static destructors,
or SIGABRT when the thread unwinds through C++ frames as it is stopped): at exit every such build is cancelled
and the exit waits, up to ``EXIT_WAIT_S``, for each to leave TensorRT at its next step boundary. Builds that
start after that are cancelled at their first step.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator

EXIT_WAIT_S = 60.0  # a longer step than this still crashes the exit; a crash is worse than a wait
NOTICE_AFTER_S = 1.0

_lock = threading.Lock()
_calls: dict[int, tuple[threading.Thread, Callable[[], object], threading.Event]] = {}
_exiting = threading.Event()


@contextlib.contextmanager
def tensorrt_call(cancel: Callable[[], object]) -> Iterator[None]:
    """Around one TensorRT build on a thread of this process: at the interpreter's exit ``cancel()`` is called
    and the exit waits for the block to end."""
    left = threading.Event()
    key = id(left)
    with _lock:
        _calls[key] = (threading.current_thread(), cancel, left)
    if _exiting.is_set():
        _quietly(cancel)
    try:
        yield
    finally:
        left.set()
        with _lock:
            _calls.pop(key, None)


def _quietly(fn: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):  # an exit hook must not raise
        fn()


def _after_fork() -> None:
    """In a forked child: the parent's builds and their threads are not there (its exit must not wait for them,
    nor cancel them), and the parent's lock may have been held by one of those threads."""
    global _lock, _calls, _exiting, _pid
    _lock, _calls, _exiting, _pid = threading.Lock(), {}, threading.Event(), os.getpid()


_pid = os.getpid()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def wait_for_builds_at_exit(timeout: float = EXIT_WAIT_S) -> None:
    """Cancel every TensorRT build running on another thread of this process and wait for each to leave TensorRT."""
    if os.getpid() != _pid:  # a forked child (where fork hooks did not run): the builds are its parent's
        return
    _exiting.set()
    me = threading.current_thread()
    with _lock:
        calls = [(cancel, left) for thread, cancel, left in _calls.values() if thread is not me]
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
