"""What a client sends never reaches the server's console raw: the MCP HTTP transport logged a token holder's
``Host`` header with C1 controls (U+009B, a terminal's CSI) as it came, once per request, and uvicorn logged
"Invalid HTTP request received" once per connection that sent a malformed head (``serve`` and ``mcp --http``)."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from user_scripts import default_sigint

from trt_widget.models import deep_residual, to_bytes

TOKEN = "console-test-token-0123456789"
HOSTILE = "evil\u009b2J\u009b31m\u2028forged"  # a CSI that clears a terminal, a line separator
MALFORMED = 20  # connections, each with a request head h11 refuses


@contextlib.contextmanager
def _server(command: list[str], tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], tuple[str, int]]]:
    """The server started with a token file, and its address; killed at the end if it still runs."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    process = subprocess.Popen(  # a Ctrl-C (SIGINT) ends it, as at a terminal
        [sys.executable, "-m", "trt_widget", *command, "--port", "0", "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=default_sigint,
    )
    assert process.stdout is not None
    try:
        while b"http://" not in (first := process.stdout.readline()):
            assert first, "the server ended before its banner"
        url = urlsplit(first.decode().split("http", 1)[1].split()[0].join(("http", "")))
        assert url.hostname is not None and url.port is not None
        yield process, (url.hostname, url.port)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()


def _console_after_ctrl_c(process: subprocess.Popen[bytes]) -> str:
    """What the server printed, once a Ctrl-C ended it."""
    process.send_signal(signal.SIGINT)
    assert process.stdout is not None
    console = process.stdout.read().decode("utf-8", "replace")
    process.wait(30)
    return console


def _exchange(address: tuple[str, int], request: bytes) -> bytes:
    with socket.create_connection(address, timeout=60) as sock:
        sock.sendall(request)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
        return reply


@pytest.mark.parametrize("command", [["mcp", "--http"], ["serve", "--log-level", "info"]], ids=["mcp-http", "serve"])
def test_hostile_request_text_is_escaped_and_malformed_heads_are_summed_up(command: list[str], tmp_path: Path) -> None:
    if command[0] == "serve":
        command = [*command, "--data", str(tmp_path / "data")]
    with _server(command, tmp_path) as (process, address):
        host = HOSTILE.encode("latin-1", "replace")  # a header is bytes: U+009B is the one byte 0x9b
        path = b"/builds/%C2%9B2J%E2%80%A8"  # serve's access log shows the path decoded
        head = b"GET " + path + b" HTTP/1.1\r\nContent-Length: 0\r\n"
        if command[0] == "mcp":  # what the transport reads before it checks the Host header
            head = b"POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
            head += b"Accept: application/json, text/event-stream\r\n"
        for _ in range(3):
            reply = _exchange(address, head + b"Host: " + host + b"\r\nAuthorization: Bearer " + TOKEN.encode()
                              + b"\r\nConnection: close\r\n\r\n{}")  # fmt: skip
            assert reply.startswith(b"HTTP/1.1 4"), reply[:200]
        for _ in range(MALFORMED):
            reply = _exchange(address, b"\x9b2J NOT HTTP \x1b[31m\r\n\r\n")
            assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
        console = _console_after_ctrl_c(process)
    assert TOKEN not in console
    for raw in ("\u009b", "\x9b", "\u2028", "\x1b"):
        assert raw not in console, (raw, console[-3000:])
    invalid = console.count("Invalid HTTP request received") + console.count("invalid HTTP request")
    assert 1 <= invalid <= 2, console[-3000:]  # one line for the condition, not one per connection


# Issue 39 (seventh trial, 6): a truncated upload failed the build with a friendly answer to the client, while the
# console printed TensorRT's raw parser assertion ("error: (deserializeOnnxModel): MODEL_DESERIALIZE_FAILED: ...").
# The console now says the client's message; TensorRT's raw lines only at --log-level debug.
RAW = "MODEL_DESERIALIZE_FAILED"


def _failed_upload(level: str, tmp_path: Path) -> tuple[str, str]:
    """(the client's failure detail, the console) for a truncated model sent to ``serve --log-level level``."""
    with _server(["serve", "--log-level", level, "--data", str(tmp_path / "data")], tmp_path) as (process, address):
        host, port = address
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=f"http://{host}:{port}", headers=headers, timeout=60) as client:
            cut = to_bytes(deep_residual(2))[:1000]
            made = client.post("/builds", files={"model": ("trunc.onnx", cut)})
            assert made.status_code == 201, made.text
            build = made.json()["id"]
            deadline = time.monotonic() + 240
            while (said := client.get(f"/builds/{build}").json())["status"] not in ("failed", "succeeded"):
                assert time.monotonic() < deadline, said
                time.sleep(0.2)
        assert said["status"] == "failed", said
        time.sleep(0.5)  # the console line is written as the build ends, before the answer says it ended
        console = _console_after_ctrl_c(process)
    return str(said["detail"]), console


@pytest.mark.parametrize("level", ["info", "debug"])
def test_a_failed_upload_is_logged_as_the_client_is_told(level: str, tmp_path: Path) -> None:
    detail, console = _failed_upload(level, tmp_path)
    assert "is it really an ONNX model?" in detail, detail
    assert detail in console, console  # the friendly message, once
    if level == "info":
        assert RAW not in console, console
    else:  # the raw details, where asked for
        assert RAW in console, console
