"""Tests that expect TensorRT for RTX's own phase ("Determining refit engines") skip with NVIDIA TensorRT: each is
marked ``rtx_long_step`` (tests/conftest.py skips it there) or checks the backend itself. Read from the tests'
source, so a new test that waits for the phase unmarked fails here, on a CPU, before a GPU user meets it."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
RTX_PHASE = "Determining refit engines"
# the phase name as data fed to a phase model, not a phase a real build is expected to reach
SYNTHETIC = {"test_follow.py", "test_scripted.py", "test_e2e_first_hour.py"}  # rows written by the test
GUARDS = ('select_backend()[0] == "rtx"', 'select_backend()[0] != "rtx"', "if RTX", "_backend_kind()")


def _marked(node: ast.AST) -> bool:
    return "rtx_long_step" in ast.unparse(node)


def _unmarked_users(path: Path) -> list[str]:
    source = path.read_text()
    if RTX_PHASE not in source:
        return []
    tree = ast.parse(source)
    if any(
        isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets) and _marked(n)
        for n in tree.body
    ):
        return []
    # names that stand for the phase: constants holding it and helpers that wait for it, transitively
    tainted = {RTX_PHASE}
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for node in tree.body:
        if isinstance(node, ast.Assign) and RTX_PHASE in ast.unparse(node.value):
            tainted.update(getattr(t, "id", "") for t in node.targets)
    changed = True
    while changed:
        changed = False
        for f in functions:
            if f.name not in tainted and not f.name.startswith("test") and _uses(f, tainted):
                tainted.add(f.name)
                changed = True
    return [
        f"{path.relative_to(TESTS)}::{f.name}"
        for f in functions
        if f.name.startswith("test")
        and _uses(f, tainted)
        and not any(_marked(d) for d in f.decorator_list)
        and not any(guard in (ast.get_source_segment(source, f) or "") for guard in GUARDS)
    ]


def _uses(function: ast.FunctionDef | ast.AsyncFunctionDef, tainted: set[str]) -> bool:
    body = function.body[1:] if ast.get_docstring(function) is not None else function.body
    for node in (n for statement in [*function.decorator_list, *body] for n in ast.walk(statement)):
        if isinstance(node, ast.Name) and node.id in tainted:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and RTX_PHASE in node.value:
            return True
    return False


def test_every_test_that_expects_rtxs_long_step_is_marked_or_checks_the_backend() -> None:
    unmarked = [
        name
        for path in sorted(TESTS.rglob("test_*.py"))
        if path.name not in SYNTHETIC and path != Path(__file__).resolve()
        for name in _unmarked_users(path)
    ]
    assert not unmarked, f"mark these @pytest.mark.rtx_long_step (or check the backend): {unmarked}"
