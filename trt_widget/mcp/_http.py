"""Streamable HTTP for the MCP server: every request needs ``Authorization: Bearer <token>`` (compared in
constant time, as ``trt-widget serve``); 127.0.0.1 unless told otherwise."""

from __future__ import annotations

import json
import logging
import secrets
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, TypedDict

from .._files import read_small_text
from .._json import check_text
from ._jsonrpc import BAD_ID, bad_request_id, json_members
from ._stream import STREAM_KEY, RequestStream

if TYPE_CHECKING:
    import uvicorn
    from mcp.server.mcpserver import MCPServer
    from starlette.types import ASGIApp, Message, Receive, Scope, Send
    from typing_extensions import Unpack

    from ..serve._guard import ServerConfig


PATH = "/mcp"
log = logging.getLogger("trt_widget.mcp")


class TokenError(ValueError):
    """A token file that cannot be used."""


def read_token(token_file: str | None) -> tuple[str, bool]:
    """(token, generated): the token in ``token_file`` (stripped), or a new random one."""
    if token_file is None:
        return secrets.token_urlsafe(32), True
    try:
        token = read_small_text(token_file, secret=True).strip()
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError, as is a '~user' with no user
        raise TokenError(f"cannot read --token-file {token_file}: {exc}") from None
    if not token or any(c.isspace() or not c.isprintable() for c in token):
        raise TokenError("the token must be non-empty printable text without spaces")
    if len(token) < 16:
        print("trt-widget mcp: warning: a token shorter than 16 characters is easy to guess", file=sys.stderr)
    return token, False


class BearerAuth:
    """ASGI middleware: a valid bearer token, or 401 before the MCP app sees the request."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

        self.app = app
        self.token = token.encode()
        self.max_body = DEFAULT_MAX_REQUEST_BODY_SIZE  # the SDK's own bound, which this check runs before

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        presented: bytes | None = None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, credentials = value.partition(b" ")
                presented = credentials.strip() if scheme.lower() == b"bearer" else b""
        if presented is None or not secrets.compare_digest(presented, self.token):
            message = "missing bearer token: send 'Authorization: Bearer <token>'" if presented is None else (
                "invalid token")  # fmt: skip
            challenge = 'Bearer realm="trt-widget"' + ("" if presented is None else ', error="invalid_token"')
            body = json.dumps({"error": message}).encode()
            headers = [(b"content-type", b"application/json"), (b"www-authenticate", challenge.encode()),
                       (b"content-length", str(len(body)).encode())]  # fmt: skip
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        stream = RequestStream()
        if scope.get("method") == "POST":  # the SDK reads the whole body too (``request.body()``), up to its bound
            buffered = await _buffered(scope, receive, self.max_body)
            if buffered is None:
                await _send_too_large(send)
                return
            body, receive = buffered
            try:  # the SDK reads UTF-8 only; a str counted, not bytes another encoding would miscount (L22-1)
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                log.warning("mcp: answered a body that is not UTF-8")
                error = {"code": -32700, "message": "Parse error: the body is not UTF-8 JSON"}
                await _send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
                return
            try:
                check_text(text)  # before any decoding: 4 MiB of [{},{},...] held ~80x its size (W1)
            except ValueError as exc:
                log.warning("mcp: answered a body of %s", exc)
                error = {"code": -32600, "message": f"Invalid Request: the body holds {exc}"}
                await _send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
                return
            if bad_request_id(json_members(text)):  # the SDK would take it for a notification: 202, never answered
                log.warning("mcp: answered a request whose id is not a string or an integer")
                error = {"code": -32600, "message": BAD_ID}
                await _send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
                return

        async def tracked_receive() -> Message:
            message = await receive()
            if message.get("type") == "http.disconnect" and not stream.answered:
                stream.gone.set()
            return message

        async def tracked_send(message: Message) -> None:
            if message.get("type") == "http.response.body" and not message.get("more_body", False):
                stream.answered = True
            await send(message)

        await self.app({**scope, STREAM_KEY: stream}, tracked_receive, tracked_send)


async def _buffered(scope: Scope, receive: Receive, limit: int) -> tuple[bytes, Receive] | None:
    """A request's whole body, and a ``receive`` that gives it again, then what ``receive`` gives; None (nothing
    more read) once the body says or proves it is longer than ``limit`` bytes, as the SDK's own limit would."""
    for name, value in scope.get("headers", []):
        declared = value.strip()
        if name == b"content-length" and declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
            return None
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went: the app hears it
            first: Message = message
            break
        part = message.get("body", b"")
        size += len(part)
        if size > limit:
            return None
        parts.append(part)
        if not message.get("more_body", False):
            first = {"type": "http.request", "body": b"".join(parts), "more_body": False}
            break
    body: bytes = first["body"] if first["type"] == "http.request" else b"".join(parts)  # one copy: joined once
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return first

    return body, replay


async def _send_too_large(send: Send) -> None:
    """413, as the SDK's ``RequestBodyLimitMiddleware`` answers it."""
    log.warning("mcp: refused a request body larger than the SDK's limit")
    body = b"Request body too large"
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _send_json(send: Send, status: int, value: object) -> None:
    body = json.dumps(value).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def app(server: MCPServer, token: str, host: str = "127.0.0.1") -> BearerAuth:
    """The MCP server's streamable HTTP app at ``/mcp``, behind the bearer token."""
    return BearerAuth(server.streamable_http_app(streamable_http_path=PATH, host=host), token)


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


class _Limits(TypedDict, total=False):
    max_connections: int
    header_timeout: float


def uvicorn_server(asgi: ASGIApp, *, max_connections: int | None = None, header_timeout: float | None = None,
                   console: bool = False, **config: Unpack[ServerConfig]) -> uvicorn.Server:  # fmt: skip
    """A uvicorn server with the build service's connection limits (a cap below ``ulimit -n``, a deadline for
    every request head, one log line per condition): a client without the token cannot hold every descriptor."""
    from ..serve import connection_guard, guarded_server

    limits: _Limits = {}  # the guard's own defaults for what is not given
    if max_connections is not None:
        limits["max_connections"] = max_connections
    if header_timeout is not None:
        limits["header_timeout"] = header_timeout
    guard = connection_guard(**limits, label="mcp")
    guard.console = console  # the command's own console: every log line escaped
    return guarded_server(asgi, guard, **config)


class HttpServerThread:
    """The MCP server over HTTP on a background thread (tests, benchmarks):
    ``with HttpServerThread() as s: s.url, s.token``."""

    def __init__(
        self,
        server: MCPServer | None = None,
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_connections: int | None = None,
        header_timeout: float | None = None,
    ):
        from ._server import create_server

        self.token = token or secrets.token_urlsafe(32)
        self.server = server if server is not None else create_server()
        self._sock = listen(host, port)
        self.url = f"http://{host}:{self._sock.getsockname()[1]}{PATH}"
        self._uvicorn = uvicorn_server(app(self.server, self.token, host), log_level="warning", access_log=False,
                                       max_connections=max_connections, header_timeout=header_timeout)  # fmt: skip
        self._thread = threading.Thread(target=self._run, name="trt_widget-mcp-http", daemon=True)

    def _run(self) -> None:
        self._uvicorn.run(sockets=[self._sock])

    def start(self, timeout: float = 30.0) -> HttpServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the MCP HTTP server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(timeout)
        self._sock.close()

    def __enter__(self) -> HttpServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
