"""One way to make a build: no class in trt_widget/ creates one with ``__new__`` or skips ``__init__``, and no code
decides what a build does by its runner's name (a runner declares it: ``framed``, ``local``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from trt_widget import Build, models
from trt_widget._phases import PhaseModel
from trt_widget.runners import ReplayRunner, ThreadRunner

PACKAGE = Path(__file__).resolve().parents[1] / "trt_widget"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_the_sources_are_found() -> None:
    assert len(SOURCES) > 50 and PACKAGE / "_build.py" in SOURCES


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_build_is_made_with_new_or_without_init(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "__new__(" not in text, f"{path.name} creates an object with __new__"
    assert "_assemble(" not in text, f"{path.name} assembles a build outside its constructor"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef) and any(getattr(b, "id", "") == "Build" for b in node.bases):
            init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            if init is not None:  # a subclass's constructor calls Build's
                calls = [n for n in ast.walk(init) if isinstance(n, ast.Call)]
                assert any(ast.unparse(c.func) == "super().__init__" for c in calls), f"{node.name} skips __init__"


NAME_CHECK = re.compile(r"runner\w*\.name\s*(==|!=|\bin\b|\bnot in\b)|\.name\s+(not\s+)?in\s+\(\s*['\"](replay|remote)")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_behaviour_is_decided_by_a_runners_name(path: Path) -> None:
    found = [line for line in path.read_text(encoding="utf-8").splitlines() if NAME_CHECK.search(line)]
    assert not found, f"{path.name} decides by a runner's name: {found}"


def test_the_name_check_pattern_finds_what_it_is_for() -> None:
    assert NAME_CHECK.search('self._framed = runner.name not in ("replay", "remote")')
    assert NAME_CHECK.search('if self.runner.name == "remote":')
    assert not NAME_CHECK.search('name = "remote"')


def test_framing_follows_the_runners_declaration_not_its_name() -> None:
    class Named(ThreadRunner):
        name = "replay"  # a name alone changes nothing

    framed = Build(models.deep_residual(2), runner=Named(), history=False).start()
    assert framed.wait(120) == "succeeded"
    assert [r["name"] for r in framed.timings() if r["depth"] == 0][-1] == "Serializing and saving the engine"

    class Unframed(ThreadRunner):
        framed = False

    bare = Build(models.deep_residual(2), runner=Unframed(), history=False).start()
    assert bare.wait(120) == "succeeded"
    assert [r["name"] for r in bare.timings() if r["depth"] == 0][-1] == "Building engine"
    assert ReplayRunner.framed is False


def test_the_after_row_is_made_by_the_phase_model_not_by_a_listener() -> None:
    """A build subscribes nothing to its own phase model: the "after" row is the model's own work."""
    build = Build(models.deep_residual(2), history=False, resources=False)
    assert isinstance(build.model, PhaseModel) and build.model.framing is not None
    assert build.model._listeners == []
