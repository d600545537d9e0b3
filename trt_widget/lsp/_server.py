"""The language server (pygls): ``trtWidget.build`` runs a build with server-initiated work-done progress,
``trtWidget.stop`` and ``trtWidget.builds`` stop and list builds.

A build's progress: ``window/workDoneProgress/create``, then begin (cancellable), a report per change (the
running phase path, a percentage that never goes back; at most 10 a second), end with the outcome. The client's
``window/workDoneProgress/cancel`` stops the build (the default builder process ends within ~0.2 s). A failed
build publishes diagnostics on its ONNX file (the parser's node and message); ``window/showMessage`` says how
every build ended. Handlers wait through :mod:`trt_widget._follow`, never blocking the event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from .._follow import Follower, ended, path_fraction, path_label, running_path
from .._json import check_text, good_id
from ..mcp import PROGRESS_INTERVAL_S, BadInput, BuildDescription, BuildRegistry

if TYPE_CHECKING:
    from .. import Build
    from ._framing import FramedInput

log = logging.getLogger("trt_widget.lsp")
BUILD, STOP, BUILDS = "trtWidget.build", "trtWidget.stop", "trtWidget.builds"
CANCEL = "$/cancelRequest"
CREATE_TIMEOUT_S = 5.0  # an editor that does not answer window/workDoneProgress/create gets no progress
SHUTDOWN_WAIT_S = 5.0  # at shutdown: how long running build commands get to answer (a stop takes ~0.2 s)
SOURCE = "trt-widget"
_NODE = re.compile(r"""node (['"])(?P<node>.*?)\1(?: \((?P<op>[^)]*)\))?: (?P<text>.*)""", re.S)
_PARSE = re.compile(r"could not parse .* as ONNX: (?P<reason>.*)", re.S)


class Refused(JsonRpcInvalidParams):
    """A command's input refused (JSON-RPC -32602, "Invalid params"): the sentence, never a Python traceback."""


def _one_line(record: logging.LogRecord) -> bool:
    """pygls logs every exception a command raises with its traceback: a refused input (ours, or pygls's unknown
    command) is one warning line. Its
    "Unable to deserialize message" and the traceback in it are dropped: ``_dispatch`` logs one line instead."""
    if isinstance(record.msg, str) and record.msg.startswith("Unable to deserialize message"):
        return False
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, JsonRpcInvalidParams):  # Refused is one
        record.msg, record.args, record.exc_info, record.exc_text = "refused: %s", (exc.message,), None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


def _log_refusals_in_one_line() -> None:
    rpc = logging.getLogger("pygls.protocol.json_rpc")
    if _one_line not in rpc.filters:
        rpc.addFilter(_one_line)


def diagnostics(error: str) -> list[types.Diagnostic]:
    """One diagnostic per parser problem in a build error (``node 'x' (Op): message``), else one for it all."""
    match = _PARSE.match(error)
    parts = match.group("reason").split("; ") if match else [error]
    found: list[types.Diagnostic] = []
    for part in parts:
        node = _NODE.match(part)
        if node is None:
            continue
        found.append(_diagnostic(part, code=node.group("node")))
    return found or [_diagnostic(error)]


def _diagnostic(message: str, code: str | None = None) -> types.Diagnostic:
    start = types.Position(line=0, character=0)  # an ONNX file is binary: no line to point at
    return types.Diagnostic(
        range=types.Range(start=start, end=start),
        message=message,
        severity=types.DiagnosticSeverity.Error,
        source=SOURCE,
        code=code,
    )


def _outcome(result: BuildDescription) -> tuple[str, types.MessageType]:
    head = (
        f"TensorRT build {result['build_id']} of {result['model']} {result['status']} after {result['build_s']:.1f} s"
    )
    if result["status"] == "succeeded":
        where = f": {result['engine_path']} ({result['engine_bytes']:,} B)" if result["engine_path"] else ""
        return head + where, types.MessageType.Info
    if result["status"] == "failed":
        return f"{head}: {result['error']}", types.MessageType.Error
    return (f"{head}: {result['detail']}" if result["detail"] else head), types.MessageType.Warning


def create_server(
    registry: BuildRegistry | None = None, *, progress_interval: float = PROGRESS_INTERVAL_S
) -> LanguageServer:
    """A pygls ``LanguageServer`` with the trtWidget commands."""
    builds = registry if registry is not None else BuildRegistry()
    server = LanguageServer("trt-widget", __version__, protocol_cls=_Protocol)
    _log_refusals_in_one_line()
    commands: set[asyncio.Future[object]] = set()  # trtWidget.build requests not yet answered

    def quietly(send: Callable[..., object], *args: object) -> None:
        """Send a notification; an editor that went away must not end (or fail) the build."""
        try:
            send(*args)
        except Exception:
            log.warning("could not notify the editor", exc_info=True)

    def say(message: str, kind: types.MessageType) -> None:
        quietly(server.window_show_message, types.ShowMessageParams(type=kind, message=message))

    @server.command(BUILD)
    async def build(ls: LanguageServer, *arguments: object) -> BuildDescription:
        """Arguments: the ONNX file's URI (or path), then optionally {options, budget, output}."""
        if not arguments or not isinstance(arguments[0], str):
            raise Refused(f"{BUILD} needs the ONNX file's URI as its first argument")
        settings = arguments[1] if len(arguments) > 1 else {}
        if not isinstance(settings, dict):
            raise Refused(f"{BUILD}: its second argument must be an object {{options, budget, output}}")
        unknown = sorted(set(settings) - {"options", "budget", "output"})
        if unknown:
            raise Refused(f"{BUILD}: unknown setting(s) {unknown}; use options, budget, output")
        uri = arguments[0]
        path = to_fs_path(uri) if "://" in uri else uri
        uri = uri if "://" in uri else from_fs_path(uri) or uri
        try:
            build_id, job = builds.create(path or uri, options=settings.get("options"), budget=settings.get("budget"),
                                          output=settings.get("output"), held=True)  # fmt: skip
        except BadInput as exc:
            say(f"TensorRT build not started: {exc}", types.MessageType.Error)
            raise Refused(str(exc)) from None
        try:
            return await follow(ls, build_id, job, path or uri, uri)
        finally:
            builds.release(build_id)

    async def follow(ls: LanguageServer, build_id: str, job: Build, label: str, uri: str) -> BuildDescription:
        """The build command's wait: work-done progress while it builds, its outcome once it ended."""
        follower = Follower(job, interval=progress_interval)
        this = asyncio.current_task()
        if this is not None:
            commands.add(this)
            this.add_done_callback(commands.discard)
        token: str | None = f"trtWidget.build/{build_id}"
        window = ls.client_capabilities.window
        if window is None or not window.work_done_progress:
            token = None
        if token is not None:
            try:
                await asyncio.wait_for(ls.work_done_progress.create_async(token), CREATE_TIMEOUT_S)
            except Exception:  # the client refused, or did not answer: build without progress
                token = None
        try:
            builds.start(build_id)
        except BadInput as exc:
            follower.close()
            say(f"TensorRT build not started: {exc}", types.MessageType.Error)
            raise ValueError(str(exc)) from None
        if token is not None:
            cancel = ls.work_done_progress.tokens.get(token)
            if cancel is not None:
                cancel.add_done_callback(lambda f: f.cancelled() and builds.stop(build_id, "cancelled in the editor"))
            quietly(
                ls.work_done_progress.begin,
                token,
                types.WorkDoneProgressBegin(title="TensorRT build", message=label, cancellable=True, percentage=0),
            )
        try:
            percent = 0
            async for _ in follower.changes():
                route = running_path(job)
                if token is not None and route:
                    percent = max(percent, min(int(path_fraction(route) * 100), 99))
                    quietly(
                        ls.work_done_progress.report,
                        token,
                        types.WorkDoneProgressReport(message=path_label(route), percentage=percent),
                    )
            await ended(job)
        except asyncio.CancelledError:  # $/cancelRequest, or the editor went away: nobody waits for more
            builds.stop(build_id, "the editor cancelled the command")
            return builds.describe(build_id)
        finally:
            follower.close()
        result = builds.describe(build_id)
        message, kind = _outcome(result)
        if token is not None:
            quietly(ls.work_done_progress.end, token, types.WorkDoneProgressEnd(message=message))
            ls.work_done_progress.tokens.pop(token, None)
        found = diagnostics(result["error"] or result["detail"]) if result["status"] == "failed" else []
        quietly(ls.text_document_publish_diagnostics, types.PublishDiagnosticsParams(uri=uri, diagnostics=found))
        say(message, kind)
        return result

    @server.command(STOP)
    def stop(ls: LanguageServer, *arguments: object) -> dict[str, list[str]]:
        """Stop the build with the given id, or every running build without one."""
        ids = [str(a) for a in arguments] or [e.id for e in builds.entries() if not e.build.done()]
        try:
            stopped = [build_id for build_id in ids if builds.stop(build_id, "stopped from the editor")]
        except BadInput as exc:
            raise Refused(str(exc)) from None
        return {"stopped": stopped}

    @server.command(BUILDS)
    def list_builds(ls: LanguageServer, *arguments: object) -> dict[str, list[BuildDescription]]:
        """Every build this server remembers, newest first."""
        return {"builds": [builds.describe(e.id) for e in builds.entries()]}

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: LanguageServer, *arguments: object) -> None:
        """Stop every build and let its command answer with how it ended before the server shuts down (pygls
        would cancel the pending requests while they answer: its issue #606)."""
        builds.stop_all("the editor shut the language server down")
        if commands:
            await asyncio.wait(list(commands), timeout=SHUTDOWN_WAIT_S)

    return server


class _Protocol(LanguageServerProtocol):
    """pygls's protocol, whose error answers carry no Python traceback: pygls puts one in ``data`` of every
    internal error (-32603), with the server's install paths; the editor gets the message, stderr the rest."""

    def _send_response(
        self, msg_id: int | str | None, result: object = None, error: types.ResponseError | None = None
    ) -> None:
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            error = types.ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)  # type: ignore[arg-type]  # pygls: msg_id is MsgId


def serve_io(server: LanguageServer, framed: FramedInput, channel: BinaryIO) -> None:
    """pygls's ``start_io`` with each body read here (``_dispatch``): pygls answers a body that is not a message
    with a ``window/showMessage`` and a traceback on stderr, and a request with an object id with a traceback."""
    stop = threading.Event()
    server._stop_event = stop  # pygls's shutdown() ends the loop through it
    server.protocol.set_writer(StdoutWriter(channel))

    async def read() -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            body = await loop.run_in_executor(server.thread_pool, framed.body)
            if body is None:
                return
            _dispatch(server.protocol, body)

    try:
        asyncio.run(read())
    except BrokenPipeError:
        log.warning("lsp: the editor closed the connection")
    except (KeyboardInterrupt, SystemExit):  # SystemExit: pygls's exit notification
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]  # pygls: untyped


def _dispatch(protocol: LanguageServerProtocol, body: bytes) -> None:
    """Hand one body to pygls, or answer it as JSON-RPC 2.0 says, with one line on stderr and nothing of the
    body echoed but a request's own id: JSON nested more than ``MAX_NESTING`` deep or of more than ``MAX_VALUES``
    values -32600 (id null; :func:`check_text`, before decoding), not JSON (or not UTF-8) -32700, not a message
    -32600 (id null), a request whose params pygls cannot read -32602 (a notification's: logged only), a request
    for a method that is a notification (``textDocument/didOpen`` with an id) -32600."""
    try:  # UTF-8 by the spec; json.loads of bytes reads UTF-16 and -32 too, which check_text miscounts (L22-1)
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        _refuse(protocol, None, JsonRpcParseError(), "a body that is not JSON")
        return
    try:
        check_text(text)  # before decoding: json.loads of 8 MiB of [{},{},...] held ~36 bytes per byte (L1)
    except ValueError as exc:
        _refuse(protocol, None, JsonRpcInvalidRequest(), f"a body of {exc}")
        return
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        _refuse(protocol, None, JsonRpcParseError(), "a body that is not JSON")
        return
    problem = _not_a_message(data)
    if problem:
        _refuse(protocol, _request_id(data), JsonRpcInvalidRequest(), problem)
        return
    if data.get("method") == CANCEL and "id" not in data and not good_id(_params_id(data.get("params"))):
        log.warning("lsp: dropped a %s whose id is not a string or an integer", CANCEL)  # pygls: TypeError
        return
    try:
        message = protocol.structure_message(data)
    except Exception as exc:
        error = exc if isinstance(exc, JsonRpcException) else JsonRpcInternalError()
        if "method" in data and "id" in data:
            _refuse(protocol, data["id"], error, "a request whose params cannot be read")
        else:
            log.warning(
                "lsp: dropped a %s whose fields cannot be read", "notification" if "method" in data else "response"
            )
        return
    if "method" in data and "id" in data and not hasattr(message, "id"):  # pygls would handle it, never answer
        _refuse(protocol, data["id"], JsonRpcInvalidRequest(), "a request for a notification's method")
        return
    try:
        protocol.handle_message(message)
    except (BrokenPipeError, ConnectionError):  # the editor went: serve_io ends
        raise
    except Exception as exc:  # pygls answers a request's own errors; this is a notification's or a response's
        what = "notification" if "method" in data else "response"  # e.g. a late answer to a request it gave up on
        log.warning("lsp: could not handle a %s (%s: %s)", what, type(exc).__name__, str(exc)[:200])
        log.debug("lsp: the %s's error", what, exc_info=True)


def _refuse(protocol: LanguageServerProtocol, msg_id: int | str | None, error: JsonRpcException, what: str) -> None:
    """Answer with ``error``'s code and message only, ``"id": null`` included (pygls's own answer omits it)."""
    log.warning("lsp: answered %s (%d)", what, error.code)
    answer = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": error.code, "message": error.message}}
    protocol._send_data(answer)


def _params_id(params: object) -> object:
    """``params.id`` of a ``$/cancelRequest``, or None where its params are not an object."""
    return params.get("id") if isinstance(params, dict) else None


def _not_a_message(data: object) -> str:
    """Why ``data`` is not a JSON-RPC 2.0 request, notification or response; empty when it is one."""
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
        return "a body that is not a JSON-RPC 2.0 message"
    if "method" in data:
        if not isinstance(data["method"], str):
            return "a message whose method is not a string"
        if "id" in data and not good_id(data["id"]):
            return "a request whose id is not a string or an integer"
        return ""
    if "id" in data and ("result" in data or "error" in data):
        return "" if good_id(data["id"]) or (data["id"] is None and "error" in data) else "a response with a bad id"
    return "a body that is not a JSON-RPC 2.0 message"


def _request_id(data: object) -> int | str | None:
    """The id of a request that is otherwise invalid, when it is a good one (its client can match the error)."""
    if isinstance(data, dict) and isinstance(data.get("method"), str) and good_id(data.get("id")):
        found: int | str = data["id"]
        return found
    return None
