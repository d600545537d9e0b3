"""Eleventh re-run (adversary, N4): a ``$/cancelRequest`` notification whose ``params.id`` is not hashable ends
``trt-widget lsp`` (pygls's ``_request_futures.pop`` raises TypeError, which ``_dispatch`` does not catch). The
tenth run's tree (pygls's own reader) survived it with a ``window/showMessage``. Such a cancel is dropped with one
line on stderr; anything else pygls raises while handling a notification or a response (an editor's answer to a
progress creation the server stopped waiting for) is one line too, never the read loop's end."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest
from pygls.uris import from_fs_path

SERVER = [sys.executable, "-m", "trt_widget", "lsp"]


def _message(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_messages(stream: IO[bytes], out: queue.Queue[dict[str, Any]]) -> None:
    while True:
        length = None
        while (line := stream.readline()) not in (b"\r\n", b"\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if not line or length is None:
            return
        out.put(json.loads(stream.read(length)))


def _answer(answers: queue.Queue[dict[str, Any]], ident: int, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    for _ in range(600):
        try:
            message = answers.get(timeout=0.1)
        except queue.Empty:
            assert process.poll() is None or not answers.empty(), f"the server ended (rc {process.returncode})"
            continue
        if message.get("id") == ident:
            return message
    raise AssertionError("never answered")


@pytest.mark.parametrize("bad", [[1], {"a": 1}])
def test_a_cancel_notification_with_an_unhashable_id_leaves_the_server_running(bad: object) -> None:
    process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    answers: queue.Queue[dict[str, Any]] = queue.Queue()
    reader = threading.Thread(target=_read_messages, args=(process.stdout, answers), daemon=True)
    reader.start()
    try:
        init: dict[str, Any] = {"processId": None, "rootUri": None, "capabilities": {}}
        process.stdin.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        process.stdin.flush()
        assert "capabilities" in _answer(answers, 1, process)["result"]
        process.stdin.write(_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        process.stdin.write(_message({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": bad}}))
        builds = {"command": "trtWidget.builds", "arguments": []}
        process.stdin.write(
            _message({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": builds})
        )
        process.stdin.flush()
        assert _answer(answers, 2, process)["result"] == {"builds": []}
        process.kill()
        process.wait(30)
        stderr = process.stderr.read().decode()
        assert "Traceback" not in stderr, stderr
        assert "dropped a $/cancelRequest whose id is not a string or an integer" in stderr, stderr
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
        reader.join(30)
        for pipe in (process.stdin, process.stderr, None if reader.is_alive() else process.stdout):
            if pipe is not None:
                pipe.close()


def test_an_editors_late_answer_to_a_progress_creation_leaves_the_server_running(
    agent_models: dict[str, Path], tmp_path: Path
) -> None:
    """The server waits 5 s for ``window/workDoneProgress/create``'s answer, then builds without progress; the
    answer arriving after that made pygls's ``set_result`` on the abandoned future raise InvalidStateError."""
    process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    answers: queue.Queue[dict[str, Any]] = queue.Queue()
    reader = threading.Thread(target=_read_messages, args=(process.stdout, answers), daemon=True)
    reader.start()
    try:
        init = {"processId": None, "rootUri": None, "capabilities": {"window": {"workDoneProgress": True}}}
        process.stdin.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        process.stdin.flush()
        assert "capabilities" in _answer(answers, 1, process)["result"]
        process.stdin.write(_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        engine = tmp_path / "x.engine"
        build = {"command": "trtWidget.build", "arguments": [from_fs_path(str(agent_models["small"])),
                                                             {"output": str(engine)}]}  # fmt: skip
        process.stdin.write(
            _message({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": build})
        )
        process.stdin.flush()
        create = None
        built = None
        while built is None:  # the create request first (not answered), then the build's answer
            message = answers.get(timeout=120)
            if message.get("method") == "window/workDoneProgress/create":
                create = message
            elif message.get("id") == 2:
                built = message
        assert create is not None and built["result"]["status"] == "succeeded", built
        process.stdin.write(_message({"jsonrpc": "2.0", "id": create["id"], "result": None}))  # too late
        listing = {"command": "trtWidget.builds", "arguments": []}
        process.stdin.write(
            _message({"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand", "params": listing})
        )
        process.stdin.flush()
        assert [b["status"] for b in _answer(answers, 3, process)["result"]["builds"]] == ["succeeded"]
        process.stdin.write(_message({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}))
        process.stdin.flush()
        _answer(answers, 4, process)
        process.stdin.write(_message({"jsonrpc": "2.0", "method": "exit"}))
        process.stdin.flush()
        assert process.wait(60) == 0  # ended by the editor, its builder process with it
        stderr = process.stderr.read().decode()
        assert "Traceback" not in stderr, stderr
        assert "lsp: could not handle a response (InvalidStateError" in stderr, stderr
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
        reader.join(30)
        for pipe in (process.stdin, process.stderr, None if reader.is_alive() else process.stdout):
            if pipe is not None:
                pipe.close()
