"""Fourteenth adversarial re-run (issue 35): an agent's build "replaces only an engine" (BuildRegistry refuses an
existing ``output`` that is not one), but the manifest it writes beside the engine, ``<output>.manifest.json``, is
written over whatever file is there. An agent (or a prompt it read) that names a new ``output`` beside the user's
own ``app.manifest.json`` turns that file into a trt_widget manifest, where docs/agents.md says an existing file is
replaced only if it is an engine. Driven through a real ``trt-widget mcp`` over stdio and a real RTX build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from trt_widget import models

USERS = '{"name": "the user\'s web app", "icons": []}\n'  # the user's own file, no trt_widget manifest


def test_an_agents_build_keeps_a_file_where_its_manifest_would_go(tmp_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(models.to_bytes(models.deep_residual(2)))
    users = tmp_path / "app.manifest.json"
    users.write_text(USERS)
    hello = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    call = {"name": "build_engine", "arguments": {"model": str(tmp_path / "m.onnx"), "output": str(tmp_path / "app")}}
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "trt_widget", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True, cwd=tmp_path, env={**os.environ, "TRT_WIDGET_HISTORY": "off"},
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    answer: dict[str, object] = {}
    try:
        server.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
        server.stdin.flush()
        for line in server.stdout:  # ends at the server's exit if it never answers
            if line.strip() and json.loads(line).get("id") == 1:
                answer = json.loads(line)
                break
        server.stdin.close()
        server.stdout.read()
        server.wait(120)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        server.stdout.close()
    assert answer, "the server never answered the build"
    # refused (the file kept), or built without touching the user's file: either way the file is as it was
    assert users.read_text() == USERS, users.read_text()[:300]
