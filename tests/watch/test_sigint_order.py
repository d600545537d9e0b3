"""Watches closed out of order (interleaved coroutines, an ExitStack) restore SIGINT: the program's own handler
is called again once every watch has closed,, and Ctrl-C reaches it while others stay open."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

import trt_widget


@pytest.fixture
def own_handler() -> Iterator[list[int]]:
    calls: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        yield calls
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupt() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    threading.Event().wait(0.05)  # the handler runs on the main thread at its next bytecode


@pytest.mark.parametrize("order", [(0, 1), (1, 0), (1, 2, 0), (0, 2, 1)])
def test_the_programs_handler_is_back_after_watches_close_in_any_order(
    own_handler: list[int], order: tuple[int, ...]
) -> None:
    handler = signal.getsignal(signal.SIGINT)
    watches = [trt_widget.watch(display=False) for _ in order]
    for w in watches:
        w.__enter__()
    for index in order:
        watches[index].close()
    assert signal.getsignal(signal.SIGINT) is handler
    interrupt()
    assert own_handler == [signal.SIGINT]


def test_with_watches_still_open_ctrl_c_without_a_running_build_reaches_the_program(
    own_handler: list[int],
) -> None:
    first, second = trt_widget.watch(display=False), trt_widget.watch(display=False)
    first.__enter__()
    second.__enter__()
    first.close()  # out of order: the second is still open
    interrupt()
    assert own_handler == [signal.SIGINT]
    second.close()
    interrupt()
    assert own_handler == [signal.SIGINT, signal.SIGINT]
