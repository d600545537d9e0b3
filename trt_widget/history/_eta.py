"""ETA and per-phase deltas for a running build, matched against its newest succeeded past build in the store.

:func:`attach_history` gives a Build a :class:`HistoryLink`, which looks up the match on a background thread,
answers ``eta()``/``deltas()`` while the build runs, and records the build's profile when it ends.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from typing import TYPE_CHECKING

from ._keys import LikeFacts, PhasePath, ProfileRow, build_key, describe_like, like_facts, profile_rows
from ._store import LOCK_TIMEOUT_S, HistoryRecord, HistoryStore, history_path, warn_once

if TYPE_CHECKING:
    from .._build import Build, HistorySetting
    from .._json import JSONObject


def attach_history(build: Build, history: HistorySetting) -> None:
    """Set ``build.history`` to a :class:`HistoryLink`, or leave it None when history is off or unusable.

    ``history``: True (``$TRT_WIDGET_HISTORY`` or the cache dir), False, a path or off word (see
    :func:`history_path`), or a HistoryStore. A location that cannot be opened never fails the build: it warns
    once per location and reason, notes it in the build's problems at start, and the build runs without history.
    """
    if isinstance(history, HistoryStore):
        store = history
    elif isinstance(history, (bool, str, os.PathLike)) or history is None:
        try:
            path = history_path(history)
        except Exception as exc:  # e.g. no home directory to find the user cache dir in
            _history_off(build, "the default history location", f"{type(exc).__name__}: {exc}")
            return
        if path is None:
            return
        store = HistoryStore(path)
    else:
        raise TypeError(f"history must be True, False, a path or a HistoryStore; got {type(history).__name__}")
    problem = store.unusable()
    if problem is not None:
        _history_off(build, store.path, problem)
        return
    build.history = HistoryLink(build, store)


def _history_off(build: Build, where: object, reason: str) -> None:
    """Warn (once per location and reason) that this build runs without history, and note it in its problems."""
    message = f"trt_widget: cannot use the history store {where} ({reason}); builds run without history"
    with contextlib.suppress(Warning):  # warnings turned into errors must not fail the build: the note says it
        warn_once(("location", str(where), reason), message, stacklevel=4)  # at the Build(...) call
    logger = getattr(build, "logger", None)
    if logger is not None and hasattr(build, "on_start"):  # at start, so an event stream sees it after "start"
        build.on_start(lambda _build: logger.log(2, message))


PENDING_WAIT_S = 2.0  # what a look-up waits for this process's records still being written to its store
_pending_lock = threading.Lock()
_pending: dict[str, list[threading.Event]] = {}  # store path -> the `recorded` events of records being written


def _await_pending(path: str, own: threading.Event) -> None:
    """Wait (at most PENDING_WAIT_S in all) for the records this process is still writing to the store at
    ``path``: two builds run one after the other compare the second with the first."""
    with _pending_lock:
        waiting = [event for event in _pending.get(path, ()) if event is not own]
    deadline = time.monotonic() + PENDING_WAIT_S
    for event in waiting:
        event.wait(max(0.0, deadline - time.monotonic()))


class HistoryLink:
    """ETA and per-phase deltas for one build from its best past match; records the build when it ends.

    The match is looked up on a background thread (hashing a large model takes a moment); ``eta()`` and
    ``deltas()`` return None until it is known, and are cheap (cached per phase-structure change).
    """

    def __init__(self, build: Build, store: HistoryStore) -> None:
        self.build = build
        self.store = store
        self.key: str | None = None
        self.model_hash: str | None = None
        self.like: LikeFacts = {}  # the GPU and timing-cache warmth this build is compared by
        self.match: HistoryRecord | None = None  # the newest succeeded record with the same key
        self.error: str | None = None
        self.recorded_id: int | None = None
        self.ready = threading.Event()
        self.recorded = threading.Event()
        self._past: dict[PhasePath, ProfileRow] = {}
        self._paths: list[PhasePath] = []
        self._counts: dict[tuple[int | None, str], int] = {}
        self._cache_version = -1
        self._anchor = (0.0, 0.0, 0.0)  # (past position, current time, upper bound of the position)
        self._running: list[tuple[int, str, float, float]] = []  # (id, name, start_s, expected duration)
        self._deltas: dict[str, float] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._load, name="trt_widget-history", daemon=True).start()
        build.add_done_callback(self._record_later)

    def _record_later(self, build: Build) -> None:
        """A done callback: record on a thread of its own, so ``wait()`` returns without waiting for SQLite
        (``recorded`` is set once it is written). Not a daemon thread: a process that ends right after the build
        still records it."""
        if getattr(build, "reused_from", None) is not None:  # no TensorRT ran: a lookup is no build's profile
            self.recorded.set()
            return
        with _pending_lock:
            _pending.setdefault(str(self.store.path), []).append(self.recorded)
        threading.Thread(target=self._record, args=(build,), name="trt_widget-history-record").start()

    def _load(self) -> None:
        try:
            self.like = like_facts(self.build)
            self.key, self.model_hash = build_key(self.build, self.like)
            _await_pending(str(self.store.path), self.recorded)
            self.match = self.store.latest(self.key, timeout=LOCK_TIMEOUT_S)
            if self.match is not None:
                self._past = {tuple((str(n), int(k)) for n, k in r["path"]): r for r in self.match["rows"]}
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"trt_widget history unavailable: {self.error}", RuntimeWarning, stacklevel=2)
        finally:
            self.ready.set()

    @property
    def like_text(self) -> str:
        """What a matching build must share besides model, options and backend, e.g. 'NVIDIA H200 (compute 9.0,
        driver 580.159.04), warm timing cache' (empty where nothing else is known)."""
        return describe_like(self.like)

    @property
    def based_on(self) -> str | None:
        if self.match is None:
            return None
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.match["created"]))
        like = describe_like(self.like)
        return f"build of {when}, {self.match['total_s']:.1f} s" + (f", same {like}" if like else "")

    def basis(self) -> JSONObject | None:
        """The past build the deltas compare with, for a front end to say: ``{"created": epoch s, "said": "build
        of …"}`` (the history is the user's, shared by every environment on the machine: a first build in a fresh
        venv may already have one); None before the look-up answered or without a match."""
        if not self.ready.is_set() or self.match is None:
            return None
        return {"created": float(self.match["created"]), "said": self.based_on or ""}

    def _refresh(self) -> None:
        """Re-derive the anchor, running phases and deltas when the phase structure changed."""
        model = self.build.model
        version = model.structure_version
        if version == self._cache_version:
            return
        rows = model.rows()
        for row in rows[len(self._paths) :]:
            key = (row["parent"], row["name"])
            k = self._counts.get(key, 0)
            self._counts[key] = k + 1
            base = self._paths[row["parent"]] if row["parent"] is not None else ()
            self._paths.append((*base, (row["name"], k)))
        total = float(self.match["total_s"] or 0.0) if self.match else 0.0
        best_p, best_c, upper = 0.0, 0.0, total
        running, deltas = [], {}
        for row in rows:
            past = self._past.get(self._paths[row["id"]])
            if past is None:
                continue
            past_end, past_duration = past["end_s"], past["duration_s"]
            if past_end is None or past_duration is None:  # (a stored finished row has both: profile_problem)
                continue
            events = [(past["start_s"], row["start_s"])]
            end, duration = row["end_s"], row["duration_s"]
            if end is None:
                upper = min(upper, past_end)
                running.append((row["id"], row["name"], row["start_s"], past_duration))
            else:
                events.append((past_end, end))
                if row["status"] not in ("cancelled", "failed") and duration is not None:
                    deltas[str(row["id"])] = duration - past_duration
            for p, c in events:
                if p > best_p or (p == best_p and c > best_c):
                    best_p, best_c = p, c
        self._anchor, self._running, self._deltas = (best_p, best_c, upper), running, deltas
        self._cache_version = version

    def eta(self) -> JSONObject | None:
        """``{"total_s", "remaining_s", "based_on", "phases": {name: expected s}, "running": {id: {...}}}``.

        None before the look-up answered or once the build ended; without a match, ``{"none": short, "why":
        sentence}`` (a first build: nothing to time it by, said rather than guessed). The position in the past
        build is the latest matched phase start/end plus the time since it, held at the past end of any phase
        still running now.
        """
        if not self.ready.is_set() or self.build.done():
            return None
        if self.match is None:
            return self._no_eta()
        total = float(self.match["total_s"] or 0.0)
        if self.build.status == "idle":
            return {
                "total_s": round(total, 2),
                "remaining_s": round(total, 2),
                "based_on": self.based_on,
                "phases": {},
                "running": {},
            }
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
            "running": {
                str(pid): {
                    "expected_s": round(expected, 3),
                    "remaining_s": round(max(expected - (now - start), 0.0), 3),
                }
                for pid, _, start, expected in running
            },
        }

    def _no_eta(self) -> JSONObject:
        """Why there is no ETA: a first build (TensorRT's phases differ by orders of magnitude between models,
        so a guess from another model or the model's size would mislead), or a history that could not be read."""
        if self.error is not None:
            return {"none": "history unavailable", "why": f"the build history could not be read ({self.error})"}
        like = describe_like(self.like)
        return {
            "none": "first build",
            "why": "No ETA: this is the first build of this model with these options"
            + (f" on {like}" if like else "")
            + " that the history knows, and TensorRT's phases take times that differ too much between models to "
            "guess from another one. The next build of it shows an ETA and per-phase times left.",
        }

    def deltas(self) -> dict[str, float] | None:
        """str(phase id) -> seconds slower (+) or faster (−) than the matched past instance, finished phases."""
        if not self.ready.is_set() or self.match is None:
            return None
        with self._lock:
            self._refresh()
            return {k: round(v, 4) for k, v in self._deltas.items()}

    def engine_delta(self) -> JSONObject | None:
        """What changed in the engine from the matched past build (``{"layers", "precision", "memory"}``, see
        :func:`trt_widget.engine.engine_delta`); None without a match, a report, or an engine brief in the match."""
        if not self.ready.is_set() or self.match is None:
            return None
        report = self.build.engine_report
        if report is None:
            return None
        from ..engine import engine_delta

        return engine_delta(self.match.get("engine"), report)

    def _record(self, build: Build) -> None:
        """Store this build's profile (never raises)."""
        try:
            self.ready.wait(60)
            if self.key is None:
                return
            locked = self.error is not None and "StoreLocked" in self.error  # the look-up waited already
            resources = getattr(build, "resources", None)
            if resources is not None and hasattr(resources, "stop"):
                resources.stop()  # its final sample belongs in the record
            from .._backend import backend_info

            record: HistoryRecord = {
                "key": self.key,
                "model_hash": self.model_hash,
                "label": build.source.label,
                "status": build.status,
                "status_detail": build.status_detail,
                "created": time.time(),
                "total_s": build.elapsed_s,
                "options": build.options.summary(),
                "backend": backend_info(),
                "isolation": build.options.isolation,
                "resources": resources.summary() if resources is not None else None,
                "based_on_id": self.match["id"] if self.match else None,
                "rows": profile_rows(build.timings()),
                "engine": _engine_brief(build),
            }
            if "gpu" in self.like:  # the facts it was compared by (see like_facts)
                record["gpu"] = self.like["gpu"]
            if "timing_cache" in self.like:
                record["timing_cache"] = self.like["timing_cache"]
            self.recorded_id = self.store.add(record, timeout=0.1 if locked else LOCK_TIMEOUT_S)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(Warning):  # warnings made errors: on this thread they would only go unseen
                warnings.warn(
                    f"trt_widget could not record the build in its history: {self.error}", RuntimeWarning, stacklevel=2
                )
        finally:
            self.recorded.set()
            with _pending_lock:
                waiting = _pending.get(str(self.store.path), [])
                if self.recorded in waiting:
                    waiting.remove(self.recorded)
                if not waiting:
                    _pending.pop(str(self.store.path), None)

    def __repr__(self) -> str:
        return f"<HistoryLink {self.store.path} match={self.based_on!r}>"


def _engine_brief(build: Build) -> JSONObject | None:
    """The brief of a succeeded build's engine report that the next build's "Δ last build" compares with."""
    report = build.engine_report if build.status == "succeeded" else None
    if report is None:
        return None
    from ..engine import engine_brief

    return engine_brief(report)
