"""Eleventh re-run (adversary, N3): ``mcp --http`` reads a POST body whole before the SDK's checks, without a
bound (a chunked body of 6 GB took the server from 178 MB to 8.5 GB; the tenth run's tree stayed at 179 MB, the
SDK answering before it read the body). A token holder's body of 64 MiB that never ends must be refused (an
answer, or the connection closed) rather than held while the server waits for more: the id check stops at the
SDK's own bound (4 MiB) and answers 413 as the SDK does."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import httpx
import pytest
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

from trt_widget.mcp import HttpServerThread

PIECE = b"a" * (1 << 20)
PIECES = 64


def test_a_token_holders_endless_post_body_is_refused_not_held(caplog: pytest.LogCaptureFixture) -> None:
    with HttpServerThread() as server:
        where = urlsplit(server.url)
        assert where.hostname is not None and where.port is not None
        with socket.create_connection((where.hostname, where.port), timeout=30) as conn:
            head = (
                f"POST {where.path} HTTP/1.1\r\nHost: {where.netloc}\r\nAuthorization: Bearer {server.token}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                "Transfer-Encoding: chunked\r\n\r\n"
            )
            chunk = b"%x\r\n" % len(PIECE) + PIECE + b"\r\n"
            try:
                conn.sendall(head.encode())
                for _ in range(PIECES):  # no last chunk: the body never ends
                    conn.sendall(chunk)
                answer = conn.recv(4096)  # socket.timeout (30 s): the server still waits for the rest
            except ConnectionError:
                answer = None  # refused while sending: the server stopped reading
            assert answer is None or answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    # logged before its answer was sent, so before the connection was closed
    assert "refused a request body larger than the SDK's limit" in caplog.text, caplog.text


@pytest.mark.parametrize("extra", [-1, 1])
def test_a_body_over_the_sdks_limit_is_413_before_it_is_read_and_one_within_reaches_the_sdk(extra: int) -> None:
    """A declared Content-Length over the SDK's bound is refused without reading the body; a body of exactly the
    bound less one byte is read and handed on (the SDK answers its own parse error, not 413)."""
    with HttpServerThread() as server:
        headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}  # fmt: skip
        body = b" " * (DEFAULT_MAX_REQUEST_BODY_SIZE + extra)
        answer = httpx.post(server.url, content=body, headers=headers, timeout=60)
        if extra > 0:
            assert (answer.status_code, answer.text) == (413, "Request body too large")
        else:
            assert answer.status_code == 400 and "Parse error" in answer.text, answer.text
