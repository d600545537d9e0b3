"""Eleventh re-run (adversary, N3): ``mcp --http`` reads a POST body whole before the SDK's checks, without a
bound (a chunked body of 6 GB took the server from 178 MB to 8.5 GB; the tenth run's tree stayed at 179 MB, the
SDK answering before it read the body). Strict xfail until fixed: a token holder's body of 64 MiB that never ends
must be refused (an answer, or the connection closed) rather than held while the server waits for more."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

from trt_widget.mcp import HttpServerThread

PIECE = b"a" * (1 << 20)
PIECES = 64


@pytest.mark.xfail(strict=True, reason="adversary-11 N3: mcp --http buffers a POST body without a bound")
def test_a_token_holders_endless_post_body_is_refused_not_held() -> None:
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
                return  # refused while sending: the server stopped reading
            assert answer.startswith(b"HTTP/1.1 4"), answer[:200]
