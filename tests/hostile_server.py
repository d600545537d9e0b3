"""A fake build server on a free local port, for the tests whose subject is a hostile server: it answers each
request with what the test's functions give (status, body, content type), so each test states only its answers."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Callable
from typing import Any

Reply = tuple[int, bytes, str]  # (HTTP status, body, Content-Type)


class HostileServer:
    """Serves ``get(path)`` to each GET and ``post(path, body)`` to each POST (501 without ``post``)."""

    def __init__(self, get: Callable[[str], Reply], post: Callable[[str, bytes], Reply] | None = None) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, reply: Reply) -> None:
                status, body, kind = reply
                with contextlib.suppress(OSError):  # the client may have gone: its test says what it saw
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(get(self.path))

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                self._send(post(self.path, body) if post else (501, b"", "text/plain"))

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
