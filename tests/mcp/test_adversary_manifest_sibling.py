"""Fourteenth adversarial re-run (issue 35): an agent's build "replaces only an engine" (BuildRegistry refuses an
existing ``output`` that is not one), but the manifest it writes beside the engine, ``<output>.manifest.json``, is
written over whatever file is there. An agent (or a prompt it read) that names a new ``output`` beside the user's
own ``app.manifest.json`` turns that file into a trt_widget manifest, where docs/agents.md says an existing file is
replaced only if it is an engine. Driven through a real ``trt-widget mcp`` over stdio and a real RTX build."""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcp_wire import exchange, tool_call

from trt_widget import models

USERS = '{"name": "the user\'s web app", "icons": []}\n'  # the user's own file, no trt_widget manifest


def test_an_agents_build_keeps_a_file_where_its_manifest_would_go(tmp_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(models.to_bytes(models.deep_residual(2)))
    users = tmp_path / "app.manifest.json"
    users.write_text(USERS)
    call = {"model": str(tmp_path / "m.onnx"), "output": str(tmp_path / "app")}
    answers = exchange(tool_call("build_engine", call), tmp_path, env={**os.environ, "TRT_WIDGET_HISTORY": "off"})
    answer = next((answer for answer in answers if answer.get("id") == 1), {})
    assert answer, "the server never answered the build"
    assert users.read_text() == USERS, users.read_text()[:300]
    result = answer["result"]
    assert isinstance(result, dict) and result["isError"] is True, result  # refused, not built elsewhere
    assert f"{users} exists and is not a trt_widget manifest" in json.dumps(result["content"]), result
