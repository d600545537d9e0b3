"""The build service's ASGI app (Starlette): the HTTP API, bearer-token auth and the SSE event streams.

Every route needs ``Authorization: Bearer <token>`` (compared in constant time); only the page at ``GET /`` also
takes ``?token=`` (a browser cannot send a header when it navigates). Every refusal is JSON ``{"error": ...}``
with its HTTP status. See :mod:`trt_widget.serve` for the endpoints.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, cast
from urllib.parse import parse_qs

import anyio
from sse_starlette.sse import EventSourceResponse, SendTimeoutError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._json import JSON, JSONObject
from .._status import log
from ._page import page
from ._store import UPLOAD, BuildRecord, BuildStore, Busy
from ._upload import UploadError, check_length, engine_filename, receive, stalls_after

if TYPE_CHECKING:
    from .._build import Build
    from .._options import BuildOptionsDict

FORCE_WORDS = ("1", "true", "yes")


def error(code: int, message: str, **extra: JSON) -> JSONResponse:
    """A refusal: ``{"error": message, ...}`` with HTTP status ``code``."""
    headers = {"Retry-After": "5"} if code in (429, 503) else None
    return JSONResponse({"error": message, **extra}, status_code=code, headers=headers)


class TokenAuth:
    """ASGI middleware: a valid bearer token or 401, before any route runs; security headers on every response."""

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        presented = _bearer(scope)
        if presented is None and scope["path"] == "/" and scope["method"] in ("GET", "HEAD"):
            presented = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token") or [None])[0]
            presented = presented.encode() if presented is not None else None
        if presented is None or not secrets.compare_digest(presented, self.token):
            message = (
                "missing bearer token: send 'Authorization: Bearer <token>'" if presented is None else ("invalid token")
            )
            challenge = 'Bearer realm="trt-widget"' + ("" if presented is None else ', error="invalid_token"')
            response = JSONResponse({"error": message}, status_code=401, headers={"WWW-Authenticate": challenge})
            await response(scope, receive, self._secured(send))
            return
        await self.app(scope, receive, self._secured(send))

    @staticmethod
    def _secured(send: Send) -> Send:
        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                for name, value in ((b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-store")):
                    if name not in names:
                        headers.append((name, value))
                message = {**message, "headers": headers}
            await send(message)

        return secured


def _bearer(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, credentials = value.partition(b" ")
            return credentials.strip() if scheme.lower() == b"bearer" else b""
    return None


BODY_TIMEOUT_S = 30.0  # an upload that sends nothing for this long is refused (408) and frees its slot
MIN_UPLOAD_RATE = 16 * 1024  # B/s over each body-timeout window: a trickling upload is refused (408) too


def create_app(
    store: BuildStore,
    *,
    token: str,
    max_upload: int,
    send_timeout: float = 30.0,
    ping: float = 15.0,
    body_timeout: float = BODY_TIMEOUT_S,
    min_upload_rate: float = MIN_UPLOAD_RATE,
    executor: str = "local",
    ray_address: str | None = None,
) -> ASGIApp:
    """The ASGI app serving ``store``: routes, auth, JSON errors, and the lifespan that stops builds at exit.
    ``executor``: "local" (a warm builder process per build) or "ray" (a Ray task per build, ``ray_address``)."""
    uvicorn_log = logging.getLogger("uvicorn.error")
    if _dropped not in uvicorn_log.filters:
        uvicorn_log.addFilter(_dropped)

    def lookup(request: Request) -> BuildRecord:
        record = store.get(request.path_params["build_id"])
        if record is None:
            raise HTTPException(404, "no build with this id")
        return record

    async def index(request: Request) -> Response:
        return page()

    async def list_builds(request: Request) -> Response:
        try:
            limit = min(max(int(request.query_params.get("limit", "200")), 1), 10_000)
        except ValueError:
            return error(400, "limit must be an integer")
        builds = [record.summary() for record in store.records()[:limit]]
        limits = {"max_upload": max_upload, "max_concurrent": store.max_concurrent, "running": store.active}
        return JSONResponse({"builds": builds, **limits})

    async def create(request: Request) -> Response:
        if store.closing:
            return error(503, "the server is shutting down")
        try:
            check_length(request.headers, max_bytes=max_upload)
            store.reserve()
        except UploadError as exc:
            return error(exc.status, exc.message)
        except Busy as exc:
            return error(429, f"too many builds: {exc}; retry when one has ended")
        build_id, directory = store.new_dir()
        try:
            chunks = stalls_after(request.stream(), body_timeout, min_upload_rate)
            upload = await receive(
                request.headers, request.query_params, chunks, directory / UPLOAD, max_bytes=max_upload
            )
            build = await anyio.to_thread.run_sync(
                _make_build, directory / UPLOAD, upload.name, upload.options, executor, ray_address, store.engine_cache
            )
            from .._events import attach_events

            record = store.launch(build_id, build, name=upload.name, options=upload.options, attach=attach_events)
        except BaseException as exc:
            store.release()
            store.discard(directory)
            if isinstance(exc, UploadError):
                return error(exc.status, exc.message)
            if isinstance(exc, ClientDisconnect):
                return error(400, "the client disconnected during the upload")
            if isinstance(exc, (TypeError, ValueError)):
                return error(400, store.scrub(f"bad build options: {exc}"))
            if isinstance(exc, ImportError):
                return error(503, f"the server cannot build: {exc}")
            if isinstance(exc, OSError):  # the data disk (meta.json), said without the server's paths
                full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
                return error(507 if full else 500, "the server's data disk is full" if full else "the server "
                             f"could not store the build: {exc.strerror or 'I/O error'}")  # fmt: skip
            raise
        links = {"url": f"/builds/{build_id}", "events": f"/builds/{build_id}/events"}
        body = {"id": build_id, "status": record.status, "name": upload.name, **links}
        return JSONResponse(body, status_code=201, headers={"Location": links["url"]})

    async def show(request: Request) -> Response:
        return JSONResponse(lookup(request).summary(timings=True))

    async def cancel(request: Request) -> Response:
        record = lookup(request)
        force = request.query_params.get("force", "").lower() in FORCE_WORDS
        reason = await _reason(request, body_timeout)
        build = record.build
        status = record.status
        if build is None or status not in ("queued", "running", "cancelling"):
            return error(409, f"the build already ended ({status}): nothing to cancel", status=status)
        asked = build.stop(reason)
        if force and build.status == "cancelling":
            build.stop(reason)  # a second stop while cancelling terminates the builder now
        return JSONResponse({"id": record.id, "status": build.status, "asked": asked, "force": force}, status_code=202)

    async def engine(request: Request) -> Response:
        record = lookup(request)
        found = record.engine()
        name = record.meta.get("name")
        filename = engine_filename(name if isinstance(name, str) else "", record.id)
        headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
        if isinstance(found, bytes):
            return Response(found, media_type="application/octet-stream", headers=headers)
        if found is not None:
            return FileResponse(found, media_type="application/octet-stream", headers=headers)
        status = record.status
        if status == "succeeded":
            return error(410, "the engine file of this build is missing from the server's data directory")
        return error(409, f"no engine: the build is {status}", status=status)

    async def events(request: Request) -> Response:
        record = lookup(request)
        text = request.headers.get("last-event-id", "").strip() or "0"
        if not (text.isascii() and text.isdigit() and len(text) <= 18):  # not '²' or '٣', which int() refuses
            return error(400, f"Last-Event-ID must be an event number, got {text[:40]!r}")
        cursor = int(text)
        total = await anyio.to_thread.run_sync(record.event_count)  # a stored log is read off the event loop
        if cursor > total:
            return error(400, f"Last-Event-ID {cursor} is beyond this build's {total} events so far")
        return _EventStream(
            _stream(store, record, cursor),
            ping=ping,
            send_timeout=send_timeout,
            sep="\n",
            headers={"Cache-Control": "no-store"},
            shutdown_grace_period=2.0,  # on SIGINT/SIGTERM: time for the stream's closing notice
        )

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        detail = getattr(exc, "detail", "") or "error"
        return error(status, detail if status != 404 or detail != "Not Found" else "no such endpoint")

    async def crashed(request: Request, exc: Exception) -> Response:  # its text may name server paths: logged only
        log.error("serve: %s %s failed", request.method, request.url.path, exc_info=exc)
        return error(500, f"internal error ({type(exc).__name__}); the server's log has the details")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store.bind_loop(asyncio.get_running_loop())
        await anyio.to_thread.run_sync(_prewarm, executor, ray_address)
        store.ready.set()
        yield
        store.close_streams()
        await anyio.to_thread.run_sync(store.stop_running)

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/builds", list_builds, methods=["GET"]),
        Route("/builds", create, methods=["POST"]),
        Route("/builds/{build_id}", show, methods=["GET"]),
        Route("/builds/{build_id}/events", events, methods=["GET"]),
        Route("/builds/{build_id}/cancel", cancel, methods=["POST"]),
        Route("/builds/{build_id}/engine", engine, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: not_found, Exception: crashed},
    )
    return TokenAuth(app, token=token)


class _DroppedSubscribers(logging.Filter):
    """uvicorn logs ERROR "ASGI callable returned without completing response." when a response ends early, as
    a subscriber's stream does when this server drops it on purpose (it stopped reading): that one is expected,
    said at INFO by ``_EventStream``. Each drop lets one such line pass unlogged within a second."""

    MESSAGE = "ASGI callable returned without completing response."

    def __init__(self) -> None:
        super().__init__()
        self.drops: list[float] = []

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        self.drops = [t for t in self.drops if now - t < 1.0]
        if self.drops and record.getMessage() == self.MESSAGE:
            self.drops.pop(0)
            return False
        return True


_dropped = _DroppedSubscribers()


class _EventStream(EventSourceResponse):
    """An SSE response whose subscriber is dropped, quietly, when one write waits longer than ``send_timeout``
    (it stopped reading); it can reconnect with Last-Event-ID and resume from the stored log."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except SendTimeoutError:
            _dropped.drops.append(time.monotonic())
            log.info("serve: an event-stream subscriber stopped reading for %g s: disconnected", self.send_timeout)


async def _stream(store: BuildStore, record: BuildRecord, cursor: int) -> AsyncIterator[bytes]:
    """The SSE body: the log from ``cursor`` on, then live until ``build_end``; a notice if the server stops."""
    record.subscribers += 1
    try:
        yield b"retry: 2000\n\n"
        while True:
            frames, final, changed = record.read(cursor)
            if frames:
                cursor += len(frames)
                yield b"".join(frames)
                continue
            if final:
                return
            if store.closing:
                notice = {
                    "reason": "shutdown",
                    "message": f"the server is shutting down; reconnect with Last-Event-ID: {cursor} to resume",
                }
                yield f"event: server\ndata: {json.dumps(notice)}\n\n".encode()
                return
            await changed.wait()
    finally:
        record.subscribers -= 1
        record.evict()


async def _reason(request: Request, timeout: float) -> str:
    """The cancel's reason: ``{"reason": "..."}`` in the body, marked "(over HTTP)", if any (untrusted, shortened;
    a body that does not come within ``timeout`` s is ignored); else "cancelled over HTTP"."""
    reason = "cancelled over HTTP"
    given = None
    with anyio.move_on_after(timeout):
        try:
            body = await _small_body(request) if int(request.headers.get("content-length") or 0) <= 4096 else b""
            given = json.loads(body).get("reason") if body.strip() else None
        except (ValueError, AttributeError, RecursionError, ClientDisconnect):  # RecursionError: 4,000 brackets
            given = None
    if isinstance(given, str) and given.strip():  # said once: "cancelled: <reason> (over HTTP)", not "cancelled" x3
        reason = "".join(c for c in given if c.isprintable())[:200].strip() + " (over HTTP)"
    return reason


async def _small_body(request: Request, limit: int = 4096) -> bytes:
    """The request's body if it is at most ``limit`` bytes, else b"" (read no further): a chunked body has no
    Content-Length to refuse it by, and ``request.body()`` held all of it (1.8 GB in 8 s)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return b""
    return bytes(body)


UPLOAD_HINT = (
    "This server reads no file an uploaded model names: embed the weights in the ONNX file "
    "(onnx.save_model(onnx.load('model.onnx'), 'embedded.onnx'), for models under 2 GB) and upload that"
)


def _make_build(
    path: Path, name: str, options: JSONObject, executor: str, ray_address: str | None, engine_cache: Path
) -> Build:
    """A Build of the uploaded file in a builder process or a Ray task (on a worker thread: it may import TensorRT);
    ``reuse: true`` uses the service's ``engine_cache`` under ``--data``, not the server user's cache folder."""
    from .._build import Build
    from .._engine import ModelSource

    runner = None
    if executor == "ray":
        from ..ray import RayRunner

        runner = RayRunner(address=ray_address)
    # the names were checked by parse_options; Build checks the values (TypeError / ValueError: a 400)
    checked: BuildOptionsDict = {**cast("BuildOptionsDict", options), "isolation": "process"}  # isolation: refused
    if checked.get("reuse"):  # reuse_dir: refused over HTTP (a server path)
        checked["reuse_dir"] = str(engine_cache)
    build = Build(str(path), history=False, resources=False, runner=runner, **checked)
    # events and pages show the label, never a server path; an upload may name no external data (no directory)
    build.source = ModelSource("path", str(path), name, None, UPLOAD_HINT)
    return build


def _prewarm(executor: str, ray_address: str | None) -> None:
    """Import TensorRT and start a builder process (or connect to Ray) now, so the first build does not wait."""
    try:
        from .._build import Build  # noqa: F401

        if executor == "ray":
            from ..ray import ensure_ray

            ensure_ray(ray_address)
        else:
            from ..runners import pool

            pool.prewarm()
    except ImportError as exc:  # no backend: the server still starts; builds answer 503 with the reason
        from .._status import log

        log.warning("serve: no TensorRT backend: %s", exc)
