"""Whole lines on the kernel's stdout and stderr while a watch is open in a Jupyter kernel.

TensorRT's own ``trt.Logger`` writes each log line to fd 1 in pieces ("[", "12", "/", ... "] ", "[TRT] [W] ", the
message, "\\n") when C's stdout is unbuffered (``python -u``, ``PYTHONUNBUFFERED``). The kernel forwards what it
reads from that fd as it comes, so a cell's output could end with a stray "[" above the watch list and the rest of
the line below it. While a watch is open, a relay thread reads the fds through a pipe and hands the kernel's
stream (``sys.stdout`` / ``sys.stderr``, whose ``write`` the kernel's own fd reader calls) one whole line per
``write`` (a partial line quiet for ``IDLE_S``, such as a prompt, goes on as it is). POSIX only.
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import ctypes
import os
import select
import sys
import threading
from collections.abc import Callable
from typing import TextIO

from .._status import log

IDLE_S = 1.0  # a partial line this long without more bytes is passed on as it is
MAX_LINE = 1 << 16  # a longer line is passed on in pieces of this size
JOIN_S = 2.0  # how long closing waits for the relay to pass on what is left

_lock = threading.Lock()
_users = 0
_relays: list[_Relay] = []


def cell_of(stream: object) -> object | None:
    """The Jupyter cell ``stream`` (the kernel's ``sys.stdout``/``sys.stderr``) writes to from this thread now:
    its parent header, as ipykernel 6 and 7 resolve it (None outside a kernel)."""
    try:
        return getattr(stream, "parent_header", None)
    except Exception:
        return None


def write_to_cell(stream: object, header: object | None) -> None:
    """Route what this thread writes to ``stream`` to the cell of ``header``: a thread's output otherwise goes to
    whichever cell runs when it writes (ipykernel 7.1+ routes no thread to its starting cell; 6 never did).
    ipykernel 7's ``set_thread_parent``; on 6 the same per-thread ContextVar it reads first."""
    if not header:
        return
    try:
        setter = getattr(stream, "set_thread_parent", None)
        if callable(setter):
            setter(header)
            return
        var = getattr(stream, "_parent_header", None)
        if isinstance(var, contextvars.ContextVar):
            var.set(header)
    except Exception:  # not a kernel stream we know: output goes where it went before
        log.debug("could not route a thread's output to its cell", exc_info=True)


def route_thread_to_current_cell() -> Callable[[], None]:
    """Capture the cell running now (call in the cell's thread); the function returned, called in another
    thread, sends that thread's ``print`` output to that cell."""
    headers = [(stream, cell_of(stream)) for stream in (sys.stdout, sys.stderr)]

    def enter() -> None:
        for stream, header in headers:
            write_to_cell(stream, header)

    return enter


class _Relay:
    """fd ``fd`` replaced by a pipe whose reader passes whole lines on to what ``fd`` was."""

    def __init__(self, fd: int, stream: TextIO) -> None:
        self.fd, self.stream = fd, stream
        self.cell = cell_of(stream)  # the lines go to the cell that opened the watch, not whichever runs then
        self.saved = os.dup(fd)
        read, write = os.pipe()
        try:
            os.dup2(write, fd)
        except OSError:
            os.close(read)
            os.close(self.saved)
            raise
        finally:
            os.close(write)
        self.read = read
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")  # a character cut between two pieces
        self._closing = threading.Lock()
        self._restored = self._ended = False  # the fd is back; the relay closed saved (or close() did)
        self.thread = threading.Thread(target=self._pump, name=f"trt_widget-lines-{fd}", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        """Read until every writer closed the pipe; the relay owns ``saved`` and ``read`` and closes them."""
        pending = b""
        write_to_cell(self.stream, self.cell)
        try:
            poller = select.poll()
            poller.register(self.read, select.POLLIN)
            while True:
                ready = poller.poll(IDLE_S * 1000 if pending else None)  # poll: any fd number (select: < 1024)
                if not ready:  # a partial line, quiet: on as it is
                    self._write(pending)
                    pending = b""
                    continue
                data = os.read(self.read, 65536)
                if not data:
                    break
                pending += data
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._write(line + b"\n")
                while len(pending) >= MAX_LINE:
                    self._write(pending[:MAX_LINE])
                    pending = pending[MAX_LINE:]
            self._write(pending)
        except Exception:  # never an exception out of the relay: the fd goes back at once, not at close()
            log.debug("the line relay of fd %d failed", self.fd, exc_info=True)
            with self._closing:
                if not self._restored:  # nobody reads the pipe now: the fd's writers must not block on it
                    with contextlib.suppress(OSError):
                        os.dup2(self.saved, self.fd)
            with contextlib.suppress(OSError):
                os.close(self.read)
            return
        with contextlib.suppress(OSError):
            os.close(self.read)
        with self._closing:
            self._ended = True
            if self._restored:  # the fd is back: nobody needs saved now
                os.close(self.saved)

    def _write(self, data: bytes) -> None:
        if not data:
            return
        try:
            text = self._decoder.decode(data)
            if text:
                self.stream.write(text)  # one whole line: the kernel sends it unsplit
            return
        except Exception:  # a stream that cannot take it: the bytes go where the fd went
            pass
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.saved, view) :]
            except InterruptedError:
                continue
            except OSError:  # the kernel's end is gone: what is left is lost, as it would have been
                return

    def close(self) -> None:
        """Put the fd back; the relay ends once no process writes to the pipe (a child started meanwhile may keep
        it: its lines are still passed on)."""
        with self._closing:
            os.dup2(self.saved, self.fd)
            self._restored = True
        self.thread.join(JOIN_S)
        with self._closing:
            if not self.thread.is_alive() and not self._ended:  # it failed: saved is ours to close
                self._ended = True
                os.close(self.saved)


def _flush_c_stdio() -> None:
    """Write out what C's stdio holds for the fds (TensorRT's logger buffers there when stdout is a pipe)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


def acquire() -> bool:
    """Start relaying fds 1 and 2 by whole lines (the first user); True when this call counts as a user."""
    global _users
    if os.name != "posix":
        return False
    with _lock:
        if _users == 0:
            try:
                for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
                    _relays.append(_Relay(fd, stream))
            except OSError:
                log.debug("could not relay the kernel's output by lines", exc_info=True)
                _close_all()
                return False
        _users += 1
        return True


def release() -> None:
    """One user fewer; the last one puts the fds back."""
    global _users
    with _lock:
        _users -= 1
        if _users == 0:
            _close_all()


def _close_all() -> None:
    _flush_c_stdio()
    while _relays:
        relay = _relays.pop()
        with contextlib.suppress(OSError):
            relay.close()
