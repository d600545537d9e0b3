"""The MCP tools (official SDK, ``mcp.server.mcpserver.MCPServer``): build an engine with live progress, start /
poll / stop builds, list them, and where a finished build's time went.

Handlers never block the event loop: they wait on the build through :mod:`trt_widget._follow` (a wake-up per
change, its end as a future). A client's ``notifications/cancelled`` cancels the handler's scope: the build is
stopped then (the default builder process ends within ``force_after``, 0.1 s).
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, BinaryIO

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    TextContent,
    ToolAnnotations,
    jsonrpc_message_adapter,
)
from pydantic import BaseModel, Field, ValidationError

from .._follow import Follower, ended, path_label, running_path
from .._json import check_text, good_id
from ._builds import BadInput, BuildDescription, BuildRegistry
from ._jsonrpc import BAD_ID, bad_request_id, json_members
from ._stream import PROGRESS_INTERVAL_S, RequestStream, request_stream

if TYPE_CHECKING:
    from .._build import Build

log = logging.getLogger("trt_widget.mcp")

INSTRUCTIONS = (
    "Builds TensorRT engines from ONNX files on this machine, with live progress and cancel. build_engine "
    "builds and waits (progress notifications carry the running phase path; cancelling the call stops the "
    "build); for long builds use start_build, then build_status (wait_s long-polls) and stop_build. "
    "build_timings says where a finished build's time went and compares it with the last matching build."
)


class Phase(BaseModel):
    name: str = Field(description="TensorRT phase name")
    self_s: float = Field(description="seconds spent in this phase itself, not in a child phase (all instances)")
    instances: int = Field(description="how many times the phase ran")


class BuildResult(BaseModel):
    build_id: str = Field(description="id for build_status / stop_build / build_timings")
    model: str = Field(description="the ONNX file")
    status: str = Field(description="queued, running, cancelling, succeeded, cancelled or failed")
    detail: str = Field(description="why it was cancelled, notes, or the first line of the error")
    build_s: float = Field(description="build time in seconds so far (final once ended)")
    phase: str = Field(description="running phase path while it runs, e.g. 'Building engine 4/6 › ...'")
    engine_path: str | None = Field(description="the engine file written, once succeeded")
    engine_bytes: int | None = Field(description="engine size in bytes, once succeeded")
    top_phases: list[Phase] = Field(description="where the time went (by self time), once ended")
    warnings: list[str] = Field(description="TensorRT warnings")
    error: str | None = Field(description="why the build failed")
    error_cause: str | None = Field(description="the underlying exception, when there is one")
    created_at: float = Field(description="Unix time the build was created")
    ended_at: float | None = Field(description="Unix time the build ended")


class BuildList(BaseModel):
    builds: list[BuildResult] = Field(description="newest first")


class StopResult(BaseModel):
    stopping: bool = Field(description="true if a running or queued build was asked to stop")
    build: BuildResult


class PhaseChange(BaseModel):
    path: str
    previous_s: float
    now_s: float
    delta_s: float = Field(description="seconds slower (+) or faster (-) than the previous build")


class Comparison(BaseModel):
    previous: str | None = Field(description="which build it is compared with")
    previous_s: float | None
    delta_s: float | None = Field(description="whole build: seconds slower (+) or faster (-)")
    phases: list[PhaseChange] = Field(description="largest changes first")


class Timings(BaseModel):
    build_id: str
    status: str
    build_s: float
    top_phases: list[Phase] = Field(description="phase names by self time, largest first")
    comparison: Comparison | None = Field(
        description="against the last succeeded build of the same model and options; null when there is none"
    )


_MODEL = "path of the ONNX file on the server's machine (relative paths: to the server's working directory)"
_OPTIONS = (
    "Build options as trt_widget.Build's, e.g. optimization_level (0..5), fp16 (bool), strongly_typed (bool), "
    "timing_cache (file path), workspace (bytes or '1GiB'), profiles ({input: [min, opt, max] shapes}), verbose, "
    "int8, bf16, tactic_sources ('-CUDNN,+CUBLAS'), max_aux_streams, hardware_compatibility, version_compatible, "
    "refit, strip_weights (every trtexec build setting of docs/options.md that a build-service request may set)"
)
_BUDGET = "seconds: the build is cancelled when it runs longer"
_OUTPUT = (
    "engine file to write (atomically); default: the model's path with the suffix .engine. An existing file there "
    "is replaced only if it is an engine (its manifest names it), and <output>.manifest.json beside it only if it "
    "is a trt_widget manifest; any other file is refused"
)
# destructive: an existing engine (and its manifest) is replaced (never another file: BuildRegistry refuses it)
_WRITES_ENGINE = ToolAnnotations(destructive_hint=True, idempotent_hint=False, open_world_hint=False)


def _sentence(result: BuildDescription) -> str:
    """The result in one line, for clients that read only the text content."""
    head = f"build {result['build_id']} {result['status']} after {result['build_s']:.1f} s"
    if result["status"] == "succeeded":
        where = f": engine {result['engine_path']} ({result['engine_bytes']:,} B)" if result["engine_path"] else ""
        top = result["top_phases"][:1]
        most = f"; most time in {top[0]['name']} ({top[0]['self_s']:.1f} s)" if top else ""
        return head + where + most
    if result["status"] == "failed":
        return f"{head}: {result['error']}"
    return f"{head}: {result['detail']}" if result["detail"] else head


def _result(result: BuildDescription) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=_sentence(result))],
        structured_content=dict(result),
        is_error=result["status"] == "failed",
    )


def create_server(
    registry: BuildRegistry | None = None, *, progress_interval: float = PROGRESS_INTERVAL_S
) -> MCPServer[object]:
    """An ``MCPServer`` with the build tools, over ``registry`` (a new one by default)."""
    builds = registry if registry is not None else BuildRegistry()
    server: MCPServer[object] = MCPServer(name="trt-widget", instructions=INSTRUCTIONS, log_level="WARNING")
    readonly = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def create(
        model: str, options: Mapping[str, object] | None, budget: float | None, output: str | None, held: bool = False
    ) -> tuple[str, Build]:
        try:
            return builds.create(model, options=options, budget=budget, output=output, held=held)
        except BadInput as exc:
            raise ToolError(str(exc)) from None

    def start(build_id: str) -> None:
        try:
            builds.start(build_id)
        except BadInput as exc:
            raise ToolError(str(exc)) from None

    def describe(build_id: str) -> BuildDescription:
        try:
            return builds.describe(build_id)
        except BadInput as exc:
            raise ToolError(str(exc)) from None

    @server.tool(
        description="Build a TensorRT engine from an ONNX file and wait for it. Sends progress notifications "
        "(the running phase path) while it builds; cancelling this call stops the build. The result: status, "
        "engine path and size, build time, top phases by self time, warnings, error. A failed build is a tool "
        "error; a build cut by the budget ends 'cancelled'.",
        annotations=_WRITES_ENGINE,
    )
    async def build_engine(
        ctx: Context,
        model: Annotated[str, Field(description=_MODEL)],
        options: Annotated[dict[str, object] | None, Field(description=_OPTIONS)] = None,
        budget: Annotated[float | None, Field(description=_BUDGET, gt=0)] = None,
        output: Annotated[str | None, Field(description=_OUTPUT)] = None,
    ) -> Annotated[CallToolResult, BuildResult]:
        build_id, build = create(model, options, budget, output, held=True)
        try:
            return await follow_build(ctx, build_id, build)
        finally:
            builds.release(build_id)

    async def follow_build(ctx: Context, build_id: str, build: Build) -> CallToolResult:
        """build_engine's wait: progress while it builds, the result once it ended (a cancel stops it)."""
        stream = _http_stream(ctx)
        follower = Follower(build, interval=progress_interval)
        try:
            start(build_id)
        except BaseException:
            follower.close()
            raise

        async def follow() -> None:
            sent, reporting = 0.0, True
            async for _ in follower.changes():
                path = running_path(build)
                if path and reporting:
                    sent = max(round(build.elapsed_s, 3), sent + 0.001)  # strictly increasing
                    try:
                        await ctx.report_progress(sent, None, path_label(path))
                    except Exception:  # progress is a courtesy: a transport hiccup must not end the build
                        log.warning("MCP progress notifications stopped for build %s", build_id, exc_info=True)
                        reporting = False
            await ended(build)

        try:
            if stream is None:
                await follow()
            else:  # over HTTP: a client that closes the request's stream no longer waits for this build
                async with anyio.create_task_group() as group:

                    async def hung_up() -> None:
                        await stream.gone.wait()
                        builds.stop(build_id, "the MCP client cancelled the call (it closed the request's stream)")
                        group.cancel_scope.cancel()

                    group.start_soon(hung_up)
                    await follow()
                    group.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            builds.stop(build_id, "the MCP client cancelled the call")
            raise
        finally:
            follower.close()
        return _result(describe(build_id))

    @server.tool(
        description="Start building a TensorRT engine from an ONNX file and return at once with its build_id "
        "(status queued or running); follow it with build_status, stop it with stop_build.",
        annotations=_WRITES_ENGINE,
    )
    async def start_build(
        model: Annotated[str, Field(description=_MODEL)],
        options: Annotated[dict[str, object] | None, Field(description=_OPTIONS)] = None,
        budget: Annotated[float | None, Field(description=_BUDGET, gt=0)] = None,
        output: Annotated[str | None, Field(description=_OUTPUT)] = None,
    ) -> BuildResult:
        build_id, _ = create(model, options, budget, output)
        start(build_id)
        await anyio.to_thread.run_sync(builds.settle, build_id)  # its status is set on its own thread
        return BuildResult.model_validate(describe(build_id))

    @server.tool(
        description="The state of a build: status, running phase path, build time; once ended also the engine, "
        "top phases, warnings, error. wait_s > 0 waits up to that many seconds for the build to end.",
        annotations=readonly,
    )
    async def build_status(
        build_id: Annotated[str, Field(description="from build_engine, start_build or list_builds")],
        wait_s: Annotated[
            float, Field(description="wait up to this long for the end (0: answer now)", ge=0, le=600)
        ] = 0.0,
    ) -> BuildResult:
        try:
            build = builds.entry(build_id).build
        except BadInput as exc:
            raise ToolError(str(exc)) from None
        if wait_s > 0:  # also when done(): its done callbacks (which stamp ended_at) may still be running
            with anyio.move_on_after(wait_s):
                await ended(build)
        return BuildResult.model_validate(describe(build_id))

    @server.tool(
        description="Stop a build: it ends 'cancelled' at TensorRT's next step boundary, or its builder process "
        "is terminated 0.1 s after the request. Stopping an ended build does nothing.",
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    )
    async def stop_build(build_id: Annotated[str, Field(description="the build to stop")]) -> StopResult:
        try:
            stopping = builds.stop(build_id)
        except BadInput as exc:
            raise ToolError(str(exc)) from None
        return StopResult(stopping=stopping, build=BuildResult.model_validate(describe(build_id)))

    @server.tool(description="Every build this server remembers (the newest 32), newest first.", annotations=readonly)
    async def list_builds() -> BuildList:
        return BuildList(builds=[BuildResult.model_validate(describe(e.id)) for e in builds.entries()])

    @server.tool(
        description="Where an ended build's time went: phase names by self time (time not in a child phase), and "
        "the comparison with the last succeeded build of the same model and options (whole build and the "
        "phases that changed most).",
        annotations=readonly,
    )
    async def build_timings(
        build_id: Annotated[str, Field(description="an ended build")],
        top: Annotated[int, Field(description="how many phases", ge=1, le=100)] = 10,
    ) -> Timings:
        try:
            # the history match may still be loading (a large model's hash): off the loop
            timings = await anyio.to_thread.run_sync(builds.timings, build_id, top)
        except BadInput as exc:
            raise ToolError(str(exc)) from None
        return Timings.model_validate(timings)

    return server


def _http_stream(ctx: Context) -> RequestStream | None:
    """The HTTP request stream a tool call came on (None over stdio)."""
    try:
        return request_stream(ctx.request_context.request)
    except ValueError:  # no request context
        return None


class _Unowned(io.TextIOWrapper):
    """Text over a binary stream that closing (or collecting) leaves open: stdin and the channel are not ours."""

    def close(self) -> None:
        with contextlib.suppress(ValueError):  # detached already
            self.detach()


MAX_LINE = 8 << 20  # characters of one message over stdio (a tool call is a few KiB); a longer line is dropped
_CHUNK = 1 << 20


class _BoundedInput(_Unowned):
    """stdin's lines for the SDK, each at most MAX_LINE characters: a longer one (a line without an end) is read
    in pieces and dropped with a warning, never held whole, and the next line is given."""

    def readline(self, size: int | None = -1, /) -> str:  # type: ignore[override]  # typeshed: _IOBase says bytes
        while True:
            line = super().readline(MAX_LINE + 1)
            if len(line) <= MAX_LINE or line.endswith("\n"):
                return line
            while line and not line.endswith("\n"):
                line = super().readline(_CHUNK)
            log.warning("mcp: dropped a message over %d characters", MAX_LINE)
            if not line:
                return ""


def serve_stdio(server: MCPServer[object], channel: BinaryIO) -> None:
    """Serve MCP on stdin and ``channel`` (the real stdout, moved off fd 1 by ``take_stdout``) until the client
    goes. The SDK's own stdio transport would take fd 1, which is stderr by then; and it drops what it cannot read
    (the client waits for ever), so this reads the lines itself: what is not a request, a notification or an
    answer is answered here as JSON-RPC says and never reaches the server."""

    async def serve() -> None:
        stdin = anyio.wrap_file(_BoundedInput(sys.stdin.buffer, encoding="utf-8", errors="replace"))
        stdout = anyio.wrap_file(_Unowned(channel, encoding="utf-8"))
        lowlevel = server._lowlevel_server  # MCPServer.run("stdio") does the same with the process's stdio
        to_server, received = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        to_client, sent = anyio.create_memory_object_stream[SessionMessage](0)
        refusals = to_client.clone()

        async def read() -> None:
            async with to_server, refusals:
                async for line in stdin:
                    message = _read(line)
                    if isinstance(message, SessionMessage):
                        await to_server.send(message)
                        continue
                    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await refusals.send(SessionMessage(message))

        async def write() -> None:
            async with sent:
                async for message in sent:
                    await stdout.write(message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n")
                    await stdout.flush()

        async with anyio.create_task_group() as group:  # each ends by itself once stdin ends: all answers written
            group.start_soon(read)
            group.start_soon(write)
            async with to_client:
                await lowlevel.run(received, to_client, lowlevel.create_initialization_options())

    anyio.run(serve)


def _read(line: str) -> SessionMessage | JSONRPCError:
    """A line of stdin as a message for the server, or the JSON-RPC error that answers it: -32700 when it is not
    JSON, -32600 when it is not a message or nests deeper or holds more values than ``check_text`` allows (id null:
    counted before decoding), and -32600 for a request whose id is not a string or an integer (the
    SDK reads it as a notification: never answered, and a ``tools/call`` must not run unanswered). The id is
    echoed only where it is one MCP allows (a request otherwise invalid), else null as JSON-RPC says; nothing
    else the line held is echoed."""
    try:
        check_text(line)  # before pydantic: a 7 MiB line of [{},{},...] held ~80x its size (W1)
    except ValueError as exc:
        log.warning("mcp: answered a line of %s", exc)
        error = ErrorData(code=INVALID_REQUEST, message=f"Invalid Request: the line holds {exc}")
        return JSONRPCError(jsonrpc="2.0", id=None, error=error)
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # as the SDK's own transport: whatever fails here is the line's fault
        if isinstance(exc, ValidationError) and any(e["type"] == "json_invalid" for e in exc.errors()):
            log.warning("mcp: answered a line that is not JSON")
            return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message=_NOT_JSON))
        log.warning("mcp: answered a line that is not a JSON-RPC message")
        error = ErrorData(code=INVALID_REQUEST, message=_NOT_A_MESSAGE)
        return JSONRPCError(jsonrpc="2.0", id=_request_id(line), error=error)
    if isinstance(message, JSONRPCNotification) and bad_request_id(json_members(line)):
        log.warning("mcp: answered a request whose id is not a string or an integer")
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=BAD_ID))
    return SessionMessage(message)


_NOT_JSON = "Parse error: the line is not valid JSON"
_NOT_A_MESSAGE = "Invalid Request: the line is not a JSON-RPC 2.0 message"


def _request_id(line: str) -> str | int | None:
    """The id of a line that has a method and an id MCP allows."""
    fields = json_members(line)
    found = fields.get("id")
    return found if isinstance(fields.get("method"), str) and good_id(found) else None
