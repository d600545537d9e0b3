"""The JSON event stream of a build: one JSON object per line, for agents' tool-call streams, SSE and logs.

Every event is an object with an ``event`` field and ``t``, seconds on the build's time axis
(0 = ``Build.start()``). The JSON Schema is shipped as ``trt_widget/events.schema.json`` (:func:`schema`)::

  {"event": "build_start", "model": str, "backend": str, "version": str, "options": {...}, "t": 0.0}
  {"event": "phase_start", "id": int, "name": str, "parent": int | null, "depth": int, "num_steps": int, "t": s}
  {"event": "step", "id": int, "name": str, "step": int, "num_steps": int, "t": s}
  {"event": "phase_finish", "id": int, "name": str, "status": "done" | "finished-early" | "cancelled" | "failed",
   "step": int, "num_steps": int, "duration_s": float, "t": s}
  {"event": "log", "severity": "WARNING" | "ERROR" | "INTERNAL_ERROR", "message": str, "t": s}
  {"event": "engine_report", "report": {...} | null, "reason": str, "t": s}   (a succeeded build: EngineReport)
  {"event": "build_end", "status": "succeeded" | "cancelled" | "failed", "detail": str, "elapsed_s": float,
   "engine_bytes": int | null, "output": str | null, "error": str | null, "t": s}

Guarantees: ``build_start`` comes first and ``build_end`` last; a phase's ``phase_start`` precedes its steps and
its ``phase_finish``; ``id``/``parent``/``depth`` are those of ``Build.timings()``; ``step`` counts the steps
completed so far. Steps are throttled to at most one event per phase per ``step_interval_s`` (0.1 s), and the
last step of a phase is always sent before its ``phase_finish``. Warnings and errors of the TensorRT log are
sent; INFO lines are not.

Delivery never blocks the builder, nor ``Build.wait()``: the model's listener only queues dicts, and a daemon
writer thread ("trt_widget-events") writes them, closing a file sink after ``build_end``. So the sink may still be
catching up when ``wait()`` returns: ``build.events.flush(timeout)`` / ``join(timeout)`` wait for it. At
interpreter exit unfinished streams get up to 2 s in total. A failing sink (closed or binary file, full disk, a
callable that raises anything) is reported once per stream: one WARNING in ``build.problems`` and one
``RuntimeWarning``; a file sink then drops later events, a callable is still offered each one.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import queue
import threading
import time
import warnings
import weakref
from importlib import resources
from typing import TYPE_CHECKING, Literal, TypeAlias, TypedDict, get_args

from ._event_sinks import Sink, describe, open_sink
from ._json import JSONObject
from ._phases import Phase
from ._status import FAILED, FINAL, FinalStatus
from ._subscribe import BuildEvent, subscribe

if TYPE_CHECKING:
    from ._build import Build
    from ._tensorrt_log import LogRecord

STEP_INTERVAL_S = 0.1
LogSeverity = Literal["WARNING", "ERROR", "INTERNAL_ERROR"]
LOG_SEVERITIES: tuple[LogSeverity, ...] = get_args(LogSeverity)
EndedPhaseStatus = Literal["done", "finished-early", "cancelled", "failed"]
ENDED_PHASE_STATUSES: tuple[EndedPhaseStatus, ...] = get_args(EndedPhaseStatus)


# One TypedDict per definition of events.schema.json (tests/test_events_schema_types.py compares them)
class BuildStartEvent(TypedDict):
    event: Literal["build_start"]
    model: str
    backend: str
    version: str
    options: JSONObject
    t: float


class PhaseStartEvent(TypedDict):
    event: Literal["phase_start"]
    id: int
    name: str
    parent: int | None
    depth: int
    num_steps: int
    t: float


class StepEvent(TypedDict):
    event: Literal["step"]
    id: int
    name: str
    step: int
    num_steps: int
    t: float


class PhaseFinishEvent(TypedDict):
    event: Literal["phase_finish"]
    id: int
    name: str
    status: EndedPhaseStatus
    step: int
    num_steps: int
    duration_s: float
    t: float


class LogEvent(TypedDict):
    event: Literal["log"]
    severity: LogSeverity
    message: str
    t: float


class EngineReportEvent(TypedDict):
    event: Literal["engine_report"]
    report: JSONObject | None  # EngineReport.to_dict
    reason: str
    t: float


class BuildEndEvent(TypedDict):
    event: Literal["build_end"]
    status: FinalStatus
    detail: str
    elapsed_s: float
    engine_bytes: int | None
    output: str | None
    error: str | None
    t: float


Event: TypeAlias = (
    BuildStartEvent | PhaseStartEvent | StepEvent | PhaseFinishEvent | LogEvent | EngineReportEvent | BuildEndEvent
)
EVENT_TYPES: tuple[type, ...] = get_args(Event)


class _Signal:
    """A queue item for the writer thread that is not an event."""


class _ReportOf(_Signal):
    """A queue item standing for the ended build's ``engine_report`` event, made when it is written."""

    def __init__(self, build: Build) -> None:
        self.build = build

    def event(self) -> EngineReportEvent | None:
        from .engine import report_event

        if not hasattr(self.build, "engine_report"):  # a build-like object of another kind
            return None
        return report_event(self.build)


_CLOSE = _Signal()  # build_end was queued: close the sink
_WAKE = _Signal()  # a step waits in _pending: the writer should wake up after step_interval_s
_open_streams: weakref.WeakSet[EventStream] = weakref.WeakSet()


def schema() -> JSONObject:
    """The JSON Schema (2020-12) that every event validates against."""
    text = resources.files("trt_widget").joinpath("events.schema.json").read_text(encoding="utf-8")
    loaded: JSONObject = json.loads(text)
    return loaded


def attach_events(build: Build, sink: Sink, *, step_interval_s: float = STEP_INTERVAL_S) -> EventStream:
    """Stream ``build``'s events to ``sink``: a file path (JSON lines appended, flushed per event), a writable
    text file object (one JSON line per event), or a callable receiving each event dict (on the writer thread).

    The first stream attached to a build (``Build(events=...)``'s) is also ``build.events``.
    """
    stream = EventStream(build, sink, step_interval_s=step_interval_s)
    if getattr(build, "events", None) is None:
        with contextlib.suppress(AttributeError):  # a build-like object without a settable ``events``
            build.events = stream
    return stream


class EventStream:
    """Turns a build's phase model, log and life cycle into queued event dicts and writes them off-thread."""

    def __init__(self, build: Build, sink: Sink, *, step_interval_s: float = STEP_INTERVAL_S) -> None:
        self.build = build
        self.step_interval_s = float(step_interval_s)
        self.errors: list[str] = []  # every sink failure (capped); the first one is also reported, see _failed
        self.written = 0
        self._write, self._close_sink = open_sink(sink)
        self._is_file = not callable(sink) or hasattr(sink, "write")  # a failed file drops later events
        self._label = describe(sink)
        self._reported = False
        self._queue: queue.SimpleQueue[Event | _Signal | threading.Event] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._drained = threading.Event()
        self._began = False
        self._ended = False
        self._started_ids: set[int] = set()
        self._finished_ids: set[int] = set()
        self._last_step: dict[int, tuple[int, float]] = {}  # id -> (step sent, when it was sent)
        self._pending: dict[int, tuple[int, float]] = {}  # id -> newest unsent (step, t)
        self._names: dict[int, tuple[str, int]] = {}  # id -> (name, num_steps) of running phases
        with self._lock:
            self.unsubscribe = subscribe(build, self._on_build_event)
            if build.status != "idle":  # attached late: replay what is known so ids stay consistent
                self._begin()
                for phase in build.model.phases():
                    self._phase_started(phase)
                    if phase.end_s is not None:
                        self._phase_finished(phase)
        if hasattr(build, "on_start"):
            build.on_start(lambda _build: self._begin_locked())
        build.add_done_callback(self._on_done)
        _open_streams.add(self)

    # -- waiting -------------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        """True once ``build_end`` was written and the sink closed."""
        return self._drained.is_set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until ``build_end`` was written and a file sink closed (the build must end); True if so."""
        return self._drained.wait(timeout)

    def flush(self, timeout: float = 2.0) -> bool:
        """Wait until every event queued so far was written; True if it was within ``timeout``. False at once
        without a writer (in a forked child: the writer is its parent's thread, writing the parent's events)."""
        if self._thread is None or self._drained.is_set():
            return True
        if not self._thread.is_alive():
            return self._drained.is_set()
        marker = threading.Event()
        self._queue.put(marker)
        if self._drained.is_set():  # the writer finished before reading the marker: all was written
            return True
        return marker.wait(timeout)

    # -- producers (builder thread: cheap, never raise) ----------------------------------------------
    def _put(self, event: Event | _Signal | threading.Event) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._writer, name="trt_widget-events", daemon=True)
            self._thread.start()
        self._queue.put(event)

    def _begin_locked(self) -> None:
        with self._lock:
            self._begin()

    def _begin(self) -> None:
        if self._began:
            return
        self._began = True
        build = self.build
        try:
            from ._backend import backend_info

            info = backend_info()
            backend, version = info["backend"], info["version"]
        except Exception:
            backend, version = "unknown", "?"
        try:
            options = json.loads(json.dumps(dataclasses.asdict(build.options), default=str))
        except Exception:
            options = {}
        self._put(
            {
                "event": "build_start",
                "model": build.source.label,
                "backend": backend,
                "version": version,
                "options": options,
                "t": 0.0,
            }
        )

    def _on_phase(self, kind: str, phase: Phase) -> None:
        try:
            with self._lock:
                if self._ended:
                    return
                self._begin()
                if kind == "step":
                    self._stepped(phase.id, phase.name, phase.step, phase.num_steps)
                elif kind == "phase_start":
                    self._phase_started(phase)
                else:
                    self._phase_finished(phase)
        except Exception as exc:  # the builder must never see a reader's failure
            self._note(f"event listener: {exc!r}")

    def _phase_started(self, phase: Phase) -> None:
        if phase.id in self._started_ids:
            return
        self._started_ids.add(phase.id)
        self._names[phase.id] = (phase.name, phase.num_steps)
        self._put(
            {
                "event": "phase_start",
                "id": phase.id,
                "name": phase.name,
                "parent": phase.parent,
                "depth": phase.depth,
                "num_steps": phase.num_steps,
                "t": phase.start_s,
            }
        )

    def _stepped(self, pid: int, name: str, step: int, num_steps: int) -> None:
        if pid not in self._started_ids or pid in self._finished_ids:
            return
        sent = self._last_step.get(pid)
        if sent is not None and step <= sent[0]:
            return
        now = self.build.model.now()
        if sent is None or now - sent[1] >= self.step_interval_s:
            self._last_step[pid] = (step, now)
            self._pending.pop(pid, None)
            self._put({"event": "step", "id": pid, "name": name, "step": step, "num_steps": num_steps, "t": now})
        else:
            waiting = bool(self._pending)
            self._pending[pid] = (step, now)
            if not waiting:
                self._put(_WAKE)  # the writer now waits with a timeout

    def _phase_finished(self, phase: Phase) -> None:
        end, status = phase.end_s, phase.status
        if phase.id in self._finished_ids or end is None or status not in ENDED_PHASE_STATUSES:
            return  # not finished yet (its status is set just after its end): its own phase_finish comes
        self._phase_started(phase)
        pending = self._pending.pop(phase.id, None)
        sent = self._last_step.pop(phase.id, None)
        if pending is not None or (phase.step > 0 and (sent is None or sent[0] < phase.step)):
            t = pending[1] if pending is not None else end
            self._put(
                {
                    "event": "step",
                    "id": phase.id,
                    "name": phase.name,
                    "step": phase.step,
                    "num_steps": phase.num_steps,
                    "t": t,
                }
            )
        self._finished_ids.add(phase.id)
        self._names.pop(phase.id, None)
        self._put(
            {
                "event": "phase_finish",
                "id": phase.id,
                "name": phase.name,
                "status": status,
                "step": phase.step,
                "num_steps": phase.num_steps,
                "duration_s": end - phase.start_s,
                "t": end,
            }
        )

    def _flush_pending(self) -> None:
        with self._lock:
            now = self.build.model.now()
            for pid, (step, t) in list(self._pending.items()):
                if self._ended or pid not in self._names:
                    del self._pending[pid]
                elif now - self._last_step.get(pid, (0, float("-inf")))[1] >= self.step_interval_s:
                    del self._pending[pid]
                    self._last_step[pid] = (step, now)
                    name, num_steps = self._names[pid]
                    self._put({"event": "step", "id": pid, "name": name, "step": step, "num_steps": num_steps, "t": t})

    def _on_build_event(self, event: BuildEvent) -> None:
        if event.phase is not None:
            self._on_phase(event.kind, event.phase)
        elif event.kind == "log" and event.record is not None:
            self._on_log(event.record)

    def _on_log(self, record: LogRecord) -> None:
        severity = next((s for s in LOG_SEVERITIES if s == record.get("severity")), None)
        if severity is not None:
            with self._lock:
                if not self._ended:
                    self._begin()
                    self._put(
                        {
                            "event": "log",
                            "severity": severity,
                            "message": str(record.get("message", "")),
                            "t": float(record.get("t", 0.0)),
                        }
                    )

    def _on_done(self, build: Build) -> None:
        with self._lock:
            if self._ended:
                return
            self._begin()
            for phase in build.model.phases():  # close_all already ran; these are normally no-ops
                if phase.end_s is not None:
                    self._phase_started(phase)
                    self._phase_finished(phase)
            self._ended = True
            error = build.error
            # engine_size, not the bytes: a watched build keeps none, and output= may hold them unread
            size = getattr(build, "engine_size", None)
            if size is None and build.engine is not None:
                size = len(build.engine)
            output = build.options.output if size is not None else None
            status: FinalStatus = build.status if build.status in FINAL else FAILED  # done callbacks: it is final
            self._put(_ReportOf(build))  # read on the writer thread: wait() does not wait for the parse
            self._put(
                {
                    "event": "build_end",
                    "status": status,
                    "detail": build.status_detail,
                    "elapsed_s": build.elapsed_s,
                    "engine_bytes": size,
                    "output": output,
                    "error": str(error) if error is not None else None,
                    "t": build.elapsed_s,
                }
            )
            self._put(_CLOSE)
        # no waiting for the writer here: a slow sink must not delay wait(); flush()/join() are for that

    # -- the writer thread ---------------------------------------------------------------------------
    def _writer(self) -> None:
        """Write queued events until build_end; no sink failure (even a BaseException) ends this thread."""
        failed = False
        while True:
            try:  # wake up while steps wait in _pending, so a throttled step is late by at most one interval
                item = self._queue.get(timeout=self.step_interval_s if self._pending else None)
            except queue.Empty:
                try:
                    self._flush_pending()
                except Exception as exc:
                    self._note(f"sending throttled steps: {exc!r}")
                continue
            if isinstance(item, threading.Event):
                item.set()
                continue
            if item is _CLOSE:
                break
            if item is _WAKE or failed:
                continue
            try:
                event = item.event() if isinstance(item, _ReportOf) else item
                if event is None or isinstance(event, _Signal):
                    continue
                self._write(event)
                self.written += 1
            except BaseException as exc:  # a callable's KeyboardInterrupt / SystemExit too: the writer lives on
                self._failed("writing an event", exc)
                failed = self._is_file  # a broken file stays broken (no torn lines); a callable may recover
        try:
            if self._close_sink is not None:
                self._close_sink()
        except BaseException as exc:
            self._failed("closing the file", exc)
        self._drained.set()
        _open_streams.discard(self)
        while True:  # flush() markers queued behind build_end: everything is written now
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, threading.Event):
                item.set()

    def _failed(self, doing: str, exc: BaseException) -> None:
        """Report the first sink failure where the user looks: a WARNING in build.problems and a RuntimeWarning."""
        self._note(f"{doing}: {exc!r}")
        if self._reported:
            return
        self._reported = True
        then = "later events are dropped" if self._is_file else "later events are still passed to it"
        message = (
            f"events sink {self._label} failed {doing}: {type(exc).__name__}: {exc}; {then} "
            "(the build itself is not affected)"
        )
        # the logger also sends it as a "log" event to this build's other streams (and to this one)
        with contextlib.suppress(BaseException):
            self.build.logger.log(2, message)
        with contextlib.suppress(BaseException):  # e.g. -W error turns it into an exception: never on the writer thread
            warnings.warn(message, RuntimeWarning, stacklevel=1)

    def _note(self, message: str) -> None:
        if len(self.errors) < 20:
            self.errors.append(message)


@atexit.register
def _flush_at_exit() -> None:
    """Let unfinished streams write what is queued, up to 2 s in total: a stuck sink cannot hold up exit."""
    deadline = time.monotonic() + 2.0
    for stream in list(_open_streams):
        stream.flush(max(0.0, deadline - time.monotonic()))
