"""Seventeenth adversarial re-run (issue 35): a hostile build server's refusal. ``_refusal`` (serve/_client.py) reads
the server's JSON ``error`` with ``response.json()`` and catches ValueError only: a refusal body nested deeper than
``json.loads`` recurses (well under the 1 MiB reply bound) raises RecursionError, and the RemoteBuild fails with
"unexpected RecursionError" and a Python traceback as its error, where docs/security.md says "A server that sends
bad JSON or malformed events fails the build with a clear error" (as ``_json_object`` already does for the limits).
A fake server: the hostile server is the subject."""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any

import pytest
from attacks import SMALL


class _Refuses:
    """A fake build server: sensible limits, then a 400 whose JSON body nests 100,000 lists deep."""

    def __init__(self) -> None:
        import http.server

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                limits = {"max_upload": 1 << 30, "running": 0, "max_concurrent": 2, "builds": []}
                with contextlib.suppress(OSError):
                    self._send(200, json.dumps(limits).encode())

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with contextlib.suppress(OSError):
                    self._send(400, b'{"error": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.mark.xfail(strict=True, reason="17th re-run S1: a deeply nested refusal ends in 'unexpected RecursionError'")
def test_a_refusal_nested_deeply_fails_the_remote_build_with_a_clear_error() -> None:
    from trt_widget.serve import RemoteBuild

    hostile = _Refuses()
    try:
        build = RemoteBuild(hostile.url, "token", SMALL, timeout=5).start()
        assert build.wait(60) == "failed", build.status_detail
        assert "refused the build" in str(build.error), build.error
        assert "unexpected" not in str(build.error) and "Traceback" not in str(build.error), str(build.error)[:300]
    finally:
        hostile.server.shutdown()
        hostile.server.server_close()
