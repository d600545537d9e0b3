"""The timing-history store: a small local SQLite file of build records, plus the build key and phase paths.

A build is keyed by sha256 of its model + the engine-shaping options + the backend version; its phase rows are
stored with paths (name, occurrence among same-name siblings) so phase instances match across builds. SQLite
serialises concurrent writers (two kernels) with its own file locks, so the store never corrupts.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any, Iterable, Union

ENV = "TRT_WIDGET_HISTORY"
FILENAME = "history.sqlite"
KEEP_PER_KEY = 20  # newest records kept per build key
KEEP_TOTAL = 1000  # newest records kept overall
_OFF = ("0", "off", "false", "no", "none")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS builds (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    total_s REAL,
    label TEXT,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS builds_by_key ON builds (key, status, id);
"""

PhasePath = tuple[tuple[str, int], ...]  # a phase instance across builds: (name, occurrence among same-name siblings)


# -- the store -------------------------------------------------------------------------------------------
def default_path() -> Path | None:
    """Where history goes by default: ``$TRT_WIDGET_HISTORY``, else the user cache dir; None when turned off."""
    value = os.environ.get(ENV, "").strip()
    if value:
        if value.lower() in _OFF:
            return None
        path = Path(value).expanduser()
        return path / FILENAME if path.is_dir() or value.endswith(("/", os.sep)) else path
    try:
        from platformdirs import user_cache_dir

        base = Path(user_cache_dir("trt_widget", appauthor=False))
    except ImportError:
        base = Path.home() / ".cache" / "trt_widget"
    return base / FILENAME


class HistoryStore:
    """A SQLite file of build records; every call opens its own short connection (thread- and process-safe)."""

    def __init__(self, path: Union[str, os.PathLike]) -> None:
        target = Path(path).expanduser()
        self.path = target / FILENAME if target.is_dir() else target
        self._created = False

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
        try:
            if not self._created:
                conn.executescript(_SCHEMA)
                self._created = True
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise ValueError(f"{self.path} is not a trt_widget history store (SQLite): {exc}") from exc
        return conn

    def add(self, record: dict[str, Any]) -> int:
        """Append one build record (pruning old ones) and return its id."""
        body = {k: v for k, v in record.items() if k != "id"}
        text = json.dumps(body, separators=(",", ":"), default=str)
        with closing(self._connect()) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                cur = conn.execute(
                    "INSERT INTO builds (key, status, created, total_s, label, record) VALUES (?, ?, ?, ?, ?, ?)",
                    (body["key"], body["status"], body.get("created", time.time()), body.get("total_s"),
                     body.get("label"), text))
                new_id = int(cur.lastrowid or 0)
                conn.execute("DELETE FROM builds WHERE key = ? AND id NOT IN "
                             "(SELECT id FROM builds WHERE key = ? ORDER BY id DESC LIMIT ?)",
                             (body["key"], body["key"], KEEP_PER_KEY))
                conn.execute("DELETE FROM builds WHERE id NOT IN (SELECT id FROM builds ORDER BY id DESC LIMIT ?)",
                             (KEEP_TOTAL,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return new_id

    def latest(self, key: str, status: str = "succeeded") -> dict[str, Any] | None:
        """The newest record with this key and status, or None."""
        with closing(self._connect()) as conn:
            row = conn.execute("SELECT id, record FROM builds WHERE key = ? AND status = ? ORDER BY id DESC LIMIT 1",
                               (key, status)).fetchone()
        return _decode(row) if row else None

    def get(self, build_id: int) -> dict[str, Any] | None:
        with closing(self._connect()) as conn:
            row = conn.execute("SELECT id, record FROM builds WHERE id = ?", (int(build_id),)).fetchone()
        return _decode(row) if row else None

    def records(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Full records (with rows), newest first."""
        with closing(self._connect()) as conn:
            rows = conn.execute("SELECT id, record FROM builds ORDER BY id DESC LIMIT ?",
                                (-1 if limit is None else int(limit),)).fetchall()
        return [_decode(row) for row in rows]

    def clear(self) -> int:
        """Delete every record; returns how many there were."""
        with closing(self._connect()) as conn:
            return conn.execute("DELETE FROM builds").rowcount

    def __bool__(self) -> bool:  # a store is a store even when empty (``if history:`` must not skip it)
        return True

    def __len__(self) -> int:
        with closing(self._connect()) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM builds").fetchone()[0])

    def __repr__(self) -> str:
        return f"HistoryStore({str(self.path)!r})"


def _decode(row: Any) -> dict[str, Any]:
    record = json.loads(row[1])
    record["id"] = int(row[0])
    return record


def resolve_store(store: Union[HistoryStore, str, os.PathLike, None]) -> HistoryStore:
    """A HistoryStore for a store, a path, or None (the default path; RuntimeError when history is off)."""
    if isinstance(store, HistoryStore):
        return store
    if store is not None:
        return HistoryStore(store)
    path = default_path()
    if path is None:
        raise RuntimeError(f"history is turned off ({ENV}={os.environ.get(ENV)!r})")
    return HistoryStore(path)


# -- build keys and phase paths ---------------------------------------------------------------------------
def phase_paths(rows: Iterable[dict[str, Any]]) -> dict[int, PhasePath]:
    """id -> path of names with each name's occurrence index among same-name siblings (stable across builds)."""
    paths: dict[int, PhasePath] = {}
    counts: dict[tuple[Any, str], int] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        parent = row.get("parent")
        k = counts.get((parent, row["name"]), 0)
        counts[(parent, row["name"])] = k + 1
        paths[row["id"]] = paths.get(parent, ()) + ((row["name"], k),)  # type: ignore[arg-type]
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
    from ._backend import backend_info

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
    blob = json.dumps({"model": model_hash, "options": build.options.summary(), "backend": backend_info()},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest(), model_hash
