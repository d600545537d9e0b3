"""The wakeup-fd listener ``watch`` and matrix's Ray start share (trt_widget/_signals.py)."""

from __future__ import annotations

import signal
import socket

from trt_widget._signals import WakeupListener


def test_closing_puts_back_the_fd_from_before_or_none_when_that_one_was_closed_meanwhile() -> None:
    mine, theirs = socket.socketpair()
    theirs.setblocking(False)
    previous = signal.set_wakeup_fd(theirs.fileno())
    try:
        listener = WakeupListener.start(lambda: None, "test-wakeup")
        assert listener is not None and listener.before == theirs.fileno()
        assert listener.close() and signal.set_wakeup_fd(theirs.fileno()) == theirs.fileno()  # put back
        listener = WakeupListener.start(lambda: None, "test-wakeup")
        assert listener is not None
        theirs.close()  # the program closed its own fd while we listened: set_wakeup_fd(it) raises OSError
        assert listener.close()
        assert signal.set_wakeup_fd(-1) == -1  # none is left set, and ours is closed
    finally:
        signal.set_wakeup_fd(previous)
        mine.close()
        theirs.close()
