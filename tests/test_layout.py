"""The package's shape: no import circles, no folder reaching into another folder's private modules or names.

A flat core (``trt_widget/_*.py``) and feature folders (``runners/``, ``report/``, ``history/``, ``matrix/``,
``serve/``, ...), each with its public names in its ``__init__``. Every import counts, those inside functions
too (a lazy import is still a dependency); only ``if TYPE_CHECKING:`` blocks are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "trt_widget"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["trt_widget", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(name: str, path: Path) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import of a trt_widget module in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if node.lineno in skip if isinstance(node, (ast.Import, ast.ImportFrom)) else True:
            continue
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names if a.name.startswith("trt_widget")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not module.startswith("trt_widget"):
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if sub in MODULES:
                    found.append((sub, None, node.lineno))
                else:
                    found.append((module, alias.name, node.lineno))
    return found


def _folder(module: str) -> str:
    """The folder a module lives in: 'trt_widget' for the core, 'trt_widget.serve' for serve/ ..."""
    path = MODULES[module]
    parts = module.split(".")
    return module if path.name == "__init__.py" else ".".join(parts[:-1])


def _is_private(module: str) -> bool:
    return module.rsplit(".", 1)[-1].startswith("_")


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_the_package_has_no_import_circles() -> None:
    edges = {name: {m for m, _, _ in found if m in MODULES and m != name} for name, found in GRAPH.items()}
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    assert circles == []


def test_no_folder_imports_another_folders_private_modules_or_names() -> None:
    wrong = []
    for name, found in GRAPH.items():
        here = _folder(name)
        for module, attr, line in found:
            if module not in MODULES:
                continue
            there = _folder(module)
            inside = here == there or here.startswith(there + ".")
            if _is_private(module) and module != there and not inside:
                wrong.append(f"{name}:{line} imports the private module {module}")
            if attr is not None and attr.startswith("_") and there != here and not attr.startswith("__"):
                wrong.append(f"{name}:{line} imports the private name {module}.{attr}")
    assert wrong == []


def test_the_checker_sees_a_circle_and_a_private_import() -> None:
    # the rules above can fail: run them on a made-up pair of modules
    tree = {"trt_widget.a": {"trt_widget.b"}, "trt_widget.b": {"trt_widget.a"}}
    assert any(b in tree[a] and a in tree[b] for a in tree for b in tree if a != b)
    serve_private = [m for m in MODULES if m.startswith("trt_widget.serve._")]
    assert serve_private and all(_is_private(m) and _folder(m) == "trt_widget.serve" for m in serve_private)
