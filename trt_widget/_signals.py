"""Hearing a signal on a helper thread through ``signal.set_wakeup_fd``: Python runs a handler only when the main
thread is back in Python, and the main thread may wait in C++ (TensorRT's builder, ``ray.init``) for what the
signal should stop. What ``watch`` and ``matrix``'s Ray start share."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Callable


class WakeupListener:
    """Our socket as the wakeup fd while open: a daemon thread calls ``on_sigint`` when SIGINT arrives (and passes
    every signal's byte on to the wakeup fd from before, if any). Start it with :meth:`start`."""

    def __init__(self, told: socket.socket, before: int) -> None:
        self._told = told
        self.before = before

    @classmethod
    def start(cls, on_sigint: Callable[[], None], name: str) -> WakeupListener | None:
        """Listen (main thread only; None where the wakeup fd cannot be set here, as on another thread)."""
        heard, told = socket.socketpair()
        try:
            told.setblocking(False)  # set_wakeup_fd wants a non-blocking fd
            before = signal.set_wakeup_fd(told.fileno(), warn_on_full_buffer=False)
        except (ValueError, OSError):
            heard.close()
            told.close()
            return None
        try:
            threading.Thread(target=_listen, args=(heard, before, on_sigint), name=name, daemon=True).start()
        except RuntimeError:  # no thread to be had: the wakeup fd from before goes back, ours closes
            signal.set_wakeup_fd(before)
            heard.close()
            told.close()
            return None
        return cls(told, before)

    def close(self) -> bool:
        """Put the wakeup fd from before back (unless the program set its own since: it stays), then close ours,
        which ends the thread. False (nothing done, ours stays) off the main thread."""
        try:
            current = signal.set_wakeup_fd(self.before)
        except ValueError:
            return False
        except OSError:  # the fd from before was closed meanwhile: none goes back
            current = signal.set_wakeup_fd(-1)
        if current != self._told.fileno():
            signal.set_wakeup_fd(current)
        self._told.close()
        return True


def _listen(heard: socket.socket, before: int, on_sigint: Callable[[], None]) -> None:
    with heard, contextlib.suppress(OSError):
        while data := heard.recv(512):  # until the write end closes
            if before >= 0:
                with contextlib.suppress(OSError):
                    os.write(before, data)
            if signal.SIGINT in data:
                on_sigint()
