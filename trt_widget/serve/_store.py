"""The build service's registry: one record per build, its event log (memory + JSON lines on disk), its engine.

Layout under ``--data``: ``builds/<id>/meta.json`` (written atomically at creation and at the end),
``builds/<id>/events.jsonl`` (one event per line, appended as the build runs), ``builds/<id>/engine.bin``
(atomic, on success) and ``builds/<id>/model.onnx`` (the upload, deleted once the build has ended). Paths are
made only from ids this module generated (``secrets.token_urlsafe``); a request's id is only a dictionary key.

The event log is the subscribers' buffer: SSE streams read it with their own cursor, so a slow subscriber costs
one integer and never holds up the builder or the other subscribers. Appends come from a build's event writer
thread; subscribers on the server's event loop are woken through ``loop.call_soon_threadsafe`` (coalesced).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import re
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .._files import atomic_write, owned_by_another, read_regular, resolve, utf8
from .._format import escape_controls
from .._json import JSON, MAX_FILE_VALUES, JSONObject, json_time, loads_outside
from .._leftovers import check_parent
from .._status import FINAL, SUCCEEDED, log

if TYPE_CHECKING:
    from .._build import Build
    from .._phases import PhaseRow

ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{22}$")  # secrets.token_urlsafe(16)
META, EVENTS, ENGINE, UPLOAD = "meta.json", "events.jsonl", "engine.bin", "model.onnx"
INTERRUPTED = "the server stopped while this build was running"
_encode = json.JSONEncoder(
    ensure_ascii=False, default=str
).encode  # one encoder: json.dumps(**options) makes one per call
STREAM_PIECE_BYTES = 256 << 10  # one write of an event stream: what a subscriber that does not read holds
FLUSH_S = 0.05  # the event log reaches the OS at least this often while events come (a killed server loses less)
MAX_META_BYTES = 64 << 20  # a build's meta.json read back (its timings: 200,000 phase rows of ~250 bytes fit)
MAX_LOG_BYTES = 256 << 20  # a build's event log read back (what a recording may hold)


class Busy(Exception):
    """The concurrent build limit is reached."""


def new_id() -> str:
    """An unguessable build id (128 random bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def number(value: JSON) -> float:
    """A stored time (0 where the value is none, or no time within ±1e12 s: ``float()`` of 400 digits raised
    OverflowError at restart)."""
    return float(value) if json_time(value) else 0.0


def row_json(row: PhaseRow) -> JSONObject:
    """A phase row as a JSON object (every field of :class:`~trt_widget._phases.PhaseRow`)."""
    return {
        "id": row["id"],
        "name": row["name"],
        "parent": row["parent"],
        "depth": row["depth"],
        "step": row["step"],
        "num_steps": row["num_steps"],
        "start_s": row["start_s"],
        "end_s": row["end_s"],
        "duration_s": row["duration_s"],
        "status": row["status"],
    }


def frame(number: int, text: str) -> bytes:
    """One SSE message: the event's JSON on one line, its position in the log as the SSE id."""
    return f"id: {number}\ndata: {text}\n\n".encode()


class BuildRecord:
    """One build: live (``build`` set) until its ``build_end`` event is stored, then final (from meta.json)."""

    def __init__(self, store: BuildStore, build_id: str, meta: JSONObject) -> None:
        self.store = store
        self.id = build_id
        self.dir = store.root / build_id
        self.meta = meta  # id, name, created, options; status, detail, ... once final
        self.build: Build | None = None  # the live Build
        self.final = meta.get("status") in FINAL
        self.subscribers = 0  # open SSE streams (event-loop thread only)
        self._lock = threading.Lock()
        self._frames: list[bytes] | None = None if self.final else []  # loaded lazily for stored builds
        self._file: IO[str] | None = None
        self._flushed = 0.0
        self.storage_error: str | None = None  # set when the data disk failed this build's event log
        self._changed: asyncio.Event | None = None  # set (and replaced) when frames are appended or the end
        self._wake_pending = False

    # -- reading -------------------------------------------------------------------------------------
    def summary(self, *, timings: bool = False) -> JSONObject:
        """The build's state as JSON: id, name, status, detail, error, elapsed_s, engine_bytes, phase, ..."""
        with self._lock:
            build = None if self.final else self.build
            events = len(self._frames) if self._frames is not None else self.meta.get("events", 0)
        out = {key: self.meta.get(key) for key in ("id", "name", "created", "options")}
        if build is not None:
            phase = build.model.innermost_running()
            out.update(
                status=build.status,
                detail=self.store.scrub(build.status_detail),
                error=self.store.scrub(str(build.error)) if build.error is not None else None,
                elapsed_s=round(build.elapsed_s, 6),
                engine_bytes=build.engine_size,
                phase=None if phase is None else {"name": phase.name, "step": phase.step, "num_steps": phase.num_steps},
            )
            rows: JSON = [row_json(r) for r in build.timings()] if timings else None
        else:
            out.update({key: self.meta.get(key) for key in ("status", "detail", "error", "elapsed_s", "engine_bytes")})
            out["phase"] = None
            rows = self.meta.get("timings", []) if timings else None
        out.update(events=events, subscribers=self.subscribers)
        if rows is not None:
            out["timings"] = rows
        return out

    @property
    def status(self) -> str:
        with self._lock:
            build = None if self.final else self.build
        return str(build.status if build is not None else self.meta.get("status"))

    def engine(self) -> bytes | Path | None:
        """The engine: its file once stored, the live build's bytes just before that, None unless succeeded."""
        with self._lock:
            build = None if self.final else self.build
        if build is not None:
            return build.engine if build.status == SUCCEEDED and build.engine else None
        if self.meta.get("status") != SUCCEEDED:
            return None
        path = self.dir / ENGINE
        return path if path.is_file() else None

    def read(
        self, cursor: int, limit: int = 2000, max_bytes: int = STREAM_PIECE_BYTES
    ) -> tuple[list[bytes], bool, asyncio.Event]:
        """(frames after ``cursor``: at most ``limit``, and ``max_bytes`` unless one frame is larger; whether the log
        is complete; the event to await for more). A stream writes them at once, and a subscriber that does not
        read holds that write in the server's memory: 2,000 warnings of 16 KiB were 32 MB per subscriber.

        Called on the event loop only (the wake-up event belongs to it)."""
        with self._lock:
            if self._frames is None:
                self._frames = self._load_frames()
            if self._changed is None:
                self._changed = asyncio.Event()
            frames = self._frames[cursor : cursor + limit]
            final, changed = self.final, self._changed
        total = 0
        for count, piece in enumerate(frames):
            total += len(piece)
            if total > max_bytes and count:
                return frames[:count], final, changed
        return frames, final, changed

    def event_count(self) -> int:
        with self._lock:
            if self._frames is None:
                self._frames = self._load_frames()
            return len(self._frames)

    def _load_frames(self) -> list[bytes]:
        try:
            lines = stored_lines(self.dir / EVENTS, self.id)
        except OSError as exc:
            log.warning("build %s: cannot read its event log: %s", self.id, escape_controls(exc))
            return []
        return [frame(i, line) for i, line in enumerate(lines, start=1)]

    @property
    def in_memory(self) -> bool:
        """Whether the event log is held in memory (a live build's, or one being read)."""
        return self._frames is not None

    def evict(self) -> None:
        """Drop a finished build's events from memory while nobody reads them (the file has them); event loop only."""
        with self._lock:
            if self.final and self.subscribers == 0 and self.storage_error is None:  # else the file lacks some
                self._frames = None

    # -- writing (a build's event writer thread) -------------------------------------------------------
    def append(self, event: JSONObject) -> None:
        """The events sink: store the event (file, then memory) and wake the subscribers; never raises.

        When the data disk fails (full), the build is stopped and ends failed, saying why; its events still
        reach every subscriber from memory, so each stream ends with the build's ``build_end``."""
        try:
            if event.get("event") == "build_end":
                self._finalize(event)  # engine and meta on disk before any subscriber sees the end
                if event.get("status") == "failed":  # on the console, what the client is told (not TensorRT's raw)
                    log.info("build %s failed: %s", self.id, self.store.scrub(str(event.get("detail", ""))))
            text = self.store.scrub_event(event)  # a message from TensorRT may name the upload's path
            failure = None
            with self._lock:
                assert self._frames is not None
                if self._file is None and not self.final and self.storage_error is None:
                    try:
                        self._file = open(self.dir / EVENTS, "a", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115 (closed at build_end)
                    except OSError as exc:
                        failure = exc
                if self._file is not None:
                    try:
                        self._file.write(text + "\n")
                        now = time.monotonic()
                        if now - self._flushed >= FLUSH_S:  # bursts are written together; build_end flushes, syncs
                            self._file.flush()
                            self._flushed = now
                    except OSError as exc:
                        failure = exc
                self._frames.append(frame(len(self._frames) + 1, text))
                if event.get("event") == "build_end":
                    self._close_file()
                    self.final = True
                    self.meta["events"] = len(self._frames)
                    self.build = None  # the engine now lives in its file
            if failure is not None:
                self._storage_failed(failure)
            self.wake()
            if event.get("event") == "build_end" and self.store.loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop has closed
                    self.store.loop.call_soon_threadsafe(self.evict)
        except Exception:
            log.exception("build %s: could not store an event", self.id)

    def _storage_failed(self, exc: OSError) -> None:
        """The event log cannot be written: say so loudly and stop the build (it ends failed)."""
        with self._lock:
            if self.storage_error is not None:
                return
            full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
            self.storage_error = (
                "the server's data disk is full: this build's events could not be stored"
                if full
                else f"the server could not store this build's events ({exc.strerror or 'I/O error'})"
            )
            with contextlib.suppress(OSError):
                if self._file is not None:
                    self._file.close()
            self._file = None
            build = None if self.final else self.build
        log.error("serve: build %s: %s (%s)", self.id, self.storage_error, exc)
        if build is not None:
            with contextlib.suppress(Exception):
                build.stop(self.storage_error)

    def _close_file(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.flush()
                os.fsync(self._file.fileno())
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def _finalize(self, end: JSONObject) -> None:
        build = self.build
        meta = dict(self.meta)
        meta.update(
            status=end.get("status"),
            detail=self.store.scrub(str(end.get("detail") or "")),
            error=self.store.scrub(str(end["error"])) if end.get("error") is not None else None,
            elapsed_s=end.get("elapsed_s"),
            engine_bytes=end.get("engine_bytes"),
            timings=[row_json(r) for r in build.timings()] if build is not None else [],
            events=self.event_count() + 1,
        )
        if self.storage_error is not None:
            meta.update(status="failed", error=self.storage_error, detail=self.storage_error, engine_bytes=None)
            end.update(status="failed", error=self.storage_error, detail=self.storage_error, engine_bytes=None)
        elif build is not None and build.status == SUCCEEDED and build.engine:
            try:
                atomic_write(self.dir / ENGINE, build.engine)
                _write_manifest(build, self.dir / ENGINE)
            except OSError as exc:
                reason = "the server's data disk is full" if exc.errno == errno.ENOSPC else exc.strerror or "I/O error"
                meta.update(status="failed", error=f"the engine was built but could not be stored: {reason}")
                meta["detail"] = meta["error"]
                end.update(status="failed", error=meta["error"], detail=meta["error"], engine_bytes=None)
        try:
            self.store.write_meta(self.dir, meta)
        except OSError as exc:  # the end is still told to every subscriber, and kept in memory
            log.error("serve: build %s: could not store its metadata (%s)", self.id, exc)
        with contextlib.suppress(OSError):
            (self.dir / UPLOAD).unlink()
        with self._lock:
            self.meta = meta

    def wake(self) -> None:
        """Wake this build's subscribers (from any thread); bursts of appends cause one wake-up."""
        loop = self.store.loop
        with self._lock:
            if self._wake_pending or loop is None or self._changed is None:
                return
            self._wake_pending = True
        try:
            loop.call_soon_threadsafe(self._wake_on_loop)
        except RuntimeError:  # the loop has closed: nobody is listening
            with self._lock:
                self._wake_pending = False

    def _wake_on_loop(self) -> None:
        with self._lock:
            self._wake_pending = False
            changed, self._changed = self._changed, asyncio.Event()
        if changed is not None:
            changed.set()


ENGINE_CACHE = "engine-cache"  # under --data: the engine cache of requests with reuse: true


def _check_private(folder: Path) -> None:
    """PermissionError unless ``folder`` is a real folder of this user's that others cannot write: in a shared
    ``--data`` (``/tmp``) another user could have made ``builds`` first, to read uploads or plant links."""
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        what = (
            "not a folder (a link?)"
            if not stat.S_ISDIR(info.st_mode)
            else f"owned by another user (uid {info.st_uid})"
            if info.st_uid != os.geteuid()
            else "writable by others"
        )
        raise PermissionError(
            f"{folder} is {what}: the service keeps uploads, events and engines there and uses only a private "
            "folder of its own; choose another --data"
        )


class BuildStore:
    """The registry of builds under ``data``: creation, lookup, the concurrency limit, restart recovery."""

    def __init__(self, data: str | os.PathLike[str], *, max_concurrent: int) -> None:
        self.data = resolve(data)  # UntrustedLink through another user's link: they could swap it later
        self._roots = _server_roots(self.data)
        self._root_names = dict(self._roots)
        alternatives = "|".join(re.escape(root) for root, _ in self._roots)
        self._root_pattern = re.compile(rf"({alternatives})(?![^/\\\s'\"`:;,()<>\[\]{{}}])")
        self.root = self.data / "builds"
        existing = self.data
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        check_parent(str(existing), "--data", "choose another --data")  # nothing made where others rename
        try:  # private when the service makes it; a folder it was given keeps its mode (--data /tmp must)
            self.data.mkdir(parents=True, mode=0o700)
        except FileExistsError:
            info = os.stat(self.data)
            if owned_by_another(info):  # its owner could rename ``builds`` away and put one of theirs there
                raise PermissionError(
                    f"{self.data} is owned by another user (uid {info.st_uid}), who can replace the folders the "
                    "service keeps uploads, events and engines in; choose another --data"
                ) from None
        else:
            with contextlib.suppress(OSError):
                os.chmod(self.data, 0o700)  # exactly, whatever the umask
        check_parent(str(self.data), "--data", "choose another --data")  # its folders stay where they were made
        self.root.mkdir(exist_ok=True, mode=0o700)
        _check_private(self.root)
        self.engine_cache = self.data / ENGINE_CACHE  # reuse: true keeps and finds engines here, never in ~/.cache
        self.engine_cache.mkdir(exist_ok=True, mode=0o700)
        _check_private(self.engine_cache)
        self.max_concurrent = max_concurrent
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ready = threading.Event()  # the app has started (set by its lifespan)
        self.closing = False
        self._lock = threading.Lock()
        self._records: dict[str, BuildRecord] = {}
        self._active = 0  # builds running + uploads holding a slot
        self._load()

    # -- registry ------------------------------------------------------------------------------------
    def get(self, build_id: str) -> BuildRecord | None:
        """The record for a well-formed id; None for anything else (no path is ever made from it)."""
        if not ID_PATTERN.fullmatch(build_id):
            return None
        with self._lock:
            return self._records.get(build_id)

    def records(self) -> list[BuildRecord]:
        """Newest first."""
        with self._lock:
            records = list(self._records.values())
        return sorted(records, key=lambda r: number(r.meta.get("created")), reverse=True)

    @property
    def active(self) -> int:
        return self._active

    def reserve(self) -> None:
        """Take a build slot (released by the build's end or by ``release()``); raises Busy at the limit."""
        with self._lock:
            if self._active >= self.max_concurrent:
                raise Busy(f"{self._active} builds are running, the limit is {self.max_concurrent}")
            self._active += 1

    def release(self) -> None:
        with self._lock:
            self._active = max(0, self._active - 1)

    def new_dir(self) -> tuple[str, Path]:
        """A fresh id and its (new, empty) directory."""
        build_id = new_id()
        path = self.root / build_id
        path.mkdir(mode=0o700)
        return build_id, path

    def discard(self, path: Path) -> None:
        """Remove the directory of a build that never started (refused upload)."""
        if path.parent == self.root and ID_PATTERN.fullmatch(path.name):
            shutil.rmtree(path, ignore_errors=True)

    def launch(
        self,
        build_id: str,
        build: Build,
        *,
        name: str,
        options: JSONObject,
        attach: Callable[[Build, Callable[[JSONObject], None]], object],
    ) -> BuildRecord:
        """Register ``build`` (holding a reserved slot), stream its events into the log and start it."""
        meta: JSONObject = {
            "id": build_id,
            "name": name,
            "created": time.time(),
            "options": options,
            "status": "running",
        }
        record = BuildRecord(self, build_id, meta)
        record.build = build
        attach(build, record.append)
        build.add_done_callback(lambda _build: self.release())
        self.write_meta(record.dir, meta)
        with self._lock:
            self._records[build_id] = record
        build.start()
        return record

    def scrub(self, text: str) -> str:
        """``text`` without the server's paths and Python tracebacks: the data directory shows as ``<data>``, the
        installation as ``<server>`` or ``<python>``; clients never learn server paths (a builder process's
        unexpected error carries a traceback of trt_widget's own files)."""
        if "Traceback (most recent call last)" in text:
            text = _TRACEBACK.sub("", text)
        if any(root in text for root, _ in self._roots):
            text = self._root_pattern.sub(lambda m: self._root_names[m.group(1)], text)
        return text

    def scrub_event(self, event: JSONObject) -> str:
        """The event as its JSON line, every text in it scrubbed (see ``scrub``)."""
        text = _encode(event)
        if "Traceback (most recent call last)" not in text and not any(root in text for root, _ in self._roots):
            return text
        return _encode(self._scrub_value(event))

    def _scrub_value(self, value: JSON) -> JSON:
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {key: self._scrub_value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._scrub_value(item) for item in value]
        return value

    def write_meta(self, directory: Path, meta: JSONObject) -> None:
        atomic_write(directory / META, utf8(json.dumps(meta, ensure_ascii=False, default=str)))

    # -- life cycle ----------------------------------------------------------------------------------
    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def close_streams(self) -> None:
        """Tell every SSE stream to end (server shutting down); safe from any thread."""
        self.closing = True
        for record in self.records():
            record.wake()

    def stop_running(self, *, timeout: float = 5.0, reason: str = "the server is shutting down") -> None:
        """Stop every running build and wait (up to ``timeout`` s) until each one's end is stored."""
        live = [r.build for r in self.records() if r.build is not None]
        for build in live:
            build.stop(reason)
        deadline = time.monotonic() + timeout
        for build in live:
            build.wait(max(0.0, deadline - time.monotonic()))
            events = getattr(build, "events", None)
            if events is not None:
                events.join(max(0.0, deadline - time.monotonic()))

    # -- restart -------------------------------------------------------------------------------------
    def _load(self) -> None:
        """Every stored build, read back; one whose files are damaged (or crafted: nested 100,000 deep, a time of
        400 digits, a FIFO) is skipped with one line, never the start (docs/security.md)."""
        for path in sorted(self.root.iterdir()):
            if not ID_PATTERN.fullmatch(path.name) or not _is_folder(path):
                continue
            try:
                meta = _read_meta(path)
            except Exception as exc:  # whatever the file holds, the service starts
                log.warning("serve: skipping %s: unreadable %s (%s)", path, META, escape_controls(exc))
                continue
            try:
                if meta.get("status") not in FINAL or not _ends(path / EVENTS):
                    meta = _recover(path, meta)
                    self.write_meta(path, meta)
            except Exception as exc:  # never stops the server
                log.warning("serve: skipping %s: its event log cannot be recovered (%s)", path, escape_controls(exc))
                continue
            with contextlib.suppress(OSError):
                (path / UPLOAD).unlink()
            self._records[path.name] = BuildRecord(self, path.name, meta)


_TRACEBACK = re.compile(r"Traceback \(most recent call last\):\n(?:[ \t]+[^\n]*\n?)*")


def _server_roots(data: Path) -> list[tuple[str, str]]:
    """(path, shown as) for every server path a message may hold, longest first: the data directory, the
    installation of trt_widget and of Python, the temporary directory, the home directory."""
    import site
    import sys
    import tempfile

    package = Path(__file__).resolve().parent.parent  # trt_widget/
    candidates = [(str(data), "<data>"), (str(package.parent), "<server>"), (str(package), "<server>/trt_widget")]
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    candidates += [(os.path.realpath(p), "<python>") for p in prefixes] + [(p, "<python>") for p in prefixes]
    candidates += [(os.path.realpath(tempfile.gettempdir()), "<tmp>"), (os.path.expanduser("~"), "~")]
    roots: dict[str, str] = {}
    for path, shown in candidates:
        path = path.rstrip("/")
        if len(path) > 1 and path not in roots:
            roots[path] = shown
    return sorted(roots.items(), key=lambda item: -len(item[0]))


def _is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder itself (not a link to one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _read_meta(path: Path) -> JSONObject:
    """A stored build's meta.json: a regular file (not through a link, never waiting on a FIFO) of at most
    :data:`MAX_META_BYTES`, JSON within the bounds of outside JSON, this build's, with ``created`` a time."""
    meta = loads_outside(read_regular(path / META, MAX_META_BYTES, follow=False), values=MAX_FILE_VALUES)
    if not isinstance(meta, dict) or meta.get("id") != path.name:
        raise ValueError("not this build's metadata")
    if not json_time(meta.get("created", 0.0)):  # the builds' list sorts by it
        raise ValueError("its 'created' is not a time")
    return meta


def _event(line: str | bytes) -> JSON:
    """One stored event line, read as outside JSON (a damaged or crafted log: nested 100,000 deep raised
    RecursionError at restart)."""
    return loads_outside(line, values=MAX_FILE_VALUES)


def stored_lines(path: Path, build_id: str) -> list[str]:
    """The complete, non-blank lines of a stored event log. Every line was written with its newline: a last line
    without one was torn (the server was killed, or the disk filled, mid-write; maybe inside a multi-byte
    character) and is left out with a note. Split on newlines only: a name may hold U+2028, which ``str.splitlines``
    would split on. A regular file only (not through a link, never waiting on a FIFO), of at most
    :data:`MAX_LOG_BYTES` (OSError otherwise)."""
    data = read_regular(path, MAX_LOG_BYTES, follow=False)
    complete, _, torn = data.rpartition(b"\n")
    if torn.strip():
        log.warning("serve: build %s: ignored the torn last line of its event log (%d bytes)", build_id, len(torn))
    return [line.decode("utf-8", "replace") for line in complete.split(b"\n") if line.strip()]


def _ends(path: Path) -> bool:
    """True when the event log's last line is a build_end event."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:  # without blocking (a FIFO), not through a link; a FIFO or device: _recover says what it is
        with open(os.open(path, flags), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return False
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 65536))
            last = handle.read().splitlines()[-1:]
        event = _event(last[0]) if last else None
    except (OSError, ValueError):
        return False
    return isinstance(event, dict) and event.get("event") == "build_end"


def _recover(path: Path, meta: JSONObject) -> JSONObject:
    """A build the server did not see end (it was killed): close its open phases and end its log as failed."""
    events: list[JSONObject] = []
    with contextlib.suppress(FileNotFoundError):  # any other reason it cannot be read: the build is skipped
        for line in stored_lines(path / EVENTS, path.name):
            try:
                event = _event(line)
            except ValueError:
                break  # a line the disk did not keep whole (or nested past the bounds): the log ends before it
            if isinstance(event, dict) and event.get("event") != "build_end":
                events.append(event)
    t = max((number(e.get("t")) for e in events), default=0.0)
    if not events or events[0].get("event") != "build_start":
        events.insert(0, {"event": "build_start", "model": meta.get("name", ""), "backend": "unknown",
                          "version": "?", "options": meta.get("options") or {}, "t": 0.0})  # fmt: skip
    started = {e["id"]: e for e in events if e.get("event") == "phase_start"}
    steps = {e["id"]: e.get("step", 0) for e in events if e.get("event") == "step"}
    for e in events:
        if e.get("event") == "phase_finish":
            started.pop(e["id"], None)
    for ident, start in sorted(started.items(), reverse=True):  # innermost first
        events.append({"event": "phase_finish", "id": ident, "name": start["name"], "status": "failed",
                       "step": steps.get(ident, 0), "num_steps": start["num_steps"],
                       "duration_s": t - number(start["t"]), "t": t})  # fmt: skip
    error = meta.get("error") if meta.get("status") == "failed" else None
    detail = INTERRUPTED if meta.get("status") not in FINAL else str(meta.get("detail") or "")
    status = meta.get("status") if meta.get("status") in FINAL else "failed"
    end = {"event": "build_end", "status": status, "detail": detail, "elapsed_s": t,
           "engine_bytes": meta.get("engine_bytes") if status == SUCCEEDED else None, "output": None,
           "error": error or (INTERRUPTED if status == "failed" else None), "t": t}  # fmt: skip
    events.append(end)
    atomic_write(path / EVENTS, utf8("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)))
    return {**meta, "status": status, "detail": detail, "error": end["error"], "elapsed_s": t, "events": len(events)}


def _write_manifest(build: Build, engine: Path) -> None:
    """The manifest beside a stored engine (docs/manifest.md); one that cannot be written is logged, never fatal."""
    from ..provenance import write_manifest

    try:
        write_manifest(engine, build.manifest(engine))
    except Exception as exc:
        log.warning("serve: the manifest of %s could not be written: %s", engine, exc)
