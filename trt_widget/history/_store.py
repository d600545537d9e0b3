"""The timing-history store: a small local SQLite file of build records (keys and paths: ``_history_keys``).

A build is keyed by sha256 of its model + the engine-shaping options + the backend version; its phase rows are
stored with paths (name, occurrence among same-name siblings) so phase instances match across builds. SQLite
serialises concurrent writers (two kernels) with its own file locks, so the store never corrupts.

History is an optional extra, so a bad store degrades instead of failing: a damaged SQLite store is moved aside
and a new store started, and a row that cannot be read is flagged or skipped. A file that is not SQLite at all
(``TRT_WIDGET_HISTORY=notes.md``) is someone's own file: never moved or written, builds run without history.
SQLite writes into the store in place, so a store, journal or folder that another user owns (planted in ``/tmp``)
is never used: its owner would read and edit this user's history.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import stat
import threading
import time
import warnings
from collections.abc import Callable, Hashable, Mapping
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, TypeGuard, TypeVar

from .._files import ForeignFile, NotARegularFile, UntrustedLink, expand_user, owned_by_another, resolve
from .._json import json_time

if TYPE_CHECKING:
    from .._build import HistorySetting
    from .._gpu import GpuFacts
    from .._json import JSONObject
    from .._resources import ResourcesSummary
    from ._keys import ProfileRow


class HistoryRecord(TypedDict, total=False):
    """One recorded build: its key, outcome, settings and phase rows (``error``: a record that cannot be read,
    listed from its columns; ``phases`` and ``when``: what ``list_builds`` shows instead of the rows)."""

    id: int
    key: str
    model_hash: str | None
    label: str | None
    status: str
    status_detail: str
    created: float
    total_s: float | None
    options: JSONObject
    backend: dict[str, str]
    isolation: str
    gpu: GpuFacts
    timing_cache: str
    resources: ResourcesSummary | None
    based_on_id: int | None
    rows: list[ProfileRow]
    engine: JSONObject | None  # the engine's brief (layers, precision mix, memory): "Δ last build"
    error: str
    phases: int
    when: str


ENV = "TRT_WIDGET_HISTORY"
FILENAME = "history.sqlite"
KEEP_PER_KEY = 20  # newest records kept per build key
KEEP_TOTAL = 1000  # newest records kept overall
OFF_WORDS = ("0", "off", "false", "no", "none")  # any case: history disabled
ON_WORDS = ("1", "on", "true", "yes")  # any case: the default location
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
_COLUMNS = "id, key, status, created, total_s, label, record"
SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database
NOT_SQLITE = "not an SQLite database: trt_widget leaves it as it is; point history= / TRT_WIDGET_HISTORY elsewhere"
_SIDECARS = ("-journal", "-wal", "-shm")  # SQLite's companion files, moved along with a corrupt store
FOREIGN_ADVICE = "trt_widget does not use it: remove it, or point history= / TRT_WIDGET_HISTORY at a file of yours"

T = TypeVar("T")


# -- where history goes ------------------------------------------------------------------------------------
def history_path(setting: HistorySetting = True) -> Path | None:
    """The store file a history setting names, or None when history is off; the one parser for both
    ``Build(history=...)`` and ``$TRT_WIDGET_HISTORY``, so the two always agree.

    True: ``$TRT_WIDGET_HISTORY`` if set, else the user cache dir. A string: "off", "none", "false", "no", "0"
    (any case) turn history off, "on", "true", "yes", "1" mean the same as True, anything else is a path.
    A path (string or os.PathLike) that is a directory, or a string ending in a separator, gets ``history.sqlite``.
    False / None / "": off.
    """
    if setting is True:
        value = os.environ.get(ENV, "").strip()
        return history_path(value) if value and value.lower() not in ON_WORDS else _cache_path()
    if setting is None or setting is False:
        return None
    if isinstance(setting, str):
        text = setting.strip()
        if not text or text.lower() in OFF_WORDS:
            return None
        if text.lower() in ON_WORDS:
            return history_path(True)
        path, as_dir = expand_user(text), text.endswith(("/", os.sep))
    elif isinstance(setting, os.PathLike):
        path, as_dir = expand_user(setting), False
    else:
        raise TypeError(f"a history location is True, False, a path or an off word; got {type(setting).__name__}")
    return path / FILENAME if as_dir or _is_dir(path) else path


def default_path() -> Path | None:
    """Where history goes by default: ``$TRT_WIDGET_HISTORY``, else the user cache dir; None when turned off."""
    return history_path(True)


def _cache_path() -> Path:
    try:
        from platformdirs import user_cache_dir

        base = Path(user_cache_dir("trt_widget", appauthor=False))
    except ImportError:
        base = Path.home() / ".cache" / "trt_widget"
    return base / FILENAME


def _is_dir(path: Path) -> bool:
    """``path.is_dir()``, False when it cannot even be looked at (an unreadable parent raises on Python < 3.14)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def os_reason(exc: BaseException, path: Path) -> str:
    """``"Permission denied"``, naming the file the OS complained about when it is not ``path`` itself."""
    if not isinstance(exc, OSError) or not exc.strerror:
        return f"{type(exc).__name__}: {exc}"
    where = exc.filename if exc.filename is not None and str(exc.filename) != str(path) else None
    return f"{exc.strerror} ({where})" if where else exc.strerror


_warned: set[Hashable] = set()
_warned_lock = threading.Lock()


def warn_once(key: Hashable, message: str, stacklevel: int = 2) -> None:
    """``warnings.warn(message, RuntimeWarning)`` the first time ``key`` is seen in this process."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)


# -- the store -------------------------------------------------------------------------------------------
LOCK_TIMEOUT_S = 1.0  # what a build waits for a store another process holds locked: never a slow wait() or Stop
WAIT_TIMEOUT_S = 30.0  # what a direct call (list, compare, add) waits, behind other writers


class StoreLocked(RuntimeError):
    """Another process held the history store locked (``BEGIN EXCLUSIVE``) longer than the call would wait."""


class HistoryStore:
    """A SQLite file of build records; every call opens its own short connection (thread- and process-safe)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        target = expand_user(path)
        self.path = target / FILENAME if _is_dir(target) else target
        self._created = False

    def unusable(self) -> str | None:
        """Why the store file cannot be opened for reading and writing (creating it if missing), or None.

        Checked when a build attaches history, so a bad location turns history off instead of failing the build.
        """
        try:
            target = self._own_place()
            if _foreign(self.path):  # a file of the user's (TRT_WIDGET_HISTORY=notes.md): never moved or written
                return NOT_SQLITE
            if not os.access(target, os.R_OK | os.W_OK):  # (an open() and close() here would drop SQLite's locks)
                return os.strerror(errno.EACCES)
            return None
        except NotARegularFile:  # a FIFO would block open() until a writer came, a device is no store
            return "not a regular file"
        except (UntrustedLink, ForeignFile) as exc:
            return str(exc)
        except OSError as exc:
            return os_reason(exc, self.path)

    def _own_place(self) -> Path:
        """The store's real path, made (empty) if missing, with its folder; ForeignFile when the folder, the store
        or one of SQLite's side files is another user's (not root's), in any folder (as git's safe.directory).

        SQLite writes into these files in place (and replays a journal it finds into the store): one planted by
        another user in a shared folder would give them this user's history to read and edit, and a folder's
        owner may read, remove or replace any file in it. ``_connect`` makes the rollback journal, ours, and keeps it
        (``journal_mode=TRUNCATE``), so no other user can put one there between two builds in a sticky folder.
        """
        target = resolve(self.path)  # UntrustedLink: another user's link in a shared folder is never followed
        target.parent.mkdir(parents=True, exist_ok=True)  # (nor a folder made through it)
        folder = os.stat(target.parent)
        if owned_by_another(folder):
            raise ForeignFile(
                f"its folder {target.parent} is owned by another user (uid {folder.st_uid}), who can read, remove "
                f"or replace the files in it; {FOREIGN_ADVICE}"
            )
        _create(target, 0o666)  # new files only: opening and closing the store would drop SQLite's locks on it
        info = os.lstat(target)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"{target} is not a regular file")
        for path in (target, *(Path(f"{target}{suffix}") for suffix in _SIDECARS)):
            try:
                side = info if path == target else os.lstat(path)
            except FileNotFoundError:
                continue
            if owned_by_another(side):
                raise ForeignFile(
                    f"{path} is owned by another user (uid {side.st_uid}): SQLite writes into it in place, so they "
                    f"could read and change your build history; {FOREIGN_ADVICE}"
                )
        return target

    def _connect(self, timeout: float = WAIT_TIMEOUT_S) -> sqlite3.Connection:
        """A connection to the store, checked (``_own_place``) before SQLite opens it and again once it has."""
        target = self._own_place()
        conn = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=TRUNCATE")  # the journal stays ours (see _own_place); opens the file
            info = os.stat(target)
            if owned_by_another(info):  # planted between the check and SQLite's open: nothing written into it yet
                raise ForeignFile(
                    f"{target} is owned by another user (uid {info.st_uid}): SQLite writes into it in place, so they "
                    f"could read and change your build history; {FOREIGN_ADVICE}"
                )
            with contextlib.suppress(OSError):  # SQLite read it: not notes.md; a read-only folder can still be read
                _create(Path(f"{target}-journal"), stat.S_IMODE(info.st_mode) & 0o666)
            if not self._created:
                conn.executescript(_SCHEMA)
                self._created = True
        except BaseException:
            conn.close()
            raise
        return conn

    def _run(self, work: Callable[[sqlite3.Connection], T], timeout: float = WAIT_TIMEOUT_S) -> T:
        """``work(connection)``; a damaged SQLite store is moved aside once and work retried (a file that is not
        SQLite at all: ValueError, left as it is);
        StoreLocked when another process holds it locked for ``timeout`` s."""
        for attempt in range(2):
            identity = _identity(self.path)
            try:
                with closing(self._connect(timeout)) as conn:
                    return work(conn)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
                    raise StoreLocked(
                        f"{self.path} is locked by another process (waited {timeout:g} s); skipped"
                    ) from None
                if attempt or not _is_corrupt(exc):
                    raise
                if _foreign(self.path):
                    raise ValueError(f"{self.path} is {NOT_SQLITE}") from exc
                self._created = False
                self._move_aside(identity, exc)
        raise AssertionError("unreachable")

    def _move_aside(self, identity: tuple[int, int] | None, exc: sqlite3.DatabaseError) -> None:
        """Rename the corrupt store (and its journal) to ``<name>.corrupt-<time>`` and warn where it went.

        Skipped when the file changed since it was found corrupt: another process moved it already.
        """
        if identity is None or _identity(self.path) != identity:
            return
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while aside.exists():
            n += 1
            aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        try:
            for suffix in _SIDECARS:  # a stale journal must never be replayed onto the new store
                sidecar = Path(f"{self.path}{suffix}")
                if sidecar.exists() and sidecar.stat().st_size:  # an empty journal (ours, kept) replays nothing
                    os.replace(sidecar, f"{aside}{suffix}")
            os.replace(self.path, aside)
        except OSError as move:
            raise ValueError(
                f"{self.path} is not a trt_widget history store (SQLite: {exc}) and could not be "
                f"moved aside: {os_reason(move, self.path)}"
            ) from exc
        warn_once(
            ("corrupt", str(aside)),
            f"trt_widget history: {self.path} was not a readable history store "
            f"({exc}); moved it aside to {aside} and started a new store",
            stacklevel=4,
        )

    def add(self, record: HistoryRecord, *, timeout: float = WAIT_TIMEOUT_S) -> int:
        """Append one build record (pruning old ones) and return its id; waits at most ``timeout`` s for a lock."""
        body = {k: v for k, v in record.items() if k != "id"}
        text = json.dumps(body, separators=(",", ":"), default=str)

        def work(conn: sqlite3.Connection) -> int:
            conn.execute("BEGIN IMMEDIATE")
            try:
                cur = conn.execute(
                    "INSERT INTO builds (key, status, created, total_s, label, record) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        body["key"],
                        body["status"],
                        body.get("created", time.time()),
                        body.get("total_s"),
                        _text_column(body.get("label")),
                        text,
                    ),
                )
                new_id = int(cur.lastrowid or 0)
                conn.execute(
                    "DELETE FROM builds WHERE key = ? AND id NOT IN "
                    "(SELECT id FROM builds WHERE key = ? ORDER BY id DESC LIMIT ?)",
                    (body["key"], body["key"], KEEP_PER_KEY),
                )
                conn.execute(
                    "DELETE FROM builds WHERE id NOT IN (SELECT id FROM builds ORDER BY id DESC LIMIT ?)", (KEEP_TOTAL,)
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # a failed ROLLBACK must not hide the real error
                    conn.execute("ROLLBACK")
                raise
            return new_id

        return self._run(work, timeout)

    def latest(self, key: str, status: str = "succeeded", *, timeout: float = WAIT_TIMEOUT_S) -> HistoryRecord | None:
        """The newest usable record with this key and status, or None; unreadable ones are skipped (warned once)."""

        def work(conn: sqlite3.Connection) -> HistoryRecord | None:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM builds WHERE key = ? AND status = ? ORDER BY id DESC", (key, status)
            )
            for row in rows:
                record = _decode(row)
                problem = record.get("error") or profile_problem(record)
                if problem is None:
                    return record
                warn_once(
                    ("row", str(self.path), record["id"]),
                    f"trt_widget history: skipping record {record['id']} in {self.path} ({problem})",
                    stacklevel=4,
                )
            return None

        return self._run(work, timeout)

    def get(self, build_id: int) -> HistoryRecord | None:
        """The record with this id, or None; ValueError when its stored text cannot be read."""
        row = self._run(
            lambda conn: conn.execute(f"SELECT {_COLUMNS} FROM builds WHERE id = ?", (int(build_id),)).fetchone()
        )
        if row is None:
            return None
        record = _decode(row)
        if "error" in record:
            raise ValueError(f"history record {build_id} in {self.path} is {record['error']}")
        return record

    def records(self, limit: int | None = None) -> list[HistoryRecord]:
        """Full records (with rows), newest first; an unreadable one is listed with ``error`` and no rows."""
        rows = self._run(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM builds ORDER BY id DESC LIMIT ?", (-1 if limit is None else int(limit),)
            ).fetchall()
        )
        return [_decode(row) for row in rows]

    def clear(self) -> int:
        """Delete every record; returns how many there were."""
        return self._run(lambda conn: conn.execute("DELETE FROM builds").rowcount)

    def __bool__(self) -> bool:  # a store is a store even when empty (``if history:`` must not skip it)
        return True

    def __len__(self) -> int:
        return self._run(lambda conn: int(conn.execute("SELECT COUNT(*) FROM builds").fetchone()[0]))

    def __repr__(self) -> str:
        return f"HistoryStore({str(self.path)!r})"


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _create(path: Path, mode: int) -> None:
    """Make ``path`` an empty file of this user's with ``mode`` (less the umask) where nothing is, never through a
    link; an existing file is not opened (closing it would drop the locks SQLite holds on it in this process)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except FileExistsError:
        return
    os.close(fd)


def _foreign(path: Path) -> bool:
    """A non-empty file that is not SQLite at all (not even a damaged store): someone else's file."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except OSError:
        return False
    return bool(head) and head != SQLITE_MAGIC[: len(head)]


def _is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    """Not SQLite, or a damaged SQLite file (not: locked, read-only, cannot open)."""
    name = getattr(exc, "sqlite_errorname", "") or ""  # Python 3.11+
    if name:
        return name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT"))
    text = str(exc).lower()
    return "file is not a database" in text or "malformed" in text


def _is_record(value: object) -> TypeGuard[HistoryRecord]:
    """A JSON object: a record as stored (its fields are checked where they are used: ``profile_problem``)."""
    return isinstance(value, dict)


def _decode(row: tuple[int, str, str, float, float | None, str | None, str]) -> HistoryRecord:
    """A stored row as its record; one whose JSON cannot be read comes back from the columns, flagged ``error``."""
    build_id, key, status, created, total_s, label, text = row
    try:
        record = json.loads(text)
        if not _is_record(record):
            raise ValueError(f"a JSON {type(record).__name__}, not an object")
    except (ValueError, TypeError, RecursionError) as exc:
        return {
            "id": int(build_id),
            "key": key,
            "status": status,
            "created": created,
            "total_s": total_s,
            "label": label,
            "rows": [],
            "error": f"unreadable ({type(exc).__name__}: {exc})",
        }
    record["id"] = int(build_id)
    return record


def profile_problem(record: Mapping[str, object]) -> str | None:
    """What makes a record unusable for an ETA (times not numbers, rows not phase rows), or None."""
    if not json_time(record.get("created")) or not json_time(record.get("total_s")):
        return "created/total_s are not numbers"
    rows = record.get("rows")
    if not isinstance(rows, list):
        return "rows is not a list"
    for row in rows:
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("path"), list)
            or not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], int)
                for p in row["path"]
            )
        ):
            return "a phase row without a path"
        if not json_time(row.get("start_s")) or (
            row.get("end_s") is not None and not (json_time(row["end_s"]) and json_time(row.get("duration_s")))
        ):
            return f"phase row {row.get('name')!r} has no usable times"
    return None


def resolve_store(store: HistoryStore | str | os.PathLike[str] | None) -> HistoryStore:
    """A HistoryStore for a store, a history setting (path or off word) or None (the default; RuntimeError if off)."""
    if isinstance(store, HistoryStore):
        return store
    path = history_path(True if store is None else store)
    if path is None:
        said = f"{ENV}={os.environ.get(ENV)!r}" if store is None else repr(store)
        raise RuntimeError(f"history is turned off ({said})")
    return HistoryStore(path)


def _text_column(value: object) -> object:
    """``value`` as SQLite can store it: a str holding a lone surrogate (a model path that is not UTF-8) with that
    character written as a backslash escape, as the CLI shows it (SQLite's UTF-8 encoding would refuse it)."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8") if isinstance(value, str) else value
