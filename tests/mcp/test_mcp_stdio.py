"""``trt-widget mcp`` over stdio, as an agent runtime starts it, with the SDK's own client: a build with progress
and a structured result, bad input as tool errors, and a cancel mid-build after which the server keeps serving."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import psutil
import pytest
from fixture_types import RunAnyio
from mcp import Client, StdioServerParameters

from trt_widget._build import AFTER_PHASE
from trt_widget._engine import BEFORE_PHASES
from trt_widget.runners import START_PHASE

ROOTS = (BEFORE_PHASES["model"], START_PHASE, "Building engine", AFTER_PHASE)  # top-level phases of a build


def stdio() -> Client:
    """``python -m trt_widget mcp`` as a subprocess (with this environment: the SDK passes only a few variables
    by default, and the tests' PYTHONPATH and history location must reach it)."""
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "trt_widget", "mcp"], env=dict(os.environ)))


def test_build_with_progress_then_bad_input_over_stdio(
    agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path
) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async def main() -> tuple[Any, ...]:
        async with stdio() as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            good = await client.call_tool(
                "build_engine",
                {"model": str(agent_models["medium"]), "output": str(tmp_path / "m.engine")},
                progress_callback=on_progress,
            )
            missing = await client.call_tool("build_engine", {"model": str(tmp_path / "missing.onnx")})
            not_onnx = await client.call_tool("build_engine", {"model": str(agent_models["text"])})
            unknown = await client.call_tool(
                "build_engine", {"model": str(agent_models["small"]), "options": {"fp32": 1}}
            )
            return tools, good, missing, not_onnx, unknown

    tools, good, missing, not_onnx, unknown = run_async(main)
    assert set(tools) == {"build_engine", "start_build", "build_status", "stop_build", "list_builds", "build_timings"}
    assert all(t.description and t.input_schema["type"] == "object" for t in tools.values())
    assert tools["build_engine"].output_schema["properties"]["engine_path"]
    assert good.structured_content["status"] == "succeeded"
    assert (tmp_path / "m.engine").stat().st_size == good.structured_content["engine_bytes"]
    values = [v for v, _ in seen]
    assert len(values) >= 2 and values == sorted(set(values))  # strictly increasing
    assert all(m and m.startswith(ROOTS) for _, m in seen)
    assert missing.is_error and "ONNX file not found" in missing.content[0].text
    assert not_onnx.is_error and "is it really an ONNX model?" in not_onnx.content[0].text
    assert not_onnx.structured_content["status"] == "failed"
    assert unknown.is_error and "unknown build option 'fp32'" in unknown.content[0].text


@pytest.mark.rtx_long_step
def test_a_cancel_over_stdio_stops_the_build_within_a_second(
    agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path
) -> None:
    refit = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if "Determining refit engines" in (message or ""):  # one step of seconds: no step boundary to stop at
            refit.set()

    async def main() -> tuple[dict[str, Any], Any]:
        async with stdio() as client:
            async with anyio.create_task_group() as group:
                group.start_soon(
                    lambda: client.call_tool(
                        "build_engine",
                        {"model": str(agent_models["long"]), "output": str(tmp_path / "x.engine")},
                        progress_callback=on_progress,
                    )
                )
                await refit.wait()  # a fixed sleep after the first progress could land anywhere on a loaded machine
                group.cancel_scope.cancel()
            builds = (await client.call_tool("list_builds", {})).structured_content["builds"]
            status = await client.call_tool("build_status", {"build_id": builds[0]["build_id"], "wait_s": 30})
            after = await client.call_tool(
                "build_engine", {"model": str(agent_models["small"]), "output": str(tmp_path / "s.engine")}
            )
            return status.structured_content, after

    status, after = run_async(main)
    assert status["status"] == "cancelled" and "cancelled the call" in status["detail"]
    # the builder process was terminated inside the step, not waited for to its end (not timed: a loaded 2-core
    # runner stretches any bound)
    assert "terminated" in status["detail"], status
    assert not (tmp_path / "x.engine").exists()
    assert after.structured_content["status"] == "succeeded"


def _sender(stdin: Any) -> Callable[[dict[str, Any]], None]:
    """Write JSON-RPC messages, one a line, to a raw stdio MCP server."""

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    return send


@contextlib.contextmanager
def _raw_server(*args: str) -> Iterator[tuple[subprocess.Popen[bytes], IO[bytes], IO[bytes], IO[bytes]]]:
    """``python *args`` (a stdio MCP server) with its pipes, for tests that speak raw JSON-RPC lines; killed if it
    still runs at the end, its pipes closed then, not by the garbage collector in a later test (ResourceWarning)."""
    server = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=dict(os.environ))  # fmt: skip
    stdin, stdout, stderr = server.stdin, server.stdout, server.stderr
    assert stdin is not None and stdout is not None and stderr is not None
    try:
        yield server, stdin, stdout, stderr
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for pipe in (stdin, stdout, stderr):
            pipe.close()


def _initialize(send: Callable[[dict[str, Any]], None], stdout: Any) -> str:
    """The MCP handshake; returns the server's first line (its answer to initialize)."""
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
          "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}})  # fmt: skip
    first: str = stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return first


def test_a_client_that_goes_away_mid_build_leaves_no_builder_behind(
    agent_models: dict[str, Path], tmp_path: Path
) -> None:
    with _raw_server("-m", "trt_widget", "mcp") as (server, stdin, stdout, stderr):
        send = _sender(stdin)
        assert "result" in json.loads(_initialize(send, stdout))
        arguments = {"model": str(agent_models["long"]), "output": str(tmp_path / "x.engine")}
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "build_engine", "arguments": arguments, "_meta": {"progressToken": "p"}}})  # fmt: skip
        while json.loads(stdout.readline()).get("method") != "notifications/progress":
            pass
        builders = psutil.Process(server.pid).children(recursive=True)
        assert builders, "the build runs in a builder process"
        stdin.close()  # the agent is gone
        assert server.wait(30) == 0
        _gone, alive = psutil.wait_procs(builders, timeout=10)
        assert not alive, alive
        console = stderr.read().decode()
        assert "Traceback" not in console, console
        assert not (tmp_path / "x.engine").exists()


STRAY = textwrap.dedent(
    """
    import os, subprocess, sys
    from trt_widget.__main__ import main
    from trt_widget.mcp import _builds, _cli, _server

    def stray(when):  # what a print, a native library and a child process would write on fd 1
        print(f"stray print {when}", end=" ", flush=True)
        os.write(1, f"stray fd1 {when} ".encode())
        subprocess.run(["sh", "-c", f"printf 'stray child {when} '"], check=True)

    def before(original):
        def call(*args, **kwargs):
            stray(original.__name__)
            return original(*args, **kwargs)
        return call

    _server.create_server = before(_server.create_server)  # before the transport starts
    _builds.BuildRegistry.create = before(_builds.BuildRegistry.create)  # while a tool call runs
    _cli._stop_all = before(_cli._stop_all)  # after the client went
    sys.exit(main(["mcp"]))
    """
)


def test_writes_on_fd_1_never_reach_the_protocol_channel(agent_models: dict[str, Path], tmp_path: Path) -> None:
    """Before, during and after serving, a print, an os.write(1, ...) and a child process's output in the server
    go to stderr: every line the client reads is JSON-RPC, and a tool call still works."""
    with _raw_server("-c", STRAY) as (server, stdin, stdout, stderr):
        send = _sender(stdin)
        first = _initialize(send, stdout)
        assert json.loads(first)["id"] == 1, first
        arguments = {"model": str(agent_models["small"]), "output": str(tmp_path / "s.engine")}
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "build_engine", "arguments": arguments}})  # fmt: skip
        while (answer := json.loads(stdout.readline())).get("id") != 2:
            pass
        assert answer["result"]["structuredContent"]["status"] == "succeeded", answer
        stdin.close()  # the client goes: the server stops, then exits
        rest = stdout.read().decode()
        assert server.wait(30) == 0
        assert all(json.loads(line) for line in rest.splitlines() if line.strip()), rest
        errors = stderr.read().decode()
        for when in ("create_server", "create", "_stop_all"):
            for kind in ("print", "fd1", "child"):
                assert f"stray {kind} {when} " in errors, (kind, when, errors)


def test_a_line_without_an_end_is_not_held_whole(caplog: Any) -> None:
    """A 96 MiB line on stdin (an agent's garbage, a hostile pipe) is read in pieces and dropped with a warning:
    memory stays bounded (300 MB of input took 1 GB), and the message after it is read."""
    import io
    import tracemalloc

    from trt_widget.mcp._server import _BoundedInput

    message = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) + "\n"
    stdin = _BoundedInput(io.BytesIO(b"X" * (96 << 20) + b"\n" + message.encode()), encoding="utf-8")
    tracemalloc.start()
    try:
        line = stdin.readline()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert line == message
    assert stdin.readline() == ""
    assert "dropped a message over" in caplog.text
    assert peak < 64 << 20, peak


def test_a_cancelled_build_is_not_an_error_on_the_server_console(agent_models: dict[str, Path], tmp_path: Path) -> None:
    """A build stopped with ``stop_build`` ends with TensorRT's "Error Code 7: ... BuildCanceled", which the server
    printed at ERROR on its console: an expected event, said as the other front ends say it (never at ERROR)."""
    with _raw_server("-m", "trt_widget", "mcp") as (server, stdin, stdout, stderr):
        send = _sender(stdin)

        def answer(request_id: int) -> dict[str, Any]:
            while (line := json.loads(stdout.readline())).get("id") != request_id:
                pass
            result: dict[str, Any] = line["result"]["structuredContent"]
            return result

        assert "result" in json.loads(_initialize(send, stdout))
        arguments = {"model": str(agent_models["long"]), "output": str(tmp_path / "x.engine")}
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "start_build", "arguments": arguments},
            }
        )
        build_id = answer(2)["build_id"]
        status: dict[str, Any] = {"status": "queued"}
        for request_id in range(3, 200):  # until TensorRT builds (its phases), then stop it
            send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                  "params": {"name": "build_status", "arguments": {"build_id": build_id, "wait_s": 0.2}}})  # fmt: skip
            status = answer(request_id)
            if status["status"] == "running" and status["phase"] not in ("", START_PHASE, BEFORE_PHASES["model"]):
                break
        send({"jsonrpc": "2.0", "id": 500, "method": "tools/call",
              "params": {"name": "stop_build", "arguments": {"build_id": build_id}}})  # fmt: skip
        answer(500)
        send({"jsonrpc": "2.0", "id": 501, "method": "tools/call",
              "params": {"name": "build_status", "arguments": {"build_id": build_id, "wait_s": 30}}})  # fmt: skip
        assert answer(501)["status"] == "cancelled"
        stdin.close()
        assert server.wait(30) == 0
        console = stderr.read().decode()
    assert "ERROR" not in console and "BuildCanceled" not in console, console  # INFO: below the console's level


def test_a_line_that_is_not_json_gets_the_json_rpc_parse_error(tmp_path: Path) -> None:
    """The SDK dropped a line that is not valid JSON (a raw control character in a string) without an answer, so
    the client waited for ever; JSON-RPC 2.0 answers -32700 (id null), and -32600 for JSON that is not a message.
    The next request is answered."""
    with _raw_server("-m", "trt_widget", "mcp") as (server, stdin, stdout, stderr):
        send = _sender(stdin)
        answers: list[dict[str, Any]] = []
        assert "result" in json.loads(_initialize(send, stdout))
        stdin.write(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"x": "a\x01\x9b b"}}\n')
        stdin.write(b"{not json\n")
        stdin.write(b'{"jsonrpc": "2.0", "id": 8, "result": [1, 2], "method": 3}\n')
        stdin.flush()
        send({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
        while (line := json.loads(stdout.readline())).get("id") != 9:  # the answer to the last comes last
            answers.append(line)
        answers.append(line)
        stdin.close()
        assert server.wait(30) == 0
        console = stderr.read().decode()
    codes = [(a["id"], a.get("error", {}).get("code")) for a in answers[:-1]]  # "id": null, as JSON-RPC says
    assert codes == [(None, -32700), (None, -32700), (None, -32600)], answers
    assert answers[-1]["result"]["tools"], answers[-1]
    assert "\x01" not in console and "\x9b" not in console and "\u009b" not in console, console


def test_a_model_path_naming_a_user_that_does_not_exist_is_a_tool_error(run_async: RunAnyio, tmp_path: Path) -> None:
    """Seventh re-run: ``~nosuchuser/m.onnx`` as the model (or a ``~`` path with a NUL) raised ValueError outside
    the input checks: the agent got "Error executing tool start_build" without a reason, the server's console a
    113-line traceback. It is bad input, said as such (the LSP's ``trtWidget.build`` shares the registry)."""
    from trt_widget.mcp import BadInput, BuildRegistry

    for model in ("~no-such-user-trt/m.onnx", "~no-such-user-trt\x00/m.onnx"):
        try:
            BuildRegistry().create(model)
        except BadInput as exc:
            assert "no-such-user-trt" in str(exc), exc
        else:
            raise AssertionError(f"{model!r} was accepted")

    async def main() -> Any:
        async with stdio() as client:
            return await client.call_tool("start_build", {"model": "~no-such-user-trt/m.onnx"})

    reply = run_async(main)
    assert reply.is_error and "cannot expand '~no-such-user-trt': no such user" in reply.content[0].text, reply


def test_a_request_whose_id_is_not_a_string_or_an_integer_is_refused_at_once(
    agent_models: dict[str, Path], tmp_path: Path
) -> None:
    """The SDK read a request whose id is an object, a fraction, null or a bool as a notification: never answered
    (the client waited for ever), and a ``tools/call`` would have been dispatched as one. Each is answered -32600
    (id null: it cannot be echoed as MCP's id), nothing runs, and the next request is answered. A request that is
    invalid otherwise but has a good id gets that id back, so its client can match the error."""
    with _raw_server("-m", "trt_widget", "mcp") as (server, stdin, stdout, stderr):
        send = _sender(stdin)
        assert "result" in json.loads(_initialize(send, stdout))
        lines: queue.Queue[bytes] = queue.Queue()

        def pump() -> None:
            for line in iter(stdout.readline, b""):
                lines.put(line)

        pumping = threading.Thread(target=pump, daemon=True)
        pumping.start()

        def next_answer() -> dict[str, Any]:
            answer: dict[str, Any] = json.loads(lines.get(timeout=60))  # an answer is due at once; bound a hang
            return answer

        output = tmp_path / "x.engine"
        start = {"name": "start_build", "arguments": {"model": str(agent_models["small"]), "output": str(output)}}
        for n, bad in enumerate([{"a": 1}, 1.5, None, True, 2.0, [3]]):
            send({"jsonrpc": "2.0", "id": bad, "method": "tools/call", "params": start})
            refused = next_answer()
            assert (refused.get("id", "absent"), refused.get("error", {}).get("code")) == (None, -32600), refused
            send({"jsonrpc": "2.0", "id": 100 + n, "method": "ping"})
            assert next_answer() == {"jsonrpc": "2.0", "id": 100 + n, "result": {}}
        send({"jsonrpc": "2.0", "id": 200, "method": "ping", "params": [1]})
        assert (refused := next_answer())["id"] == 200 and refused["error"]["code"] == -32600, refused
        send({"jsonrpc": "2.0", "id": 201, "method": "tools/call", "params": {"name": "list_builds", "arguments": {}}})
        assert next_answer()["result"]["structuredContent"]["builds"] == []  # no tool ran for a refused request
        stdin.close()
        assert server.wait(30) == 0
        pumping.join(30)  # at the end of stdout: nothing reads the pipe as it is closed
        console = stderr.read().decode()
    assert not output.exists()
    assert console.count("answered a request whose id") == 6, console  # one line each
