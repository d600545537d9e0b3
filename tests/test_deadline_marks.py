"""Every test that asserts a wall-clock upper bound is marked ``deadline`` (scripts/test.sh runs those alone, after
the parallel pass), read from the tests' source: a new ``assert time.monotonic() - t0 < 5`` unmarked fails here,
before a loaded CI runner makes it flaky. A bound of 30 s or more guards a hang, not a deadline, and needs no mark;
``rtx_long_step`` and Ray tests get the mark from tests/conftest.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns"}
HANG_GUARD_S = 30.0
MARKED = ("deadline", "rtx_long_step", "ray")  # the last two: marked deadline by tests/conftest.py
# a mark (a name, not a word in a skip's reason: "array"), or the fixture that makes a test a Ray one
MARKS = re.compile(rf"\bmark\.({'|'.join(MARKED)})\b|usefixtures\(.*['\"]ray_session['\"]")


def _is_clock(node: ast.AST) -> bool:
    """``time.monotonic()``, ``time.perf_counter()``, ``time.time()`` (or the first two imported bare)."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "time":
        return f.attr in CLOCKS
    return isinstance(f, ast.Name) and f.id in {"monotonic", "perf_counter"}


def _number(node: ast.AST) -> float | None:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _clock_names(function: ast.AST) -> set[str]:
    """The names a function assigns from a clock reading, or from a name that holds one (transitively)."""
    names: set[str] = set()
    assignments = [n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr))]
    for _ in range(4):
        for node in assignments:
            if node.value is None or not any(
                _is_clock(x) or (isinstance(x, ast.Name) and x.id in names) for x in ast.walk(node.value)
            ):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(x.id for t in targets for x in ast.walk(t) if isinstance(x, ast.Name))
    return names


def _upper_bounds(function: ast.AST) -> list[str]:
    """The asserts that put a clock-derived value under a constant below HANG_GUARD_S."""
    names = _clock_names(function)

    def timed(node: ast.AST) -> bool:
        return any(_is_clock(x) or (isinstance(x, ast.Name) and x.id in names) for x in ast.walk(node))

    found = []
    for node in ast.walk(function):
        if not isinstance(node, ast.Assert):
            continue
        for compare in (c for c in ast.walk(node.test) if isinstance(c, ast.Compare)):
            operands = [compare.left, *compare.comparators]  # a < b < c: (a, <, b), (b, <, c)
            for left, op, right in zip(operands, compare.ops, operands[1:], strict=False):
                if isinstance(op, (ast.Gt, ast.GtE)):
                    left, right = right, left
                elif not isinstance(op, (ast.Lt, ast.LtE)):
                    continue
                bound = _number(right)
                if bound is not None and bound < HANG_GUARD_S and timed(left):
                    found.append(f"line {node.lineno}: {ast.unparse(node.test)}")
    return found


def _unmarked_bounds(path: Path, root: Path = TESTS) -> dict[str, list[str]]:
    source = path.read_text()
    if not any(clock in source for clock in ("monotonic", "perf_counter", "time(")):
        return {}  # reads no clock (most modules: parsing them all is most of this test's time)
    tree = ast.parse(source)
    module_marks = " ".join(
        ast.unparse(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
    )
    if MARKS.search(module_marks):
        return {}
    functions = {
        n.name: n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.col_offset == 0
    }
    found: dict[str, list[str]] = {}
    for name, function in functions.items():
        if not name.startswith("test") or any(MARKS.search(ast.unparse(d)) for d in function.decorator_list):
            continue
        if "ray_session" in {a.arg for a in function.args.args}:
            continue
        # the test's own asserts, and those of the module's helpers it calls (transitively)
        bounds: list[str] = []
        seen: set[str] = set()
        todo = [function]
        while todo:
            current = todo.pop()
            bounds += _upper_bounds(current)
            called = {c.func.id for c in ast.walk(current) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
            for name_called in sorted(called):
                helper = functions.get(name_called)
                if helper is not None and helper.name not in seen and not helper.name.startswith("test"):
                    seen.add(helper.name)
                    todo.append(helper)
        if bounds:
            found[f"{path.relative_to(root).as_posix()}::{name}"] = bounds
    return found


def test_every_test_asserting_a_wall_clock_bound_is_marked_deadline() -> None:
    unmarked = {k: v for path in sorted(TESTS.rglob("test_*.py")) for k, v in _unmarked_bounds(path).items()}
    assert not unmarked, f"mark these @pytest.mark.deadline (or bound them by state, not time): {unmarked}"


def test_the_scan_finds_a_bound_in_a_test_and_in_a_helper(tmp_path: Path) -> None:
    """The scan is not vacuous: an unmarked bound is found, in the test or in a helper it calls; a mark, a hang
    guard (30 s or more) and a lower bound need none."""
    source = (
        "import time\nimport pytest\n\n"
        "def _stop(t0):\n    took = time.monotonic() - t0\n    assert took < 1.0\n\n"
        "def test_direct():\n    t0 = time.perf_counter()\n    assert 0 <= time.perf_counter() - t0 <= 2.0\n\n"
        "def test_via_helper():\n    _stop(time.monotonic())\n\n"
        "@pytest.mark.deadline\ndef test_marked():\n    t0 = time.monotonic()\n    assert time.monotonic() - t0 < 1\n\n"
        "def test_hang_guard():\n    t0 = time.monotonic()\n    assert time.monotonic() - t0 < 60\n\n"
        "def test_lower_bound():\n    t0 = time.monotonic()\n    assert time.monotonic() - t0 > 0.1\n"
    )
    path = tmp_path / "test_scanned.py"
    path.write_text(source)
    found = _unmarked_bounds(path, root=tmp_path)
    assert sorted(name.split("::")[1] for name in found) == ["test_direct", "test_via_helper"], found


def test_a_mark_is_read_as_a_mark_not_as_a_word(tmp_path: Path) -> None:
    """A module's marks exempt it by name: "ray" in a skip's reason ("an array") or "deadline" in a string is no
    mark (any module whose marks held those letters was passed unread); a Ray fixture or mark is one."""
    bound = "\n\ndef test_bound():\n    t0 = time.monotonic()\n    assert time.monotonic() - t0 < 1\n"
    marks = {
        "worded": 'pytestmark = pytest.mark.skipif(False, reason="needs an array, no deadline")',
        "ray": "pytestmark = [pytest.mark.slow, pytest.mark.ray]",
        "fixture": 'pytestmark = [pytest.mark.usefixtures("ray_session")]',
        "deadline": "pytestmark = pytest.mark.deadline",
    }
    found = {}
    for name, line in marks.items():
        path = tmp_path / f"test_{name}.py"
        path.write_text(f"import time\nimport pytest\n\n{line}{bound}")
        found[name] = bool(_unmarked_bounds(path, root=tmp_path))
    assert found == {"worded": True, "ray": False, "fixture": False, "deadline": False}, found
