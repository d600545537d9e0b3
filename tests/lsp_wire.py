"""A real ``trt-widget lsp`` over pipes, as an editor talks to it: Content-Length framing, a reader thread."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

SERVER = [sys.executable, "-m", "trt_widget", "lsp"]
Answers = queue.Queue[dict[str, Any]]


def message(payload: dict[str, Any]) -> bytes:
    """``payload`` framed as LSP frames a message."""
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


def _read_messages(stream: IO[bytes], out: Answers) -> None:
    while True:
        length = None
        while (line := stream.readline()) not in (b"\r\n", b"\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if not line or length is None:
            return
        out.put(json.loads(stream.read(length)))


@contextlib.contextmanager
def lsp_server() -> Iterator[tuple[subprocess.Popen[bytes], Answers]]:
    """The server and the queue of what it sends; killed, reaped and its pipes closed at the end."""
    process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    answers: Answers = queue.Queue()
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


def answer(answers: Answers, ident: int, timeout: float = 60.0) -> dict[str, Any]:
    """The server's answer to request ``ident`` (queue.Empty: never answered, or the server ended)."""
    while True:
        got = answers.get(timeout=timeout)
        if got.get("id") == ident:
            return got


def initialize(process: subprocess.Popen[bytes], answers: Answers, capabilities: dict[str, Any] | None = None) -> None:
    """The LSP handshake: ``initialize`` answered, then ``initialized``."""
    assert process.stdin is not None
    init = {"processId": None, "rootUri": None, "capabilities": capabilities or {}}
    process.stdin.write(message(request(1, "initialize", init)))
    process.stdin.flush()
    assert "capabilities" in answer(answers, 1)["result"]
    process.stdin.write(message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
