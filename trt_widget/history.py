"""Timing history: each finished build's phase profile in a small local SQLite store, for ETAs and comparisons.

A build is keyed by sha256 of its model + the engine-shaping options + the backend version; a later build with
the same key gets an ETA from the newest *succeeded* profile (cancelled and failed builds are recorded but never
used). SQLite serialises concurrent writers (two kernels) with its own file locks, so the store never corrupts.
The store lives in the user cache dir unless ``TRT_WIDGET_HISTORY`` (a file or directory; "off" disables) or
``Build(history=path | HistoryStore)`` says otherwise.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sqlite3
import threading
import time
import warnings
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


def _store(store: Union[HistoryStore, str, os.PathLike, None]) -> HistoryStore:
    if isinstance(store, HistoryStore):
        return store
    if store is not None:
        return HistoryStore(store)
    path = default_path()
    if path is None:
        raise RuntimeError(f"history is turned off ({ENV}={os.environ.get(ENV)!r})")
    return HistoryStore(path)


# -- public helpers -------------------------------------------------------------------------------------
def list_builds(store: Union[HistoryStore, str, os.PathLike, None] = None) -> list[dict[str, Any]]:
    """Recorded builds, newest first, without their phase rows (``phases`` gives the count)."""
    out = []
    for record in _store(store).records():
        rows = record.pop("rows", [])
        record["phases"] = len(rows)
        record["when"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.get("created", 0)))
        out.append(record)
    return out


def clear(store: Union[HistoryStore, str, os.PathLike, None] = None) -> int:
    """Forget every recorded build; returns how many were deleted."""
    return _store(store).clear()


def compare(a: Any, b: Any, store: Union[HistoryStore, str, os.PathLike, None] = None) -> list[dict[str, Any]]:
    """Per phase path: ``{"path", "name", "depth", "a_s", "b_s", "delta"}`` (delta = b - a; None if missing).

    ``a``/``b``: a record id (from :func:`list_builds`), a record dict, a Build/BuildWidget, or timings rows.
    A first row ``"(total)"`` compares whole-build durations when both sides know them.
    """
    rows_a, total_a = _profile(a, store)
    rows_b, total_b = _profile(b, store)
    index_a = {r["path"]: r for r in rows_a}
    index_b = {r["path"]: r for r in rows_b}
    out: list[dict[str, Any]] = []
    if total_a is not None and total_b is not None:
        out.append({"path": "(total)", "name": "(total)", "depth": -1, "a_s": total_a, "b_s": total_b,
                    "delta": total_b - total_a})
    for path in list(index_a) + [p for p in index_b if p not in index_a]:
        a_s = index_a[path]["duration_s"] if path in index_a else None
        b_s = index_b[path]["duration_s"] if path in index_b else None
        out.append({"path": path_label(path), "name": path[-1][0], "depth": len(path) - 1, "a_s": a_s,
                    "b_s": b_s, "delta": None if a_s is None or b_s is None else b_s - a_s})
    return out


def _profile(item: Any, store: Any) -> tuple[list[dict[str, Any]], float | None]:
    """Rows with tuple paths (+ the total duration if known) of a record id / record / build / rows."""
    if isinstance(item, int) and not isinstance(item, bool):
        record = _store(store).get(item)
        if record is None:
            raise KeyError(f"no build with id {item} in the history store")
        item = record
    if isinstance(item, dict):
        if "rows" not in item and "id" in item:
            return _profile(int(item["id"]), store)
        rows = [{**r, "path": tuple((str(n), int(k)) for n, k in r["path"])} for r in item.get("rows", [])]
        return rows, item.get("total_s")
    total = None
    if hasattr(item, "timings") and callable(item.timings):
        build = getattr(item, "build", item)
        total = getattr(build, "elapsed_s", None) if getattr(build, "done", False) else None
        item = item.timings()
    if isinstance(item, (list, tuple)):
        return profile_rows(item), total
    raise TypeError(f"cannot compare a {type(item).__name__}: pass a history id, record, Build or timings rows")


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


# -- the link between one Build and the store -------------------------------------------------------------
def attach_history(build: Any, history: Any) -> None:
    """Set ``build.history`` to a :class:`HistoryLink` (or leave None when history is off)."""
    if history is False or history is None:
        return
    if isinstance(history, HistoryStore):
        store = history
    elif isinstance(history, (str, os.PathLike)):
        store = HistoryStore(history)
    elif history is True:
        path = default_path()
        if path is None:
            return
        store = HistoryStore(path)
    else:
        raise TypeError(f"history must be True, False, a path or a HistoryStore; got {type(history).__name__}")
    build.history = HistoryLink(build, store)


class HistoryLink:
    """ETA and per-phase deltas for one build from its best past match; records the build when it ends.

    The match is looked up on a background thread (hashing a large model takes a moment); ``eta()`` and
    ``deltas()`` return None until it is known, and are cheap (cached per phase-structure change).
    """

    def __init__(self, build: Any, store: HistoryStore) -> None:
        self.build = build
        self.store = store
        self.key: str | None = None
        self.model_hash: str | None = None
        self.match: dict[str, Any] | None = None  # the newest succeeded record with the same key
        self.error: str | None = None
        self.recorded_id: int | None = None
        self.ready = threading.Event()
        self.recorded = threading.Event()
        self._past: dict[PhasePath, dict[str, Any]] = {}
        self._paths: list[PhasePath] = []
        self._counts: dict[tuple[Any, str], int] = {}
        self._cache_version = -1
        self._anchor = (0.0, 0.0, 0.0)  # (past position, current time, upper bound of the position)
        self._running: list[tuple[int, str, float, float]] = []  # (id, name, start_s, expected duration)
        self._deltas: dict[str, float] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._load, name="trt_widget-history", daemon=True).start()
        build.on_done(self._record)

    def _load(self) -> None:
        try:
            self.key, self.model_hash = build_key(self.build)
            self.match = self.store.latest(self.key)
            if self.match is not None:
                self._past = {tuple((str(n), int(k)) for n, k in r["path"]): r for r in self.match["rows"]}
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"trt_widget history unavailable: {self.error}", RuntimeWarning, stacklevel=2)
        finally:
            self.ready.set()

    @property
    def based_on(self) -> str | None:
        if self.match is None:
            return None
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.match["created"]))
        return f"build of {when}, {self.match['total_s']:.1f} s"

    def _refresh(self) -> None:
        """Re-derive the anchor, running phases and deltas when the phase structure changed."""
        model = self.build.model
        version = model.structure_version
        if version == self._cache_version:
            return
        rows = model.rows()
        for row in rows[len(self._paths):]:
            key = (row["parent"], row["name"])
            k = self._counts.get(key, 0)
            self._counts[key] = k + 1
            base = self._paths[row["parent"]] if row["parent"] is not None else ()
            self._paths.append(base + ((row["name"], k),))
        total = float(self.match["total_s"]) if self.match else 0.0
        best_p, best_c, upper = 0.0, 0.0, total
        running, deltas = [], {}
        for row in rows:
            past = self._past.get(self._paths[row["id"]])
            if past is None or past.get("end_s") is None:
                continue
            events = [(past["start_s"], row["start_s"])]
            if row["end_s"] is None:
                upper = min(upper, past["end_s"])
                running.append((row["id"], row["name"], row["start_s"], past["duration_s"]))
            else:
                events.append((past["end_s"], row["end_s"]))
                if row["status"] != "cancelled":
                    deltas[str(row["id"])] = row["duration_s"] - past["duration_s"]
            for p, c in events:
                if p > best_p or (p == best_p and c > best_c):
                    best_p, best_c = p, c
        self._anchor, self._running, self._deltas = (best_p, best_c, upper), running, deltas
        self._cache_version = version

    def eta(self) -> dict[str, Any] | None:
        """``{"total_s", "remaining_s", "based_on", "phases": {name: expected s}, "running": {id: {...}}}``.

        None without a match or once the build ended. The position in the past build is the latest matched
        phase start/end plus the time since it, held at the past end of any phase still running now.
        """
        if not self.ready.is_set() or self.match is None or self.build.done:
            return None
        total = float(self.match["total_s"])
        if self.build.status == "idle":
            return {"total_s": round(total, 2), "remaining_s": round(total, 2), "based_on": self.based_on,
                    "phases": {}, "running": {}}
        with self._lock:
            self._refresh()
            (best_p, best_c, upper), running = self._anchor, self._running
        now = self.build.elapsed_s
        position = min(max(best_p, best_p + now - best_c), max(upper, best_p))
        remaining = max(total - position, 0.0)
        return {
            "total_s": round(now + remaining, 2),
            "remaining_s": round(remaining, 2),
            "based_on": self.based_on,
            "phases": {name: round(expected, 3) for _, name, _, expected in running},
            "running": {str(pid): {"expected_s": round(expected, 3),
                                   "remaining_s": round(max(expected - (now - start), 0.0), 3)}
                        for pid, _, start, expected in running},
        }

    def deltas(self) -> dict[str, float] | None:
        """str(phase id) -> seconds slower (+) or faster (−) than the matched past instance, finished phases."""
        if not self.ready.is_set() or self.match is None:
            return None
        with self._lock:
            self._refresh()
            return {k: round(v, 4) for k, v in self._deltas.items()}

    def _record(self, build: Any) -> None:
        """on_done: store this build's profile (never raises into the build)."""
        try:
            self.ready.wait(60)
            if self.key is None:
                return
            resources = getattr(build, "resources", None)
            if resources is not None and hasattr(resources, "stop"):
                resources.stop()  # its final sample belongs in the record
            from ._backend import backend_info

            record = {
                "key": self.key, "model_hash": self.model_hash, "label": build.source.label,
                "status": build.status, "status_detail": build.status_detail, "created": time.time(),
                "total_s": build.elapsed_s, "options": build.options.summary(), "backend": backend_info(),
                "isolation": build.options.isolation,
                "resources": resources.summary() if resources is not None else None,
                "based_on_id": self.match["id"] if self.match else None,
                "rows": profile_rows(build.timings()),
            }
            self.recorded_id = self.store.add(record)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"trt_widget could not record the build in its history: {self.error}", RuntimeWarning,
                          stacklevel=2)
        finally:
            self.recorded.set()

    def __repr__(self) -> str:
        return f"<HistoryLink {self.store.path} match={self.based_on!r}>"
