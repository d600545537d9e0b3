"""Attacks on a RemoteBuild: it never waits forever, whatever the server does (tests/serve/test_serve_client.py)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

import pytest
from attacks import SMALL

# -- a RemoteBuild never waits forever, whatever the server does ------------------------------------------------

FAKE_ID = "A" * 22


class _Hostile:
    """A fake build server on 127.0.0.1 that misbehaves in one way (``mode``); it serves ``follow()`` only."""

    def __init__(self, mode: str) -> None:
        import http.server

        self.mode = mode
        self.cancels = 0
        hostile = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # cancel: acknowledged, then nothing happens
                hostile.cancels += 1
                self.rfile.read(int(self.headers.get("content-length") or 0))
                body = b'{"status": "cancelling"}'
                self.send_response(202)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                with contextlib.suppress(OSError):
                    hostile.serve(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve(self, handler: Any) -> None:
        start = {"event": "build_start", "model": "m", "backend": "rtx", "version": "1", "options": {}, "t": 0.0}
        end = {"event": "build_end", "status": "succeeded", "detail": "", "elapsed_s": 1.0, "engine_bytes": 1,
               "output": None, "error": None, "t": 1.0}  # fmt: skip
        if handler.path.endswith("/engine") and self.mode == "slow engine":
            handler.send_response(200)
            handler.send_header("Content-Length", "1000000")
            handler.end_headers()  # the announced size, a byte at a time
            for _ in range(1_000_000):
                handler.wfile.write(b"\0")
                handler.wfile.flush()
                time.sleep(0.1)
            return
        if handler.path.endswith("/engine"):
            handler.send_response(200)
            handler.send_header("Content-Type", "application/octet-stream")
            handler.end_headers()  # no length: 64 MB and counting, after build_end said 1 byte
            for _ in range(1024):
                handler.wfile.write(b"\0" * 65536)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")  # the body ends when the connection does
        handler.close_connection = True
        handler.end_headers()
        out = handler.wfile

        def send(event: Any, ident: int = 1) -> None:
            text = event if isinstance(event, str) else json.dumps(event)
            out.write(f"id: {ident}\ndata: {text}\n\n".encode())
            out.flush()

        if self.mode == "deep options":  # nested past what the report's json.dumps recursed through (R2)
            start = {**start, "options": {"optimization_level": json.loads("[" * 40 + "]" * 40)}}
        send(start)
        if self.mode == "pings":
            for _ in range(600):
                out.write(b": ping\n\n")
                out.flush()
                time.sleep(0.1)
        elif self.mode == "phases":
            for i in range(10_000_000):
                send({"event": "phase_start", "id": i, "name": "p", "parent": None, "depth": 0, "num_steps": 1,
                      "t": 0.1}, i + 2)  # fmt: skip
        elif self.mode == "huge event":
            out.write(b"id: 2\ndata: " + b"x" * (3 << 20))
            out.flush()
            time.sleep(30)
        elif self.mode == "bad json":
            send("{not json", 2)
        elif self.mode == "big engine":
            send(end, 2)
        elif self.mode == "huge engine size":  # 401 digits: float() of it, where it was shown, raised (R1)
            send({**end, "engine_bytes": 10**400}, 2)
        elif self.mode == "slow engine":
            send({**end, "engine_bytes": 1_000_000}, 2)
        elif self.mode == "long names":  # 1 MiB names: each fits an event, 200,000 of them would not fit memory
            for i in range(100):
                send({"event": "phase_start", "id": i, "name": "n" * (1 << 19), "parent": None, "depth": 0,
                      "num_steps": 1, "t": 0.1}, i + 2)  # fmt: skip
        elif self.mode == "silent":  # not even a ping
            time.sleep(30)
        # "closes": the stream ends after build_start, every time


def _follow(url: str, **kwargs: Any) -> Any:
    from trt_widget.serve import RemoteBuild

    return RemoteBuild.follow(url, "token", FAKE_ID, **kwargs).start()


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("closes", "no new event for 2 s"),
        ("silent", "no new event for 2 s"),
        ("huge event", "an event larger than 1,048,576 bytes"),
        ("bad json", "not a JSON object: '{not json'"),
        ("big engine", "more engine bytes than build_end announced (1)"),
        ("huge engine size", "field 'engine_bytes' of a build_end event must be from 0 to 2**63, got a larger one"),
        ("deep options", "field 'options' nests lists or objects more than 32 deep"),
        ("phases", "more than 2,000 phases"),
        ("long names", "a phase name of 524,288 characters (at most 4096)"),
    ],
)
def test_a_hostile_server_fails_the_remote_build_with_a_clear_error(
    mode: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trt_widget.serve import _client

    monkeypatch.setattr(_client, "MAX_PHASES", 2_000)
    monkeypatch.setattr(_client, "SILENT_S", 1.0)
    hostile = _Hostile(mode)
    build = _follow(hostile.url, timeout=2)
    assert build.wait(30) == "failed", build.status_detail
    assert said in str(build.error), build.error
    assert "unexpected" not in str(build.error)
    assert len(build.timings()) <= 2_000


@pytest.mark.parametrize("mode", ["pings", "phases", "no answer", "slow engine"])
def test_stop_ends_a_remote_build_within_a_second_whatever_the_server_does(mode: str) -> None:
    import socket

    if mode == "no answer":  # a stopped server: the kernel accepts connections, nobody answers
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    else:
        url = _Hostile(mode).url
    build = _follow(url, timeout=60)
    time.sleep(0.5)
    assert build.status in ("running", "queued"), build.status_detail
    assert build.stop()
    # it gives up STOP_WAIT_S (0.7 s) after the stop; waited for with room for a loaded runner (a 1.0 s wait left
    # 0.3 s for the follower to see it), still below the 60 s the server's silence would take
    assert build.wait(30) == "cancelled", build.status_detail
    assert "had not confirmed the cancel after 0.7 s" in build.status_detail
    if mode == "no answer":
        silent.close()


def test_stop_ends_a_remote_build_within_a_second_while_the_server_takes_no_upload() -> None:
    import socket

    from trt_widget.serve import RemoteBuild

    silent = socket.socket()  # the kernel accepts the connection; nobody answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        build = RemoteBuild(f"http://127.0.0.1:{silent.getsockname()[1]}", "token", SMALL, timeout=60).start()
        time.sleep(0.5)
        assert build.status in ("running", "queued"), build.status_detail
        assert build.stop()
        # given up STOP_WAIT_S (0.7 s) after the stop: waited for with room for a loaded runner, below the 60 s
        assert build.wait(30) == "cancelled", build.status_detail
        assert "the upload" in build.status_detail and "had not finished 0.7 s after the stop" in build.status_detail
    finally:
        silent.close()


class _Endless:
    """A fake server that answers every request with ``status`` and a body without end: 64 MiB, then nothing."""

    def __init__(self, status: int) -> None:
        import socket

        self.status = status
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.listener.accept()
                threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: Any) -> None:
        chunk = b"[" * (1 << 20)
        with contextlib.suppress(OSError), conn:
            conn.recv(65536)
            conn.sendall(f"HTTP/1.1 {self.status} X\r\nContent-Type: application/json\r\n".encode())
            conn.sendall(b"Transfer-Encoding: chunked\r\n\r\n")
            for _ in range(64):
                conn.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            time.sleep(60)


@pytest.mark.parametrize("status", [200, 500])
def test_a_reply_without_end_fails_the_remote_build_not_the_memory(status: int) -> None:
    """Seventh re-run: the server's small replies (its limits, a refusal, a build's state) were read whole: a
    server (or whatever listens at the URL) answering with a body without end grew the client by 500 MB a second
    until memory ran out; a refused event stream's body too. Replies other than the event stream and the engine
    are read up to 1 MiB (``MAX_REPLY_BYTES``)."""
    from trt_widget.serve import RemoteBuild

    endless = _Endless(status)
    try:
        for build in (RemoteBuild(endless.url, "token", SMALL, timeout=5).start(), _follow(endless.url, timeout=5)):
            assert build.wait(60) == "failed", build.status_detail
            assert "larger than 1,048,576 bytes" in str(build.error), build.error
            assert "unexpected" not in str(build.error)
    finally:
        endless.listener.close()
