"""docs/architecture.md lists what the code has: the runners, the commands, the modules and folders. A test fails
when a list there differs from the code, so the page cannot drift."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from trt_widget.__main__ import COMMAND_NAMES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "trt_widget"
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def paragraph(starting: str) -> str:
    """The paragraph of the page that starts with ``starting``."""
    match = re.search(rf"^{re.escape(starting)}.*?(?:\n\n|\Z)", DOC, flags=re.S | re.M)
    assert match, f"docs/architecture.md has no paragraph starting {starting!r}"
    return match.group(0)


def runner_classes() -> set[str]:
    """Every class in trt_widget/ with the runner contract's ``run(self, ctx: RunContext)`` (not the contract)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and "Protocol" not in {ast.unparse(b) for b in node.bases}:
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "run" and len(item.args.args) == 2:
                        annotation = item.args.args[1].annotation
                        if annotation is not None and ast.unparse(annotation) == "RunContext":
                            found.add(node.name)
    return found


def test_the_runners_listed_are_the_runners_in_the_code() -> None:
    listed = set(re.findall(r"`(\w+)`", paragraph("Runners today:")))
    code = runner_classes()
    assert len(code) >= 9 and "ThreadRunner" in code and "RelayRunner" in code
    assert listed == code


def test_the_commands_listed_are_the_command_table() -> None:
    listed = re.findall(r"`(\w+)`", paragraph("Commands (").split(":", 2)[-1])
    assert listed == list(COMMAND_NAMES)


def test_the_folder_table_names_every_module_and_folder_and_nothing_else() -> None:
    table = "\n".join(line.split(" | ")[0] for line in DOC.splitlines() if line.startswith("| `"))
    named = set(re.findall(r"`([\w./]+)`", table))
    modules = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py"}
    folders = {f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    code = modules | folders
    python_named = {n for n in named if not n.startswith("js/") and not n.endswith(".json")}
    assert python_named == code, (sorted(code - python_named), sorted(python_named - code))
    assert all((PACKAGE / n).exists() for n in named if n.endswith(".json"))
    assert all((ROOT / n).is_dir() for n in named if n.startswith("js/"))
