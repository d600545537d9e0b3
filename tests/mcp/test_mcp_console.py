"""``trt-widget mcp``'s stderr, the console of whoever runs it: a client's bad model fails its tool call with a
friendly message, and the console shows no raw parser assertion (issue 39, eighth trial: it printed
"ERROR:trt_widget.tensorrt:(deserializeOnnxModel): MODEL_DESERIALIZE_FAILED: Assertion failed: ...")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
