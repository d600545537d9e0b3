"""Issue 35 (13th re-run, W-new-1): an agent's ``output`` replaced any file the server's user could write (a text
file became an engine) while the tools said ``destructive_hint=False``. Now an agent's build replaces only an
engine (its manifest beside it names it), and the tools that write one say they are destructive. The MCP and LSP
servers share ``BuildRegistry.create``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from attacks import built_engine
from fixture_types import RunAnyio

from trt_widget import models
from trt_widget.mcp import BadInput, BuildRegistry, create_server


def test_an_agents_output_onto_a_file_that_is_not_an_engine_is_refused_and_the_file_kept(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(models.to_bytes(models.deep_residual(2)))
    notes = tmp_path / "notes.txt"
    notes.write_text("the user's notes\n")
    registry = BuildRegistry()
    with pytest.raises(BadInput, match=r"exists and is not an engine"):
        registry.create(str(model), output=str(notes))
    assert notes.read_text() == "the user's notes\n"
    assert not (tmp_path / "notes.txt.manifest.json").exists()
    assert registry.entries() == []  # nothing registered, nothing started


def test_an_agents_output_onto_an_engine_or_nothing_is_taken(tmp_path: Path) -> None:
    engine = built_engine(tmp_path)  # a real RTX build, its manifest beside it
    registry = BuildRegistry()
    _, build = registry.create(str(tmp_path / "model.onnx"), output=str(engine))
    assert build.options.output == str(engine)
    _, build = registry.create(str(tmp_path / "model.onnx"), output=str(tmp_path / "new.engine"))
    assert build.options.output == str(tmp_path / "new.engine")
    shutil.copyfile(engine, tmp_path / "bare.engine")  # no manifest, but it begins as an RTX engine does
    registry.create(str(tmp_path / "model.onnx"), output=str(tmp_path / "bare.engine"))
    (tmp_path / "other.engine").write_bytes(b"x" * 100)  # a copied manifest that names another file is no proof
    shutil.copyfile(tmp_path / "model.engine.manifest.json", tmp_path / "other.engine.manifest.json")
    with pytest.raises(BadInput, match=r"exists and is not an engine"):
        registry.create(str(tmp_path / "model.onnx"), output=str(tmp_path / "other.engine"))


def test_an_agents_build_replaces_only_a_trt_widget_manifest_beside_its_output(tmp_path: Path) -> None:
    """14th re-run M1: the manifest written beside the engine, ``<output>.manifest.json``, follows the same policy:
    another file there (the user's JSON, a folder) refuses the build at once, in one line naming it."""
    engine = built_engine(tmp_path)  # a real RTX build: model.engine and its manifest
    registry = BuildRegistry()
    users = tmp_path / "app.manifest.json"
    users.write_text('{"name": "my web app"}\n')
    with pytest.raises(BadInput, match=r"app\.manifest\.json exists and is not a trt_widget manifest") as refused:
        registry.create(str(tmp_path / "model.onnx"), output=str(tmp_path / "app"))
    assert str(users) in str(refused.value) and "\n" not in str(refused.value)
    assert users.read_text() == '{"name": "my web app"}\n' and not (tmp_path / "app").exists()
    (tmp_path / "dir.manifest.json").mkdir()
    with pytest.raises(BadInput, match=r"dir\.manifest\.json exists and is not a trt_widget manifest"):
        registry.create(str(tmp_path / "model.onnx"), output=str(tmp_path / "dir"))
    assert registry.entries() == []
    shutil.copyfile(tmp_path / "model.engine.manifest.json", tmp_path / "new.manifest.json")  # one of trt_widget's
    _, build = registry.create(str(tmp_path / "model.onnx"), output=str(tmp_path / "new"))
    assert build.options.output == str(tmp_path / "new")
    _, build = registry.create(str(tmp_path / "model.onnx"), output=str(engine))  # the engine and its own manifest
    assert build.options.output == str(engine)


def test_the_tools_that_write_an_engine_say_they_are_destructive(run_async: RunAnyio) -> None:
    async def annotations() -> dict[str, bool | None]:
        tools = await create_server(BuildRegistry()).list_tools()
        return {tool.name: tool.annotations.destructive_hint for tool in tools if tool.annotations is not None}

    said = run_async(annotations)
    assert said["build_engine"] is True and said["start_build"] is True, said
