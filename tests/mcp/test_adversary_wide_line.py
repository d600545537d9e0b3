"""Twenty-first adversarial re-run (W1, issue 35): ``trt-widget mcp`` over stdio bounds a line's characters
(8 Mi) but pydantic's ``validate_json`` decoded a line of empty objects (``[{},{},...]``) whole: 7 MiB took the
server from 60 to 619 MiB (over ``--http``, ~320 MB for a 4 MiB body). ``_json.check_text`` now counts the
values first: -32600, id null (over HTTP with status 400)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import httpx

from trt_widget.mcp import HttpServerThread

WIDE_MIB = 7
GROWTH_LIMIT_KIB = 150 << 10  # ~560 MiB more before the fix; the line itself (as bytes and text) now


def _peak_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def test_a_wide_json_line_is_refused_before_it_is_decoded() -> None:
    count = (WIDE_MIB << 20) // 3
    line = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":[' + b"{}," * (count - 1) + b"{}]}}\n"
    server = subprocess.Popen([sys.executable, "-m", "trt_widget", "mcp"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    stdin, stdout, stderr = server.stdin, server.stdout, server.stderr
    assert stdin is not None and stdout is not None and stderr is not None
    try:
        initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize}).encode())
        stdin.write(b'\n{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        stdin.flush()
        assert "result" in json.loads(stdout.readline())  # imports done: the baseline is its idle size
        before = _peak_kib(server.pid)
        peaks, done = [before], threading.Event()

        def watch() -> None:
            while not done.is_set() and server.poll() is None:
                try:
                    peaks.append(_peak_kib(server.pid))
                except OSError:
                    return
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        stdin.write(line + b'{"jsonrpc": "2.0", "id": 2, "method": "ping"}\n')
        stdin.flush()
        refused, after = json.loads(stdout.readline()), json.loads(stdout.readline())
        done.set()
        watcher.join(10)
        peaks.append(_peak_kib(server.pid))
        stdin.close()
        assert server.wait(30) == 0
        console = stderr.read().decode()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for pipe in (stdin, stdout, stderr):
            pipe.close()
    assert max(peaks) - before < GROWTH_LIMIT_KIB, f"{before} KiB idle, {max(peaks)} KiB peak"
    assert refused["id"] is None and refused["error"]["code"] == -32600, refused
    assert "100,000 values" in refused["error"]["message"], refused
    assert after == {"jsonrpc": "2.0", "id": 2, "result": {}}, after  # the server reads on
    assert "{}" not in console and console.count("values") == 1, console  # one line, nothing of the line echoed


def test_a_wide_json_post_body_is_refused_before_it_is_decoded() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":[' + b"{}," * 200_000 + b"{}]}}"
    with HttpServerThread() as server:
        headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}  # fmt: skip
        answer = httpx.post(server.url, content=body, headers=headers, timeout=60)
    assert answer.status_code == 400, answer.text
    assert answer.json()["id"] is None and answer.json()["error"]["code"] == -32600, answer.text
    assert "100,000 values" in answer.json()["error"]["message"], answer.text
