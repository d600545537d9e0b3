"""The package's shape: no import circles, no folder reaching into another folder's private modules or names.

A flat core (``trt_widget/_*.py``) and feature folders (``runners/``, ``report/``, ``history/``, ``matrix/``,
``serve/``, ...), each with its public names in its ``__init__``. Every import counts, those inside functions
too (a lazy import is still a dependency), and so do module names written as strings for
``importlib.import_module`` (a literal argument, or a ``_LAZY``-style table of names to modules); only
``if TYPE_CHECKING:`` blocks are left out.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "trt_widget"
_MODULE_STRING = re.compile(r"(\.+|trt_widget\.)[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")  # "._build", "trt_widget.ray"

Import = tuple[str, "str | None", int]  # (imported module, imported name or None, line)


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = ["trt_widget", *path.relative_to(package).with_suffix("").parts]
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


def _absolute(text: str, anchor: str) -> str | None:
    """The module a name written as a string means (``"._build"`` from ``trt_widget``), None for other strings."""
    if text != "trt_widget" and not _MODULE_STRING.fullmatch(text):
        return None
    if not text.startswith("."):
        return text
    level = len(text) - len(text.lstrip("."))
    base = anchor.split(".")[: len(anchor.split(".")) - level + 1]
    return ".".join(base + ([text[level:]] if text[level:] else []))


def _is_import_module(node: ast.Call) -> bool:
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "import_module") or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )


def _string_imports(node: ast.AST, name: str, package: str) -> list[tuple[str, str | None]]:
    """(module, name or None) named as strings: ``import_module("._x", __name__)`` or a table of names to modules
    (``_LAZY = {"Build": "._build"}``, resolved against the package as ``import_module(_LAZY[n], __name__)`` is)."""
    if isinstance(node, ast.Call) and _is_import_module(node) and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            anchor = package
            if len(node.args) > 1 and isinstance(node.args[1], ast.Name) and node.args[1].id == "__name__":
                anchor = name
            module = _absolute(first.value, anchor)
            return [(module, None)] if module else []
    if isinstance(node, ast.Dict) and node.values:
        values = [v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None for v in node.values]
        modules = [_absolute(v, package) if v is not None and v != "trt_widget" else None for v in values]
        if all(modules):
            keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in node.keys]
            return [(m, k if k and k.isidentifier() else None) for m, k in zip(modules, keys, strict=True) if m]
    return []


def _imports(name: str, path: Path, modules: dict[str, Path] = MODULES) -> list[Import]:
    """Every import of a trt_widget module in ``path``, as (imported module, imported name or None, line)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            named += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            named += [(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, (ast.Call, ast.Dict)):
            named += [(module, attr, node.lineno) for module, attr in _string_imports(node, name, package)]
    found: list[Import] = []
    for module, attr, line in named:
        if module != "trt_widget" and not module.startswith("trt_widget."):
            continue
        if attr is not None and f"{module}.{attr}" in modules:
            found.append((f"{module}.{attr}", None, line))
        else:
            found.append((module, attr, line))
    return found


def _graph(modules: dict[str, Path]) -> dict[str, list[Import]]:
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _folder(module: str, modules: dict[str, Path] = MODULES) -> str:
    """The folder a module lives in: 'trt_widget' for the core, 'trt_widget.serve' for serve/ ..."""
    parts = module.split(".")
    return module if modules[module].name == "__init__.py" else ".".join(parts[:-1])


def _is_private(module: str) -> bool:
    return module.rsplit(".", 1)[-1].startswith("_")


def _circles(graph: dict[str, list[Import]]) -> list[list[str]]:
    """The import circles (strongly connected components of more than one module, Tarjan), each sorted."""
    edges = {name: {m for m, _, _ in found if m in graph and m != name} for name, found in graph.items()}
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
    return sorted(circles)


def _private_imports(graph: dict[str, list[Import]], modules: dict[str, Path]) -> list[str]:
    """Imports of another folder's private modules or names (a subfolder may use its parents' private parts)."""
    wrong = []
    for name, found in graph.items():
        here = _folder(name, modules)
        for module, attr, line in found:
            if module not in modules:
                continue
            there = _folder(module, modules)
            inside = here == there or here.startswith(there + ".")
            if _is_private(module) and module != there and not inside:
                wrong.append(f"{name}:{line} imports the private module {module}")
            if attr is not None and attr.startswith("_") and there != here and not attr.startswith("__"):
                wrong.append(f"{name}:{line} imports the private name {module}.{attr}")
    return wrong


GRAPH = _graph(MODULES)


def test_the_package_has_no_import_circles() -> None:
    assert _circles(GRAPH) == []


def test_no_folder_imports_another_folders_private_modules_or_names() -> None:
    assert _private_imports(GRAPH, MODULES) == []


def test_the_lazy_names_of_trt_widget_count_as_imports() -> None:
    # trt_widget's _LAZY table and its import_module(".watch", __name__) are the package's own imports
    imported = {(m, a) for m, a, _ in GRAPH["trt_widget"]}
    expected = {("trt_widget._build", "Build"), ("trt_widget.matrix", "BuildMatrix"), ("trt_widget.watch", None)}
    assert expected <= imported


def _write(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for relative, text in files.items():
        path = root / "trt_widget" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return _modules(root / "trt_widget")


def test_the_checker_sees_a_circle_and_a_private_import(tmp_path: Path) -> None:
    # a made-up package, read by the same functions as the real one: each circle closes through one kind of import
    modules = _write(
        tmp_path,
        {
            "__init__.py": """
                __version__ = "0"
                _LAZY = {"Thing": ".feat", "Other": "._plain"}
                """,
            "feat/__init__.py": "from .. import __version__\n",
            "_plain.py": "def f():\n    from ._late import g\n",
            "_late.py": "from . import _plain\n",
            "_dyn.py": "import importlib\nimportlib.import_module('._back', __package__)\n",
            "_back.py": "import trt_widget._dyn\n",
            "_typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._alone import x\n",
            "_alone.py": "from ._typed import y\n",
            "serve/__init__.py": "",
            "serve/_store.py": "",
            "matrix/__init__.py": "from ..serve._store import Store\nfrom ..serve import _helper\n",
        },
    )
    graph = _graph(modules)
    assert _circles(graph) == [
        ["trt_widget", "trt_widget.feat"],
        ["trt_widget._back", "trt_widget._dyn"],
        ["trt_widget._late", "trt_widget._plain"],
    ]
    assert _private_imports(graph, modules) == [
        "trt_widget.matrix:1 imports the private module trt_widget.serve._store",
        "trt_widget.matrix:2 imports the private name trt_widget.serve._helper",
    ]
