"""Timing history: each finished build's phase profile in a small local SQLite store, for ETAs and comparisons.

A build is keyed by sha256 of its model + the engine-shaping options + the backend version; a later build with
the same key gets an ETA from the newest *succeeded* profile (cancelled and failed builds are recorded but never
used). SQLite serialises concurrent writers (two kernels) with its own file locks, so the store never corrupts.
The store lives in the user cache dir unless ``TRT_WIDGET_HISTORY`` or ``Build(history=...)`` says otherwise:
both take a file or directory, or "off" (also "none", "false", "no", "0") to disable, parsed by one function,
:func:`history_path`. History never fails a build: an unusable location turns it off with a warning, a corrupt
store is moved aside and started anew, and unreadable records are flagged (listing) or skipped (ETA).

This is the public module: :func:`list_builds`, :func:`compare` and :func:`clear` live here; the store, build
key and phase paths in ``_history_store``, the per-build ETA link in ``_eta``; both are re-exported.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypedDict, runtime_checkable

from .._json import json_int
from ._eta import HistoryLink, attach_history
from ._keys import PhasePath, ProfileRow, build_key, path_label, phase_paths, profile_rows
from ._store import (
    ENV,
    FILENAME,
    KEEP_PER_KEY,
    KEEP_TOTAL,
    HistoryRecord,
    HistoryStore,
    default_path,
    history_path,
    profile_problem,
    resolve_store,
)

if TYPE_CHECKING:
    from .._phases import PhaseRow

StoreLike = HistoryStore | str | os.PathLike[str] | None


class PhaseComparison(TypedDict):
    """One row of :func:`compare`: a phase path's seconds in a and b (None where a side lacks it)."""

    path: str
    name: str
    depth: int
    a_s: float | None
    b_s: float | None
    delta: float | None


@runtime_checkable
class _Timed(Protocol):
    def timings(self) -> Sequence[PhaseRow]: ...


__all__ = [
    "ENV",
    "FILENAME",
    "KEEP_PER_KEY",
    "KEEP_TOTAL",
    "HistoryLink",
    "HistoryStore",
    "PhasePath",
    "attach_history",
    "build_key",
    "clear",
    "compare",
    "default_path",
    "history_path",
    "list_builds",
    "path_label",
    "phase_paths",
    "profile_rows",
]


def list_builds(store: StoreLike = None) -> list[HistoryRecord]:
    """Recorded builds, newest first, without their phase rows (``phases`` gives the count).

    A record whose stored text cannot be read is still listed, from its columns, with an ``error`` saying why.
    """
    out = []
    for record in resolve_store(store).records():
        rows = record.pop("rows", [])
        record["phases"] = len(rows) if isinstance(rows, list) else 0
        try:
            record["when"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.get("created") or 0))
        except (TypeError, ValueError, OverflowError, OSError):  # a damaged time: list the build anyway
            record["when"] = "?"
        out.append(record)
    return out


def clear(store: HistoryStore | str | os.PathLike[str] | None = None) -> int:
    """Forget every recorded build; returns how many were deleted."""
    return resolve_store(store).clear()


def compare(a: object, b: object, store: StoreLike = None) -> list[PhaseComparison]:
    """Per phase path: ``{"path", "name", "depth", "a_s", "b_s", "delta"}`` (delta = b - a; None if missing).

    ``a``/``b``: a record id (from :func:`list_builds`), a record dict, a Build/BuildWidget, or timings rows.
    A first row ``"(total)"`` compares whole-build durations when both sides know them.
    """
    rows_a, total_a = _profile(a, store)
    rows_b, total_b = _profile(b, store)
    index_a = {r["path"]: r for r in rows_a}
    index_b = {r["path"]: r for r in rows_b}
    out: list[PhaseComparison] = []
    if total_a is not None and total_b is not None:
        out.append(
            {
                "path": "(total)",
                "name": "(total)",
                "depth": -1,
                "a_s": total_a,
                "b_s": total_b,
                "delta": total_b - total_a,
            }
        )
    for path in list(index_a) + [p for p in index_b if p not in index_a]:
        a_s = index_a[path]["duration_s"] if path in index_a else None
        b_s = index_b[path]["duration_s"] if path in index_b else None
        out.append(
            {
                "path": path_label(path),
                "name": path[-1][0],
                "depth": len(path) - 1,
                "a_s": a_s,
                "b_s": b_s,
                "delta": None if a_s is None or b_s is None else b_s - a_s,
            }
        )
    return out


def _profile(item: object, store: StoreLike) -> tuple[list[ProfileRow], float | None]:
    """Rows with tuple paths (+ the total duration if known) of a record id / record / build / rows."""
    if json_int(item):
        record = resolve_store(store).get(item)
        if record is None:
            raise KeyError(f"no build with id {item} in the history store")
        problem = profile_problem(record)  # its times read as an event's are (json_time)
        if problem is not None:
            raise ValueError(f"history record {item} cannot be compared: {problem}")
        item = record
    if isinstance(item, dict):
        if "rows" not in item and "id" in item:
            return _profile(int(item["id"]), store)
        rows: list[ProfileRow] = [
            {
                "path": tuple((str(n), int(k)) for n, k in r["path"]),
                "name": r.get("name"),
                "start_s": r.get("start_s"),
                "end_s": r.get("end_s"),
                "duration_s": r.get("duration_s"),
                "step": r.get("step"),
                "num_steps": r.get("num_steps"),
                "status": r.get("status"),
            }
            for r in item.get("rows", [])
        ]
        return rows, item.get("total_s")
    total = None
    if isinstance(item, _Timed) and callable(item.timings):
        build = getattr(item, "build", item)
        total = getattr(build, "elapsed_s", None) if _ended(build) else None
        item = item.timings()
    if isinstance(item, (list, tuple)):
        return profile_rows(item), total
    raise TypeError(f"cannot compare a {type(item).__name__}: pass a history id, record, Build or timings rows")


def _ended(build: object) -> bool:
    """Whether ``build`` (a Build, or anything with a ``done()`` method or ``done`` flag) has ended."""
    done = getattr(build, "done", False)
    return bool(done() if callable(done) else done)
