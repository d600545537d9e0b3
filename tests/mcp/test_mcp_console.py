"""``trt-widget mcp``'s stderr, the console of whoever runs it: a client's bad model fails its tool call with a
friendly message, and the console shows no raw parser assertion (issue 39, eighth trial: it printed
"ERROR:trt_widget.tensorrt:(deserializeOnnxModel): MODEL_DESERIALIZE_FAILED: Assertion failed: ...")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fixture_types import RunAnyio

RAW = ("MODEL_DESERIALIZE_FAILED", "ParseFromCodedStream", "ERROR:trt_widget.tensorrt")


def _call(process: subprocess.Popen[str], message: dict[str, object]) -> dict[str, object]:
    """Send one JSON-RPC request on the server's stdin; its answer (notifications on the way are skipped)."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()
    while True:
        line = process.stdout.readline()
        assert line, "the server closed stdout"
        answer = json.loads(line)
        if answer.get("id") == message["id"]:
            return dict(answer)


def test_a_bad_model_over_stdio_leaves_no_parser_assertion_on_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_text("not a model\n")
    server = subprocess.Popen(
        [sys.executable, "-m", "trt_widget", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        assert "result" in _call(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        assert server.stdin is not None
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        for n, tool in enumerate(("build_engine", "start_build"), 2):
            call = {"name": tool, "arguments": {"model": str(bad)}}
            answer = _call(server, {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call})
            if tool == "start_build":  # its result comes from build_status once it ended
                build = answer["result"]["structuredContent"]["build_id"]  # type: ignore[index]
                status = {"name": "build_status", "arguments": {"build_id": build, "wait_s": 60}}
                answer = _call(server, {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": status})
            text = json.dumps(answer)
            assert "it is a text file, not an ONNX model" in text, text  # the tool result: friendly
        server.stdin.close()
        assert server.stderr is not None
        stderr = server.stderr.read()
        assert server.wait(60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for stream in (server.stdout, server.stderr):
            if stream is not None:
                stream.close()
    assert not any(raw in stderr for raw in RAW), stderr


def test_a_bad_model_in_the_language_server_leaves_no_parser_assertion_on_stderr(tmp_path: Path) -> None:
    """The same for ``trt-widget lsp``, whose stderr (an editor's output panel) logs at WARNING too."""
    from lsp_wire import answer, initialize, lsp_server, message, request
    from pygls.uris import from_fs_path

    bad = tmp_path / "bad.onnx"
    bad.write_text("not a model\n")
    with lsp_server() as (server, answers):
        initialize(server, answers)
        assert server.stdin is not None and server.stderr is not None
        command = {"command": "trtWidget.build", "arguments": [from_fs_path(str(bad))]}
        server.stdin.write(message(request(2, "workspace/executeCommand", command)))
        server.stdin.flush()
        said = json.dumps(answer(answers, 2, timeout=120))
        assert "it is a text file, not an ONNX model" in said, said
        server.stdin.close()
        assert server.wait(60) == 0
        stderr = server.stderr.read().decode()
    assert not any(raw in stderr for raw in RAW), stderr


def test_a_bad_model_over_http_leaves_no_parser_assertion_on_stderr(tmp_path: Path, run_async: RunAnyio) -> None:
    """The same for ``trt-widget mcp --http``, whose console is the terminal that started it."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    bad = tmp_path / "bad.onnx"
    bad.write_text("not a model\n")
    token = "a-token-of-thirty-two-characters"
    (tmp_path / "token").write_text(token + "\n")
    (tmp_path / "token").chmod(0o600)
    argv = ["mcp", "--http", "--port", "0", "--token-file", str(tmp_path / "token")]
    server = subprocess.Popen(
        [sys.executable, "-m", "trt_widget", *argv], stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    try:
        assert server.stderr is not None
        url = server.stderr.readline().split()[-1]

        async def build() -> str:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                result = await client.call_tool("build_engine", {"model": str(bad)})
                return str(result.content[0].text)  # type: ignore[union-attr]

        said = run_async(build)
        assert "it is a text file, not an ONNX model" in said, said
    finally:
        server.terminate()
        server.wait(60)
    assert server.stderr is not None
    stderr = server.stderr.read()
    server.stderr.close()
    assert not any(raw in stderr for raw in RAW), stderr
