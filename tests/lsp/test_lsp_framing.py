"""``trt-widget lsp`` given a message with a bad ``Content-Length`` header still answers the requests after it
(pygls's own reader never recovers: the next body and header merge)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

import pytest

SERVER = [sys.executable, "-m", "trt_widget", "lsp"]


def _message(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _request(ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


def _read_messages(stream: IO[bytes], out: queue.Queue[dict[str, Any]]) -> None:
    while True:
        length = None
        while (line := stream.readline()) not in (b"\r\n", b"\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if not line or length is None:
            return
        out.put(json.loads(stream.read(length)))


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen[bytes], queue.Queue[dict[str, Any]]]]:
    process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    answers: queue.Queue[dict[str, Any]] = queue.Queue()
    reader = threading.Thread(target=_read_messages, args=(process.stdout, answers), daemon=True)
    reader.start()
    try:
        yield process, answers
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
        reader.join(30)  # it ends at the server's EOF
        for pipe in (process.stdin, process.stderr, None if reader.is_alive() else process.stdout):
            if pipe is not None:  # closed now, not by the garbage collector in a later test (ResourceWarning)
                pipe.close()


def _answer(answers: queue.Queue[dict[str, Any]], ident: int, timeout: float = 60.0) -> dict[str, Any]:
    while True:
        message = answers.get(timeout=timeout)  # queue.Empty: never answered
        if message.get("id") == ident:
            return message


@pytest.mark.parametrize("header", [b"Content-Length: abc", b"Content-Length: -5", b"Content-Type: text/plain"])
def test_a_request_after_a_bad_content_length_is_answered(
    server: tuple[subprocess.Popen[bytes], queue.Queue[dict[str, Any]]], header: bytes
) -> None:
    process, answers = server
    assert process.stdin is not None
    process.stdin.write(_message(_request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})))
    process.stdin.flush()
    assert "capabilities" in _answer(answers, 1)["result"]
    process.stdin.write(_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    body = json.dumps(_request(2, "workspace/executeCommand", {"command": "trtWidget.builds"})).encode()
    process.stdin.write(header + b"\r\n\r\n" + body)  # no usable length: this one cannot be read
    process.stdin.write(_message(_request(3, "workspace/executeCommand", {"command": "trtWidget.builds"})))
    process.stdin.flush()
    assert _answer(answers, 3)["result"] == {"builds": []}
    process.stdin.write(_message(_request(4, "shutdown", {})) + _message({"jsonrpc": "2.0", "method": "exit"}))
    process.stdin.close()
    assert process.wait(30) == 0
    assert process.stderr is not None
    assert b"without a valid Content-Length" in process.stderr.read()


def test_a_header_line_without_an_end_is_not_held_whole() -> None:
    """A header line of 64 MiB with no newline (an editor's garbage, a hostile pipe) is read in pieces: memory stays
    bounded (it took 3x the line, 1.4 GB for 400 MB), and a request whose header follows it on that line is read."""
    import io
    import tracemalloc

    from trt_widget.lsp._framing import FramedInput

    garbage = b"X" * (64 << 20)
    body = json.dumps(_request(3, "shutdown", {})).encode()
    raw = io.BytesIO(garbage + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    framed = FramedInput(raw)
    tracemalloc.start()
    try:
        header = framed.readline()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert header == b"Content-Length: %d\r\n" % len(body)
    assert framed.readline() == b"\r\n"
    assert json.loads(framed.read(len(body))) == _request(3, "shutdown", {})
    assert peak < 8 << 20, peak


def test_a_refused_build_command_is_an_invalid_params_error_without_a_traceback(
    server: tuple[subprocess.Popen[bytes], queue.Queue[dict[str, Any]]], tmp_path: Any
) -> None:
    """Eighth re-run: each refused ``trtWidget.build`` (no URI, a missing file, a bad option value, the model as its
    output) was pygls's -32603 with the Python traceback in ``error.data`` and a whole traceback on the server's
    stderr (the editor's output panel); ``{"options": "str"}`` said "dictionary update sequence element #0 has
    length 1", and settings that are not an object were ignored (the build ran with defaults)."""
    from trt_widget.models import deep_residual, to_bytes

    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    process, answers = server
    assert process.stdin is not None and process.stderr is not None
    process.stdin.write(_message(_request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})))
    process.stdin.flush()
    assert "capabilities" in _answer(answers, 1)["result"]
    process.stdin.write(_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    cases: list[tuple[list[Any], str]] = [
        ([], "needs the ONNX file's URI"),
        ([123], "needs the ONNX file's URI"),
        ([str(tmp_path / "missing.onnx")], "not found"),
        ([str(model), {"options": "str"}], "options must be an object"),
        ([str(model), {"budget": "NaN"}], "budget"),
        ([str(model), {"output": str(model)}], "the model file itself"),
        ([str(model), "notadict"], "must be an object"),
    ]
    for ident, (arguments, said) in enumerate(cases, 2):
        params = {"command": "trtWidget.build", "arguments": arguments}
        process.stdin.write(_message(_request(ident, "workspace/executeCommand", params)))
        process.stdin.flush()
        error = _answer(answers, ident).get("error")
        assert error is not None and error["code"] == -32602, (arguments, error)
        assert said in error["message"] and "traceback" not in json.dumps(error).lower(), (arguments, error)
    process.stdin.write(_message(_request(99, "shutdown", {})) + _message({"jsonrpc": "2.0", "method": "exit"}))
    process.stdin.close()
    assert process.wait(30) == 0
    stderr = process.stderr.read().decode()
    assert "Traceback" not in stderr, stderr[-3000:]
