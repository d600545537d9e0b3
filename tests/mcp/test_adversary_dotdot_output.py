"""Fifteenth adversarial re-run (issue 35): an agent's build "replaces only an engine", and writes the manifest beside
it only over a trt_widget manifest (``_not_an_engine``, ``_not_a_manifest`` in mcp/_builds.py). Both checks ask the
kernel (``os.path.lexists``) about the path as given, but the build writes where ``_files.resolve`` says, which
takes ``..`` after a missing folder lexically: ``DIR/nosuch/../notes.txt`` does not exist for the checks (no
``nosuch``), and is ``DIR/notes.txt`` for the write. An agent (or a prompt it read) replaces any file the server's
user can write with an engine, or any ``*.manifest.json`` with a trt_widget manifest. Driven through a real
``trt-widget mcp`` over stdio and real RTX builds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp_wire import exchange, tool_call

from trt_widget import models

USERS = "the user's own notes\n"


def _build_engine(tmp_path: Path, output: str) -> dict[str, object]:
    call = {"model": str(tmp_path / "m.onnx"), "output": output}
    answers = exchange(tool_call("build_engine", call), tmp_path, env={**os.environ, "TRT_WIDGET_HISTORY": "off"})
    return next((answer for answer in answers if answer.get("id") == 1), {})


@pytest.mark.parametrize(
    ("users_file", "output", "refused"),
    [
        ("notes.txt", "nosuch/../notes.txt", "output {output} exists and is not an engine"),
        ("app.manifest.json", "nosuch/../app", "{users} exists and is not a trt_widget manifest"),
    ],
    ids=["engine-path", "manifest-beside"],
)
def test_an_agents_output_through_a_missing_folder_keeps_the_users_file(
    tmp_path: Path, users_file: str, output: str, refused: str
) -> None:
    (tmp_path / "m.onnx").write_bytes(models.to_bytes(models.deep_residual(2)))
    users = tmp_path / users_file
    users.write_text(USERS)
    assert not (tmp_path / "nosuch").exists()
    answer = _build_engine(tmp_path, str(tmp_path / output))
    assert answer, "the server never answered the build"
    assert users.read_bytes() == USERS.encode(), users.read_bytes()[:64]
    result = answer["result"]
    assert isinstance(result, dict) and result["isError"] is True, result  # refused, not written elsewhere
    said = refused.format(output=tmp_path / output, users=users)
    assert said in json.dumps(result["content"]), result
