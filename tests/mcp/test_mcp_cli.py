"""``trt-widget mcp --http``: the command line reads the token file, serves at /mcp on 127.0.0.1 and answers the
SDK client that sends that token; bad usage exits 2 with a one-line reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
from fixture_types import RunAnyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from trt_widget.__main__ import main

SERVER = [sys.executable, "-m", "trt_widget", "mcp"]


def test_http_with_a_token_file(tmp_path: Path, run_async: RunAnyio) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("a-token-of-thirty-two-characters\n")
    token_file.chmod(0o600)  # a token file other users can read is refused
    server = subprocess.Popen([*SERVER, "--http", "--port", "0", "--token-file", str(token_file)],
                              stderr=subprocess.PIPE, text=True, env=dict(os.environ))  # fmt: skip
    try:
        assert server.stderr is not None
        first = server.stderr.readline()
        assert first.startswith("trt-widget mcp: http://127.0.0.1:") and first.rstrip().endswith("/mcp"), first
        url = first.split()[-1]

        async def tools() -> list[str]:
            headers = {"Authorization": "Bearer a-token-of-thirty-two-characters"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                return [t.name for t in (await client.list_tools()).tools]

        assert "build_engine" in run_async(tools)
    finally:
        server.terminate()
        server.wait(30)
        if server.stderr is not None:
            server.stderr.close()  # now, not by the garbage collector in a later test (ResourceWarning)


def test_bad_usage_exits_2(tmp_path: Path, capsys: Any) -> None:
    assert main(["mcp", "--token-file", str(tmp_path / "t")]) == 2
    assert "--token-file goes with --http" in capsys.readouterr().err
    assert main(["mcp", "--http", "--token-file", str(tmp_path / "missing")]) == 2
    assert "cannot read --token-file" in capsys.readouterr().err
    (tmp_path / "empty").write_text("  \n")
    (tmp_path / "empty").chmod(0o600)
    assert main(["mcp", "--http", "--token-file", str(tmp_path / "empty")]) == 2
    assert "non-empty printable text" in capsys.readouterr().err
    assert main(["mcp", "--http", "--port", "70000"]) == 2
    assert "--port must be 0..65535" in capsys.readouterr().err
