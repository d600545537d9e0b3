"""The service under connection pressure: a cap on open connections below the process's file-descriptor limit, a
deadline for every request head, and one log line per condition (not one per connection).

uvicorn keeps a connection that sends half a request line forever, and when ``accept()`` runs out of file
descriptors asyncio logs a traceback for every attempt: a client without the token could hold every descriptor
and fill the log. Here each connection must complete its request head within ``header_timeout`` seconds (else
408 and closed); at ``max_connections`` a new connection closes the oldest one that is idle, still sending its
request head or not reading its answers (a client sending a real request gets in), or is refused when every one
is busy in a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .._format import escape_controls
from .._status import log

if TYPE_CHECKING:
    import os

    import uvicorn
    from starlette.types import ASGIApp
    from typing_extensions import Unpack


DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_MAX_CONNECTIONS = 1000
ACCEPT_BATCH = 64  # connections asyncio may accept in one go before any is counted (the listen backlog)
FD_RESERVE = 128  # descriptors kept for everything else: the data files, builder processes, pipes, the loop
NOTE_INTERVAL_S = 60.0
_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


def connection_cap(requested: int = DEFAULT_MAX_CONNECTIONS) -> int:
    """``requested``, lowered below the soft limit on open files so that ``accept()`` never runs out."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return requested
    return max(1, min(requested, soft - ACCEPT_BATCH - FD_RESERVE))


class Notes:
    """A log line per condition at most every ``interval`` seconds, counting the occurrences it left out."""

    def __init__(self, interval: float = NOTE_INTERVAL_S, *, label: str = "serve") -> None:
        self.interval = interval
        self.label = label
        self._last: dict[str, float] = {}
        self._left_out: dict[str, int] = {}

    def note(self, condition: str, message: str) -> None:
        now = time.monotonic()
        last = self._last.get(condition)
        if last is not None and now - last < self.interval:
            self._left_out[condition] = self._left_out.get(condition, 0) + 1
            return
        self._last[condition] = now
        more = self._left_out.pop(condition, 0)
        suffix = f" ({more:,} more since the last such line)" if more else ""
        log.warning("%s: %s%s", self.label, message, suffix)


class Guard:
    """The limits shared by every connection of one server."""

    def __init__(self, *, max_connections: int, header_timeout: float, notes: Notes | None = None) -> None:
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.notes = notes or Notes()
        self.console = False  # a server command's console (not a server thread in the user's process)

    def protocol(self) -> type[H11Protocol]:
        """An HTTP/1.1 protocol class (uvicorn's ``http=``) that keeps these limits."""
        guard = self

        class Guarded(_GuardedH11):
            pass

        Guarded.guard = guard
        return Guarded

    def admit(self, new: _GuardedH11) -> None:
        """Over the cap: close the connection waiting longest for a request head, or refuse ``new``."""
        if len(new.connections) <= self.max_connections:
            return
        live = [c for c in new.connections if isinstance(c, _GuardedH11) and not c.transport.is_closing()]
        if len(live) <= self.max_connections:  # the others are closing already
            return
        waiting = [c for c in live if c is not new and c.waited_since() is not None]
        if waiting:
            oldest = min(waiting, key=lambda c: c.waited_since() or 0.0)
            oldest.transport.abort()
            self.notes.note("cap", f"{self.max_connections:,} connections open (the limit): closing the ones idle, "
                            "still sending their request head or not reading their answers longest")  # fmt: skip
        else:
            new.transport.abort()
            self.notes.note("full", f"{self.max_connections:,} connections open, each in a request: refusing more")

    def watch_console(self) -> None:
        """Keep what clients send off the console raw (every handler of uvicorn's loggers, and for a server
        command of the root and trt_widget loggers (``console``), escapes control characters), and sum up
        uvicorn's line per malformed request head in one per condition."""
        names = _UVICORN_LOGGERS + (_COMMAND_LOGGERS if self.console else ())
        for name in names:
            for handler in logging.getLogger(name).handlers:
                if not any(isinstance(f, EscapeControls) for f in handler.filters):
                    handler.addFilter(EscapeControls())
        uvicorn_log = logging.getLogger("uvicorn.error")
        for old in [f for f in uvicorn_log.filters if isinstance(f, _InvalidRequests)]:
            uvicorn_log.removeFilter(old)  # a server started before in this process (tests): this one's notes
        uvicorn_log.addFilter(_InvalidRequests(self.notes))

    def on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        """The loop's exception handler: out of descriptors at ``accept()`` is one line, not a traceback each."""
        if str(context.get("message", "")).startswith("socket.accept() out of system resource"):
            self.notes.note("accept", f"cannot accept connections: {context.get('exception')}")
            return
        loop.default_exception_handler(context)


_UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")  # their handlers are uvicorn's own
_COMMAND_LOGGERS = ("", "trt_widget")  # "": the root (the MCP SDK's); in a user's process, the user's handlers


def _escaped(value: object) -> object:
    return value if isinstance(value, (int, float)) else escape_controls(value)


class EscapeControls(logging.Filter):
    """A handler's filter: the record's text with every control character escaped (a client's ``Host`` header
    with U+009B, a terminal's CSI, was printed as it came); its arguments stay a tuple (uvicorn's access log
    formats them one by one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        with contextlib.suppress(Exception):  # a filter that raises would lose the line
            if isinstance(record.msg, str):
                record.msg = escape_controls(record.msg)  # a library's f-string holds what the client sent
            if isinstance(record.args, tuple):
                record.args = tuple(_escaped(a) for a in record.args)
            elif isinstance(record.args, dict):
                record.args = {k: _escaped(v) for k, v in record.args.items()}
        return True


class _InvalidRequests(logging.Filter):
    """uvicorn logs "Invalid HTTP request received." for every connection that sends a malformed request head:
    one line per ``Notes`` interval instead, counting the others."""

    def __init__(self, notes: Notes) -> None:
        super().__init__()
        self.notes = notes

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith("Invalid HTTP request received"):
            self.notes.note("invalid", "invalid HTTP requests (a malformed request head): answered 400 and closed")
            return False
        return True


class ServerConfig(TypedDict, total=False):
    """The uvicorn settings trt_widget's servers pass on."""

    log_level: str | int | None
    access_log: bool
    timeout_graceful_shutdown: int | None
    ssl_certfile: str | os.PathLike[str] | None
    ssl_keyfile: str | os.PathLike[str] | None


def guarded_server(
    app: ASGIApp, guard: Guard, *, before_shutdown: Callable[[], None] | None = None, **config: Unpack[ServerConfig]
) -> uvicorn.Server:
    """A uvicorn server for ``app`` that keeps ``guard``'s limits (``before_shutdown``: called first at shutdown,
    e.g. to end long-lived streams)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            asyncio.get_running_loop().set_exception_handler(guard.on_loop_error)
            guard.watch_console()
            await super().startup(sockets=sockets)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            if before_shutdown is not None:
                before_shutdown()
            await super().shutdown(sockets=sockets)

    return Server(uvicorn.Config(app, lifespan="on", http=guard.protocol(), backlog=ACCEPT_BATCH, **config))


def connection_guard(
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT_S,
    label: str = "serve",
) -> Guard:
    """The limits of one server: ``max_connections`` lowered below ``ulimit -n``, and the request-head deadline;
    its log lines start with ``label``."""
    cap = connection_cap(max_connections)
    return Guard(max_connections=cap, header_timeout=header_timeout, notes=Notes(label=label))


class _GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline whenever the server waits on the client outside a request: for a
    request head to complete, and for the rest of a body it answered before reading (a 401, 413 or 429: the
    body is read and dropped for at most the deadline, so the client still reads the answer, then closed)."""

    guard: Guard
    waiting_since: float | None = None  # since when it is idle, sending a head or lingering (None: in a request)
    unread_since: float | None = None  # since when the client has read none of what the server is sending
    _timer: asyncio.TimerHandle | None = None

    def waited_since(self) -> float | None:
        """Since when the server waits on this client (idle, a head, a lingering body, or answers it does not
        read: a client pipelining requests without reading the answers is inside a request for ever); None when
        it is busy in a request."""
        times = [t for t in (self.waiting_since, self.unread_since) if t is not None]
        return min(times) if times else None

    def pause_writing(self) -> None:
        super().pause_writing()
        self.unread_since = time.monotonic()

    def resume_writing(self) -> None:
        super().resume_writing()
        self.unread_since = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.waiting_since = time.monotonic()
        self.guard.admit(self)
        if not transport.is_closing():
            self._arm()

    def data_received(self, data: bytes) -> None:
        before = self.conn.their_state
        super().data_received(data)
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:  # a request head has begun and is not complete, or a dropped body just ended
            if before is not h11.IDLE or self.waiting_since is None:
                self._disarm()
                self.waiting_since = time.monotonic()
            self._arm()
        elif not self._lingering():
            self.waiting_since = None
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):  # idle keep-alive, or a body nobody will read
            self.waiting_since = time.monotonic()
        if self.conn.their_state is h11.SEND_BODY:
            self._disarm()
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.waiting_since = None
        super().connection_lost(exc)

    def _lingering(self) -> bool:
        """Answered, while the request's body still comes."""
        return self.conn.their_state is h11.SEND_BODY and self.cycle is not None and self.cycle.response_complete

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = self.loop.call_later(self.guard.header_timeout, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if self._lingering():
            self.guard.notes.note("linger", "closed connections that kept sending a body after their answer for "
                                  f"{self.guard.header_timeout:g} s")  # fmt: skip
            self.transport.close()
            return
        if self.conn.their_state is not h11.IDLE or (self.cycle is not None and not self.cycle.response_complete):
            return  # inside a request: the app's own timeouts apply
        self.guard.notes.note(
            "head", f"closed connections that sent no complete request head within {self.guard.header_timeout:g} s"
        )
        with contextlib.suppress(Exception):
            self.transport.write(_TIMED_OUT)
        self.transport.close()
