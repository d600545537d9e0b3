"""Notebook files and outputs for the e2e harness: writing a notebook, reading outputs as text, polling."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"  # a widget's output (its model id only)
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"  # saved widget models, under metadata["widgets"]

T = TypeVar("T")


class CellError(AssertionError):
    """A notebook cell (or a kernel query) raised."""


def wait_until(predicate: Callable[[], T], timeout: float = 60.0, interval: float = 0.05, what: str = "condition") -> T:
    """Poll ``predicate`` until it returns something truthy and return that (TimeoutError after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def safe_name(text: str) -> str:
    """A file-name-safe version of a pytest node name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "test"


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def write_notebook(path: Path, cells: Sequence[str], kernel: str = "python3") -> Path:
    """Write a Python 3 notebook whose code cells hold ``cells`` (sources) and return its path."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def output_text(outputs: Sequence[Mapping[str, Any]]) -> str:
    """Concatenated text of nbformat outputs: streams, text/plain results, and errors as 'Name: value'."""
    parts: list[str] = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            text = out.get("text", "")
            parts.append(text if isinstance(text, str) else "".join(text))
        elif kind in ("execute_result", "display_data"):
            text = out.get("data", {}).get("text/plain", "")
            parts.append((text if isinstance(text, str) else "".join(text)) + "\n")
        elif kind == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}\n")
    return "".join(parts)


def saved_widget_state(nb: Any) -> dict[str, dict[str, Any]]:
    """The widget models JupyterLab saved into a notebook's metadata (model id -> model); {} if none."""
    return dict(nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {}))
