"""The MCP server over real HTTP when a client closes a ``build_engine`` request's stream (no
``notifications/cancelled``: it just hangs up, as a killed agent does): the build is stopped and no engine written."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
from fixture_types import WaitUntil

from trt_widget.mcp import BuildRegistry, HttpServerThread, create_server

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _session(client: httpx.Client, url: str) -> dict[str, str]:
    """Initialize an MCP session over plain HTTP; the headers every later request needs."""
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    reply = client.post(url, json=hello, headers=ACCEPT)
    assert reply.status_code == 200, reply.text
    headers = {**ACCEPT, "mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    done = client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert done.status_code == 202, done.text
    return headers


def test_closing_the_build_engine_stream_stops_the_build_and_writes_no_engine(
    agent_models: dict[str, Path], tmp_path: Path, wait_until: WaitUntil
) -> None:
    registry = BuildRegistry()
    engine = tmp_path / "long.engine"
    with HttpServerThread(create_server(registry)) as server:
        auth = {"Authorization": f"Bearer {server.token}"}
        with httpx.Client(headers=auth, timeout=httpx.Timeout(30.0, read=120.0)) as client:
            headers = _session(client, server.url)
            arguments = {"model": str(agent_models["long"]), "output": str(engine)}
            params = {"name": "build_engine", "arguments": arguments, "_meta": {"progressToken": "p"}}
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
            with client.stream("POST", server.url, json=call, headers=headers) as reply:
                assert reply.status_code == 200
                for line in reply.iter_lines():  # until the build reports progress: it runs
                    if line.startswith("data:") and "notifications/progress" in line:
                        assert json.loads(line[5:])["params"]["progressToken"] == "p"
                        break
            # the stream is closed (the connection with it): nobody waits for this build any more
        (entry,) = registry.entries()
        assert entry.build.wait(60), "the build did not end"
        wait_until(lambda: entry.ended_at is not None, what="the build's end is stamped")
        assert entry.build.status == "cancelled", (entry.build.status, entry.build.status_detail)
        assert "closed" in entry.build.status_detail, entry.build.status_detail
    assert not engine.exists()
    assert not list(tmp_path.iterdir())  # no partial engine beside it either


def test_a_half_sent_request_is_closed_after_the_head_deadline() -> None:
    """The MCP HTTP server keeps the build service's connection limits: a client without the token that sends
    half a request line cannot hold its connection (and a descriptor) forever."""
    with HttpServerThread(header_timeout=1.0) as server:
        port = int(server.url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"POST /mc")
            reply = b""
            while chunk := sock.recv(4096):
                reply += chunk
    assert reply.startswith(b"HTTP/1.1 408 "), reply
