"""A real ``trt-widget mcp`` over stdio, as an agent's client talks to it: one JSON-RPC message a line."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

SERVER = [sys.executable, "-m", "trt_widget", "mcp"]
HELLO: dict[str, object] = {
    "protocolVersion": "2025-03-26",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"},
}


def tool_call(name: str, arguments: Mapping[str, object]) -> list[dict[str, object]]:
    """The handshake (``initialize`` as request 0, then ``initialized``) and ``tools/call name`` as request 1."""
    return [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": dict(arguments)}},
    ]


@contextlib.contextmanager
def mcp_server(
    cwd: Path, env: Mapping[str, str] | None = None, stderr: IO[str] | int = subprocess.DEVNULL
) -> Iterator[subprocess.Popen[str]]:
    """The server in ``cwd`` (text pipes); killed if it still runs at the end, reaped, its pipes closed then, not by
    the garbage collector in a later test (ResourceWarning)."""
    server = subprocess.Popen(
        SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=cwd,
        env=None if env is None else dict(env),
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    try:
        yield server
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()
        for pipe in (server.stdin, server.stdout):
            with contextlib.suppress(BrokenPipeError):  # stdin: lines the killed server never read
                pipe.close()


def exchange(
    lines: list[dict[str, object]],
    cwd: Path,
    last: int = 1,
    env: Mapping[str, str] | None = None,
    stderr: IO[str] | int = subprocess.DEVNULL,
    limit_s: float = 300.0,
) -> list[dict[str, object]]:
    """What a real ``trt-widget mcp`` answered to ``lines``, up to its answer to request ``last`` (read before the
    client closes stdin: a server may drop a request still in flight when its client has gone); empty or short
    when the server ended without answering it. A server still silent after ``limit_s`` is killed and the test
    fails, rather than hang the suite."""
    answers: list[dict[str, object]] = []
    with mcp_server(cwd, env, stderr) as server:
        assert server.stdin is not None and server.stdout is not None
        hung = threading.Event()

        def kill() -> None:
            hung.set()
            server.kill()

        timer = threading.Timer(limit_s, kill)
        timer.start()
        try:
            server.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
            server.stdin.flush()
            for line in server.stdout:  # ends at the server's exit if it never answers
                if line.strip():
                    answers.append(json.loads(line))
                    if answers[-1].get("id") == last:
                        break
            server.stdin.close()
            server.stdout.read()
            server.wait(120)
        finally:
            timer.cancel()
        assert not hung.is_set(), f"trt-widget mcp neither answered request {last} nor ended within {limit_s} s"
    return answers
