"""docs/api.md (mkdocstrings) documents every public entry point: each ``::: path`` resolves, and the watch
feature's names are among those it renders."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from trt_widget import BuildWidget

API = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def _resolve(path: str) -> Any:
    """The object a mkdocstrings identifier names (a module, or an attribute path inside one)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(path)


def _qualified(obj: Any) -> str:
    return obj.__name__ if inspect.ismodule(obj) else f"{obj.__module__}.{obj.__qualname__}"


def _documented() -> tuple[set[str], set[str]]:
    """(objects rendered whole, with their public members; objects rendered alone) as qualified names."""
    whole: set[str] = set()
    alone: set[str] = set()
    for block in re.split(r"^(?=::: )", API.read_text(encoding="utf-8"), flags=re.M)[1:]:
        target = _resolve(block.split()[1])
        members = re.search(r"^\s+members: \[(.*)\]", block, flags=re.M)
        if members is None:
            whole.add(_qualified(target))
        else:
            alone.update(_qualified(getattr(target, m.strip())) for m in members.group(1).split(","))
    return whole, alone


def test_every_api_directive_names_an_importable_object() -> None:
    whole, alone = _documented()
    assert whole and alone


def _watch_entry_points() -> list[Any]:
    import trt_widget.watch as watch
    from trt_widget.watch import WatchWidget

    return [
        watch.watch,
        watch.watch_call,
        watch.Watch,
        watch.WatchedCall,
        watch.ProcessCall,
        watch.WatchedBuild,
        WatchWidget,
        BuildWidget.watch,
        BuildWidget.run,
    ]


@pytest.mark.parametrize("obj", _watch_entry_points(), ids=_qualified)
def test_the_watch_feature_is_in_the_api_page(obj: Any) -> None:
    whole, alone = _documented()
    name = _qualified(obj)
    assert name in alone or any(name == w or name.startswith(w + ".") for w in whole), f"docs/api.md lacks {name}"
