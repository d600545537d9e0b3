"""``trt-widget lsp`` given a message with a bad ``Content-Length`` header still answers the requests after it
(pygls's own reader never recovers: the next body and header merge)."""

from __future__ import annotations

import json
import queue
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from lsp_wire import Answers, answer, initialize, lsp_server, message, request


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen[bytes], Answers]]:
    with lsp_server() as running:
        yield running


@pytest.mark.parametrize("header", [b"Content-Length: abc", b"Content-Length: -5", b"Content-Type: text/plain"])
def test_a_request_after_a_bad_content_length_is_answered(
    server: tuple[subprocess.Popen[bytes], queue.Queue[dict[str, Any]]], header: bytes
) -> None:
    process, answers = server
    assert process.stdin is not None
    initialize(process, answers)
    body = json.dumps(request(2, "workspace/executeCommand", {"command": "trtWidget.builds"})).encode()
    process.stdin.write(header + b"\r\n\r\n" + body)  # no usable length: this one cannot be read
    process.stdin.write(message(request(3, "workspace/executeCommand", {"command": "trtWidget.builds"})))
    process.stdin.flush()
    assert answer(answers, 3)["result"] == {"builds": []}
    process.stdin.write(message(request(4, "shutdown", {})) + message({"jsonrpc": "2.0", "method": "exit"}))
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
    body = json.dumps(request(3, "shutdown", {})).encode()
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
    assert json.loads(framed.read(len(body))) == request(3, "shutdown", {})
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
    initialize(process, answers)
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
        process.stdin.write(message(request(ident, "workspace/executeCommand", params)))
        process.stdin.flush()
        error = answer(answers, ident).get("error")
        assert error is not None and error["code"] == -32602, (arguments, error)
        assert said in error["message"] and "traceback" not in json.dumps(error).lower(), (arguments, error)
    process.stdin.write(message(request(99, "shutdown", {})) + message({"jsonrpc": "2.0", "method": "exit"}))
    process.stdin.close()
    assert process.wait(30) == 0
    stderr = process.stderr.read().decode()
    assert "Traceback" not in stderr, stderr[-3000:]


def _framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_a_body_that_is_not_a_message_gets_a_json_rpc_error_without_a_traceback(
    server: tuple[subprocess.Popen[bytes], queue.Queue[dict[str, Any]]],
) -> None:
    """Tenth re-run: a body that is not JSON, or JSON that is not a message, got a ``window/showMessage`` "Error in
    server" and a traceback on stderr, not an answer; a request with ``"id": {"x": 1}`` got -32603 whose
    ``data.traceback`` listed the server's install paths. Each is answered -32700 or -32600 with id null (JSON-RPC
    2.0: its id cannot be read), nothing but the code and a sentence, one line on stderr; the next is answered.
    A request that is invalid otherwise gets its own id back (pygls never answered one for a notification's
    method, nor one whose params it could not read)."""
    process, answers = server
    assert process.stdin is not None and process.stderr is not None
    initialize(process, answers)
    builds = {"command": "trtWidget.builds"}
    bad_id = {"jsonrpc": "2.0", "method": "workspace/executeCommand", "params": builds}
    cases: list[tuple[bytes, int]] = [
        (b"{not json", -32700),
        (b'{"jsonrpc": "2.0", "id": 5, "method": "x", "params": {"a": "\xff\x1b[31m"}}', -32700),  # not UTF-8
        ('{"jsonrpc": "2.0", "method": "initialized", "params": {}}'.encode("utf-16-le"), -32700),  # L22-1
        (b"{}", -32600),
        (b"[1, 2]", -32600),
        (b"7", -32600),
        (b'{"jsonrpc": "1.0", "method": "initialized"}', -32600),
        *((json.dumps({**bad_id, "id": bad}).encode(), -32600) for bad in ({"x": 1}, 1.5, None, True, [2])),
    ]
    seen: list[dict[str, Any]] = []
    for ident, (body, code) in enumerate(cases, 100):
        process.stdin.write(_framed(body) + message(request(ident, "workspace/executeCommand", builds)))
        process.stdin.flush()
        while (got := answers.get(timeout=60)).get("id") != ident:  # queue.Empty: the next was never answered
            seen.append(got)
        assert got["result"] == {"builds": []}, (body, got)
        errors = [m for m in seen[-1:] if "error" in m]
        assert [(e["id"], e["error"]["code"]) for e in errors] == [(None, code)], (body, seen[-3:])
        assert set(errors[0]["error"]) == {"code", "message"}, errors  # no data: no traceback, no install path
    opened = {"textDocument": {"uri": "file:///m.py", "languageId": "python", "version": 1, "text": "x"}}
    echoed: list[tuple[dict[str, Any], int]] = [  # invalid otherwise, with a good id: answered with it
        ({"jsonrpc": "2.0", "id": 40, "method": "textDocument/didOpen", "params": 5}, -32602),  # params unreadable
        (request(41, "textDocument/didOpen", opened), -32600),  # a notification's method: pygls never answered
        (request(42, "workspace/executeCommand", {"command": "trtWidget.nope"}), -32602),  # a traceback on stderr
    ]
    for sent_, code in echoed:
        process.stdin.write(message(sent_))
        process.stdin.flush()
        error = answer(answers, sent_["id"])["error"]
        assert error["code"] == code and set(error) == {"code", "message"}, (sent_, error)
    assert not [m for m in seen if m.get("method") == "window/showMessage"], seen
    process.stdin.write(message(request(99, "shutdown", {})) + message({"jsonrpc": "2.0", "method": "exit"}))
    process.stdin.close()
    assert process.wait(30) == 0
    stderr = process.stderr.read().decode()
    assert "Traceback" not in stderr and "\x1b" not in stderr, stderr[-3000:]
    assert len([line for line in stderr.splitlines() if "lsp: answered" in line]) == len(cases) + 2, stderr[-3000:]


def test_an_internal_error_reaches_the_editor_without_a_traceback() -> None:
    """pygls answers a handler's unexpected exception with -32603 whose ``data.traceback`` lists the server's
    install paths; the editor gets the message only (the traceback stays on the server's stderr)."""
    import io

    from pygls.io_ import StdoutWriter

    from trt_widget.lsp._server import _dispatch, create_server

    server = create_server()

    @server.command("test.unexpected")
    def unexpected(ls: Any, *arguments: object) -> None:  # a handler's bug, as pygls reports any
        raise RuntimeError("a bug in a handler")

    sent = io.BytesIO()
    server.protocol.set_writer(StdoutWriter(sent))
    params = {"command": "test.unexpected", "arguments": []}
    _dispatch(server.protocol, json.dumps(request(7, "workspace/executeCommand", params)).encode())
    reply = json.loads(sent.getvalue().split(b"\r\n\r\n", 1)[1])
    assert reply["id"] == 7 and reply["error"]["code"] == -32603, reply
    assert "a bug in a handler" in reply["error"]["message"] and "data" not in reply["error"], reply
