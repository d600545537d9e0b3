"""What history records are matched by: a build's key (model + engine-shaping options + backend) and the
paths of its phase instances (name, occurrence among same-name siblings), stable across builds."""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Iterable
from typing import Any

PhasePath = tuple[tuple[str, int], ...]  # a phase instance across builds: (name, occurrence among same-name siblings)


def phase_paths(rows: Iterable[dict[str, Any]]) -> dict[int, PhasePath]:
    """id -> path of names with each name's occurrence index among same-name siblings (stable across builds)."""
    paths: dict[int, PhasePath] = {}
    counts: dict[tuple[Any, str], int] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        parent = row.get("parent")
        k = counts.get((parent, row["name"]), 0)
        counts[(parent, row["name"])] = k + 1
        base = paths.get(parent, ()) if parent is not None else ()
        paths[row["id"]] = (*base, (row["name"], k))
    return paths


def profile_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stored form of timings rows: path, name, start/end/duration, steps and status."""
    rows = list(rows)
    paths = phase_paths(rows)
    keep = ("name", "start_s", "end_s", "duration_s", "step", "num_steps", "status")
    return [{"path": paths[r["id"]], **{k: r.get(k) for k in keep}} for r in sorted(rows, key=lambda r: r["id"])]


def path_label(path: PhasePath) -> str:
    """``"Building engine / Timing tactics [2]"``: the occurrence index is shown from the second one on."""
    return " / ".join(name if k == 0 else f"{name} [{k + 1}]" for name, k in path)


def build_key(build: Any) -> tuple[str, str]:
    """(key, model hash): sha256 of model bytes (or a callable's name + source) + options + backend."""
    from .._backend import backend_info

    source = build.source
    data = source.read_bytes()
    if data is None:
        fn = source.value
        try:
            code = inspect.getsource(fn)
        except (OSError, TypeError):
            code = ""
        name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}"
        data = f"callable:{name}\n{code}".encode()
    model_hash = hashlib.sha256(data).hexdigest()
    blob = json.dumps(
        {"model": model_hash, "options": build.options.summary(), "backend": backend_info()},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest(), model_hash
