"""``trt-widget lsp`` over stdio with pytest-lsp as the editor: work-done progress begin / report / end in
order, cancel within a second, diagnostics on a model the parser refuses, the stop and builds commands, and a
client that goes away mid-build. Real RTX builds; one server for the module (the disconnect test starts its own)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import pytest_lsp
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

from trt_widget._backend import select_backend
from trt_widget._build import AFTER_PHASE
from trt_widget._engine import BEFORE_PHASES
from trt_widget.runners import START_PHASE

ROOTS = (BEFORE_PHASES["model"], START_PHASE, "Building engine", AFTER_PHASE)  # top-level phases of a build

SERVER = [sys.executable, "-m", "trt_widget", "lsp"]
on_module_loop = pytest.mark.asyncio(loop_scope="module")  # the module shares one server and its client


_Session = Callable[[LanguageClient], AsyncIterator[None]]
# pytest-lsp's decorator is unannotated: typed here for what it is (the client fixture, made from this function)
lsp_session: Callable[[_Session], _Session] = pytest_lsp.fixture(
    scope="module", config=ClientServerConfig(server_command=SERVER)
)


@lsp_session
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    capabilities = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))
    started = await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities))
    commands = started.capabilities.execute_command_provider
    assert commands is not None and set(commands.commands) == {"trtWidget.build", "trtWidget.stop", "trtWidget.builds"}
    yield
    await lsp_client.shutdown_session()


async def execute(client: LanguageClient, command: str, *arguments: Any) -> Any:
    params = types.ExecuteCommandParams(command=command, arguments=list(arguments))
    return await client.workspace_execute_command_async(params)


def progress_of(client: LanguageClient) -> dict[str, list[object]]:
    """The work-done progress values received, by token: pytest-lsp annotates them as ``ProgressParams`` but keeps
    each notification's ``value`` (a WorkDoneProgressBegin, Report or End)."""
    return {str(token): list(values) for token, values in client.progress_reports.items()}


def token_of(result: dict[str, Any]) -> str:
    return f"trtWidget.build/{result['build_id']}"


async def first_report(client: LanguageClient, timeout: float = 60.0, starting: str = "", naming: str = "") -> str:
    """The token of the newest running progress that has sent a report (whose message starts with ``starting`` and
    holds ``naming``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for token, values in reversed(progress_of(client).items()):
            if any(
                isinstance(v, types.WorkDoneProgressReport)
                and (v.message or "").startswith(starting)
                and naming in (v.message or "")
                for v in values
            ) and not any(isinstance(v, types.WorkDoneProgressEnd) for v in values):
                return str(token)
        await asyncio.sleep(0.01)
    raise AssertionError(f"no progress report {starting!r} arrived")


@on_module_loop
async def test_progress_begins_reports_and_ends_in_order(
    client: LanguageClient, agent_models: dict[str, Path], tmp_path: Path
) -> None:
    uri = from_fs_path(str(agent_models["medium"]))
    engine = tmp_path / "medium.engine"
    result = await execute(client, "trtWidget.build", uri, {"output": str(engine)})
    assert result["status"] == "succeeded" and engine.stat().st_size == result["engine_bytes"]
    values = progress_of(client)[token_of(result)]
    begin, *middle, end = values
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.cancellable is True and begin.percentage == 0
    assert begin.title == "TensorRT build" and begin.message == str(agent_models["medium"])
    reports = [r for r in middle if isinstance(r, types.WorkDoneProgressReport)]
    assert reports and reports == middle  # reports only, between the begin and the end
    percentages = [r.percentage for r in reports if r.percentage is not None]
    assert len(percentages) == len(reports)  # every report says how far
    assert percentages == sorted(percentages) and all(0 <= p <= 99 for p in percentages), percentages
    assert percentages[-1] > 0
    assert all(r.message and r.message.startswith(ROOTS) for r in reports)
    if select_backend()[0] == "rtx":  # RTX's own phase; NVIDIA TensorRT has none of that name
        assert any("Determining refit engines" in (r.message or "") for r in reports)
    assert isinstance(end, types.WorkDoneProgressEnd) and "succeeded" in (end.message or "")
    assert list(client.diagnostics[uri]) == []  # published empty: clears an earlier failure's
    shown = client.messages[-1]
    assert shown.type == types.MessageType.Info and str(engine) in shown.message


@pytest.mark.rtx_long_step
@on_module_loop
async def test_cancel_stops_the_build_within_a_second(
    client: LanguageClient, agent_models: dict[str, Path], tmp_path: Path
) -> None:
    uri = from_fs_path(str(agent_models["long"]))
    running = asyncio.ensure_future(execute(client, "trtWidget.build", uri, {"output": str(tmp_path / "x.engine")}))
    # reported in "Determining refit engines", one step of seconds (a fixed sleep after the first report could land
    # anywhere on a loaded machine)
    token = await first_report(client, naming="Determining refit engines")
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(running, 60)
    assert result["status"] == "cancelled" and "cancelled in the editor" in result["detail"]
    # the builder process was terminated inside the step, not waited for to its end (not timed: a loaded 2-core
    # runner stretches any bound)
    assert "terminated" in result["detail"], result
    end = progress_of(client)[token][-1]
    assert isinstance(end, types.WorkDoneProgressEnd) and "cancelled" in (end.message or "")
    assert client.messages[-1].type == types.MessageType.Warning
    assert not (tmp_path / "x.engine").exists()


@on_module_loop
async def test_a_refused_model_gets_diagnostics_on_the_node(
    client: LanguageClient, agent_models: dict[str, Path], tmp_path: Path
) -> None:
    uri = from_fs_path(str(agent_models["refused"]))
    result = await execute(client, "trtWidget.build", uri, {"output": str(tmp_path / "r.engine")})
    assert result["status"] == "failed"
    (diagnostic,) = client.diagnostics[uri]
    assert diagnostic.code == "frob_1" and diagnostic.source == "trt-widget"
    assert diagnostic.message.startswith("node 'frob_1' (Frobnicate): ")
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    shown = client.messages[-1]
    assert shown.type == types.MessageType.Error and "frob_1" in shown.message
    not_onnx = from_fs_path(str(agent_models["text"]))
    await execute(client, "trtWidget.build", not_onnx, {"output": str(tmp_path / "t.engine")})
    (whole,) = client.diagnostics[not_onnx]
    assert "is it really an ONNX model?" in whole.message and whole.code is None


@pytest.mark.deadline  # listed while a real build is in its build phase
@on_module_loop
async def test_stop_and_builds_commands(client: LanguageClient, agent_models: dict[str, Path], tmp_path: Path) -> None:
    uri = from_fs_path(str(agent_models["long"]))
    running = asyncio.ensure_future(execute(client, "trtWidget.build", uri, {"output": str(tmp_path / "x.engine")}))
    try:  # listed inside TensorRT's build phase: seconds long, where a running phase is always open
        build_id = (await first_report(client, starting="Building engine")).split("/")[1]
        listed = await execute(client, "trtWidget.builds")
        assert listed["builds"][0]["build_id"] == build_id and listed["builds"][0]["status"] == "running"
        assert listed["builds"][0]["phase"].startswith("Building engine"), listed["builds"][0]
        stopped = await execute(client, "trtWidget.stop", build_id)
        assert stopped == {"stopped": [build_id]}
    finally:  # a failed assertion must not leave the build running into the next test
        await execute(client, "trtWidget.stop")
    result = await asyncio.wait_for(running, 60)
    assert result["status"] == "cancelled" and "stopped from the editor" in result["detail"]
    assert await execute(client, "trtWidget.stop") == {"stopped": []}  # nothing runs now


@on_module_loop
async def test_bad_input_is_an_error_response_and_a_message(
    client: LanguageClient, tmp_path: Path, agent_models: dict[str, Path]
) -> None:
    missing = from_fs_path(str(tmp_path / "missing.onnx"))
    with pytest.raises(Exception, match="ONNX file not found"):
        await execute(client, "trtWidget.build", missing)
    assert client.messages[-1].type == types.MessageType.Error
    with pytest.raises(Exception, match="unknown build option 'opt'"):
        await execute(client, "trtWidget.build", from_fs_path(str(agent_models["small"])), {"options": {"opt": 1}})
    with pytest.raises(Exception, match="no build with id 'b999'"):
        await execute(client, "trtWidget.stop", "b999")
    assert (await execute(client, "trtWidget.builds"))["builds"]  # still serving


def _send(stdin: Any, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdin.flush()


def _receive(stdout: Any) -> dict[str, Any]:
    length = 0
    while (line := stdout.readline().strip()) != b"":
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return dict(json.loads(stdout.read(length)))


@contextlib.contextmanager
def a_server_building(model: Path, engine: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A raw stdio server whose build of ``model`` has sent its first progress report."""
    # as a context manager: its pipes are closed at the end, whichever the test closed itself
    with subprocess.Popen(
        SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ)
    ) as server:
        try:
            capabilities = {"window": {"workDoneProgress": True}}
            initialize = {"processId": os.getpid(), "capabilities": capabilities}
            _send(server.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
            _send(server.stdin, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
            arguments = [from_fs_path(str(model)), {"output": str(engine)}]
            command = {"command": "trtWidget.build", "arguments": arguments}
            _send(server.stdin, {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": command})
            while True:  # answer the progress creation; stop reading at the first report
                message = _receive(server.stdout)
                if message.get("method") == "window/workDoneProgress/create":
                    _send(server.stdin, {"jsonrpc": "2.0", "id": message["id"], "result": None})
                if message.get("method") == "$/progress" and message["params"]["value"]["kind"] == "report":
                    break
            yield server
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()


def test_a_client_that_goes_away_mid_build_leaves_no_builder_behind(
    agent_models: dict[str, Path], tmp_path: Path
) -> None:
    with a_server_building(agent_models["long"], tmp_path / "x.engine") as server:
        builders = psutil.Process(server.pid).children(recursive=True)
        assert builders, "the build runs in a builder process"
        assert server.stdin is not None and server.stderr is not None
        server.stdin.close()  # the editor is gone
        assert server.wait(30) == 0
        _gone, alive = psutil.wait_procs(builders, timeout=10)
        assert not alive, alive
        stderr = server.stderr.read().decode()
        assert "Traceback" not in stderr, stderr
        assert not (tmp_path / "x.engine").exists()


def test_shutdown_mid_build_answers_the_build_as_cancelled_then_shuts_down(
    agent_models: dict[str, Path], tmp_path: Path
) -> None:
    with a_server_building(agent_models["long"], tmp_path / "x.engine") as server:
        assert server.stdin is not None and server.stdout is not None and server.stderr is not None
        _send(server.stdin, {"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
        answers: dict[int, dict[str, Any]] = {}
        while 3 not in answers:
            message = _receive(server.stdout)
            if message.get("id") in (2, 3):
                answers[message["id"]] = message
        assert list(answers) == [2, 3], answers  # the build's command answers before the shutdown does
        assert answers[3] == {"jsonrpc": "2.0", "id": 3, "result": None}
        build = answers[2]["result"]
        assert build["status"] == "cancelled" and "shut the language server down" in build["detail"], build
        _send(server.stdin, {"jsonrpc": "2.0", "method": "exit"})
        assert server.wait(30) == 0
        stderr = server.stderr.read().decode()
        assert "Traceback" not in stderr, stderr
        assert not (tmp_path / "x.engine").exists()


def test_diagnostics_from_a_build_error() -> None:
    from trt_widget.lsp._server import diagnostics

    message = (
        "could not parse m.onnx as ONNX: In node 2 (parseGraph): bad; node 'conv_1' (Conv): wrong kernel; "
        'node "it\'s" (Add): mismatch'
    )
    found = diagnostics(message)
    assert [(d.code, d.message) for d in found] == [
        ("conv_1", "node 'conv_1' (Conv): wrong kernel"),
        ("it's", 'node "it\'s" (Add): mismatch'),
    ]
    (whole,) = diagnostics("the network has no outputs")
    assert whole.message == "the network has no outputs" and whole.code is None
