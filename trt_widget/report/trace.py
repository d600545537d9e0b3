"""A build as Chrome trace-event JSON, to open in Perfetto (ui.perfetto.dev) or chrome://tracing.

Phase instances become async begin/end pairs (``"ph": "b"``/``"e"`` with ``cat`` and ``id``). Events sharing an
``id`` must nest properly, so each instance goes on its parent's track only when it nests there (it starts after
every sibling on that track ended and ends within its parent); otherwise, e.g. when TensorRT threads overlap
phases, it opens a track of its own. Steps are counter events (``"C"``), log lines instant events (``"i"``);
timestamps are microseconds since the build started.
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

from .._files import utf8, write_output
from .._phases import Phase, PhaseModel
from ._inline import Viewed

if TYPE_CHECKING:
    from .._build import Build
    from .._phases import PhaseModel

__all__ = ["StepRecorder", "record_steps", "to_trace", "trace_events"]

CATEGORY = "tensorrt"
STEP_INTERVAL_S = 0.1  # at most one step sample per phase instance per interval (the last one always)
MAX_STEP_SAMPLES = 200_000
_BUILD_TRACK = 0
_recorders: weakref.WeakKeyDictionary[Build | PhaseModel, StepRecorder] = weakref.WeakKeyDictionary()


class TraceEvent(TypedDict, total=False):
    """One Chrome trace event (``ph``: M metadata, b/e async begin/end, C counter, i instant)."""

    ph: str
    name: str
    cat: str
    id: str
    s: str
    pid: int
    tid: int
    ts: float
    args: Mapping[str, object]


class StepRecorder:
    """Keeps throttled ``(t, phase id, steps completed)`` samples of a phase model, for counter events over time.

    Memory is bounded by build time (one sample per phase per 0.1 s, plus each phase's last), not by steps.
    """

    def __init__(self, model: PhaseModel) -> None:
        self._model = weakref.ref(model)  # weak: a recorder kept per model must not keep its model alive
        self.samples: list[tuple[float, int, int]] = []
        self._last: dict[int, float] = {}
        self._lock = threading.Lock()
        model.subscribe(self._on_event)

    def _on_event(self, event: str, phase: Phase) -> None:
        if event == "phase_start" or len(self.samples) >= MAX_STEP_SAMPLES:
            return
        model = self._model()
        if model is None:
            return
        now = phase.end_s if event == "phase_finish" and phase.end_s is not None else model.now()
        with self._lock:
            last = self._last.get(phase.id)
            if event == "step" and last is not None and now - last < STEP_INTERVAL_S:
                return
            self._last[phase.id] = now
            self.samples.append((now, phase.id, phase.step))


def _build_or_model(source: Build | Viewed | PhaseModel) -> Build | PhaseModel:
    return source.build if isinstance(source, Viewed) else source


def record_steps(source: Build | Viewed | PhaseModel) -> StepRecorder:
    """Record step samples of ``source`` (a Build, BuildWidget or PhaseModel, before it starts) for
    :func:`to_trace`. Without it a trace has each phase's steps at its start (0) and end; with it, over time."""
    build = _build_or_model(source)
    recorder = _recorders.get(build)
    if recorder is None:
        recorder = _recorders[build] = StepRecorder(build if isinstance(build, PhaseModel) else build.model)
    return recorder


# -- building the event list -----------------------------------------------------------------------------
def _us(seconds: float) -> float:
    return round(float(seconds) * 1e6, 3)


def _seconds(value: object) -> float:
    """A log record's time (0 where it has none)."""
    return float(value) if isinstance(value, (int, float)) else 0.0


def _tracks(phases: Sequence[Phase], t_end: float) -> dict[int, int]:
    """Phase id -> track (the async ``id``); every track's instances nest properly in time."""
    stacks: dict[int, list[tuple[float, int | str]]] = {_BUILD_TRACK: [(t_end, "build")]}
    track_of: dict[int, int] = {}
    ends = {p.id: (p.end_s if p.end_s is not None else t_end) for p in phases}
    next_track = 1
    for phase in sorted(phases, key=lambda p: (p.start_s, p.id)):
        end = max(ends[phase.id], phase.start_s)
        parent_key = "build" if phase.parent is None else phase.parent
        candidate = _BUILD_TRACK if phase.parent is None else track_of.get(phase.parent)
        if candidate is not None:
            stack = stacks[candidate]
            while len(stack) > 1 and stack[-1][0] <= phase.start_s and stack[-1][1] != parent_key:
                stack.pop()  # instances on this track that ended before this one starts
            if stack[-1][1] == parent_key and end <= stack[-1][0]:
                stack.append((end, phase.id))
                track_of[phase.id] = candidate
                continue
        stacks[next_track] = [(end, phase.id)]
        track_of[phase.id] = next_track
        next_track += 1
    return track_of


def trace_events(
    phases: Iterable[Phase],
    *,
    logs: Iterable[Mapping[str, object]] = (),
    steps: Iterable[tuple[float, int, int]] = (),
    t_end: float | None = None,
    pid: int | None = None,
    process_name: str = "TensorRT build",
    build_name: str | None = None,
) -> list[TraceEvent]:
    """Trace events for ``phases`` (:class:`trt_widget.Phase` objects, e.g. ``PhaseModel.phases()``).

    ``logs``: records with ``t``, ``severity``, ``message``; ``steps``: ``(t, phase id, steps)`` samples;
    ``t_end``: the end of the build (running phases end there); ``build_name``: a slice around everything.
    """
    phases = list(phases)
    logs = list(logs)
    last = max([p.end_s or p.start_s for p in phases] + [_seconds(r.get("t")) for r in logs] + [0.0])
    t_end = max(float(t_end), last) if t_end is not None else last
    pid = os.getpid() if pid is None else pid
    threads: dict[int | None, int] = {None: 1}
    for phase in sorted(phases, key=lambda p: (p.start_s, p.id)):
        threads.setdefault(phase.thread, len(threads) + 1)
    meta: list[TraceEvent] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 1, "ts": 0, "args": {"name": process_name}}
    ]
    for ident, tid in threads.items():
        label = "build" if ident is None else f"TensorRT thread {tid - 1} (ident {ident})"
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0, "args": {"name": label}})
    track_of = _tracks(phases, t_end)
    by_id = {p.id: p for p in phases}
    children: dict[tuple[int, int | None], list[Phase]] = {}
    for phase in sorted(phases, key=lambda p: (p.start_s, p.id)):
        track = track_of[phase.id]
        parent = phase.parent if phase.parent in by_id and track_of.get(phase.parent) == track else None
        children.setdefault((track, parent), []).append(phase)
    timed: list[tuple[float, int, int, TraceEvent]] = []  # (ts, track, order, event): stable per track
    order = [0]

    def put(ts: float, track: int, event: TraceEvent) -> None:
        timed.append((ts, track, order[0], event))
        order[0] += 1

    def walk(track: int, parent: int | None) -> None:  # depth-first: b, children, e — proper nesting per track
        for phase in children.get((track, parent), []):
            end = max(phase.end_s if phase.end_s is not None else t_end, phase.start_s)
            base: TraceEvent = {
                "cat": CATEGORY,
                "name": str(phase.name),
                "id": f"0x{track:x}",
                "pid": pid,
                "tid": threads.get(phase.thread, 1),
            }
            args = {
                "phase_id": phase.id,
                "parent_id": phase.parent,
                "depth": phase.depth,
                "status": phase.status,
                "steps": f"{phase.step}/{phase.num_steps}",
            }
            put(_us(phase.start_s), track, {**base, "ph": "b", "ts": _us(phase.start_s), "args": args})
            walk(track, phase.id)
            put(
                _us(end),
                track,
                {
                    **base,
                    "ph": "e",
                    "ts": _us(end),
                    "args": {"duration_s": end - phase.start_s, "status": phase.status},
                },
            )

    if build_name is not None:
        put(
            0.0,
            _BUILD_TRACK,
            {"cat": CATEGORY, "name": build_name, "id": "0x0", "pid": pid, "tid": 1, "ph": "b", "ts": 0.0, "args": {}},
        )
    for track in sorted({t for t, _ in children}):
        walk(track, None)
    if build_name is not None:
        put(
            _us(t_end),
            _BUILD_TRACK,
            {
                "cat": CATEGORY,
                "name": build_name,
                "id": "0x0",
                "pid": pid,
                "tid": 1,
                "ph": "e",
                "ts": _us(t_end),
                "args": {"duration_s": t_end},
            },
        )
    extra: list[TraceEvent] = []
    sampled: dict[int, list[tuple[float, int]]] = {}
    for t, phase_id, n in sorted(steps, key=lambda s: s[0]):
        sampled.setdefault(phase_id, []).append((t, n))
    for phase in phases:
        if phase.num_steps <= 1:
            continue
        end = phase.end_s if phase.end_s is not None else t_end
        points = sampled.get(phase.id, [])
        # Without a recorder, what is known: 0 at the start, the count at the end. Samples of a builder process
        # carry the time they arrived, so they are clamped into the phase and made non-decreasing.
        series, best = [(phase.start_s, 0)], 0
        for t, n in points or [(end, phase.step)]:
            best = max(best, n)
            point = (min(max(t, phase.start_s), end), best)
            if point != series[-1]:
                series.append(point)
        for t, n in series:
            extra.append(
                {
                    "ph": "C",
                    "name": f"steps: {phase.name}",
                    "id": str(phase.id),
                    "cat": CATEGORY,
                    "pid": pid,
                    "tid": threads.get(phase.thread, 1),
                    "ts": _us(t),
                    "args": {"completed": n},
                }
            )
    for record in logs:
        message = str(record.get("message", ""))
        extra.append(
            {
                "ph": "i",
                "s": "p",
                "cat": "log",
                "name": f"{record.get('severity', 'LOG')}: {message[:80]}",
                "pid": pid,
                "tid": 1,
                "ts": _us(_seconds(record.get("t"))),
                "args": {"severity": record.get("severity"), "message": message},
            }
        )
    events = [e for _, _, _, e in sorted(timed, key=lambda x: (x[0], x[1], x[2]))]
    return meta + events + sorted(extra, key=lambda e: e.get("ts", 0.0))


def to_trace(source: Build | Viewed | PhaseModel, path: str | os.PathLike[str] | None = None) -> str:
    """The Chrome trace-event JSON of a Build / BuildWidget (or a bare PhaseModel); also written atomically to
    ``path`` when given. Includes the phases, step counters, captured log lines and the stop request."""
    build = _build_or_model(source)
    model = build if isinstance(build, PhaseModel) else build.model
    phases = model.phases()
    recorder = _recorders.get(build)
    steps = list(recorder.samples) if recorder is not None else []
    other: dict[str, object] = {"generator": "trt_widget"}
    logs: Sequence[Mapping[str, object]] = []
    t_end = None
    name = None
    if not isinstance(build, PhaseModel):  # a Build: its status, label, logs and end time
        name = f"build: {build.status}"
        t_end = float(build.elapsed_s or 0.0)
        logs = list(build.logs)
        other.update(
            model=str(build.source.label),
            status=build.status,
            elapsed_s=t_end,
            engine_bytes=build.engine_size,
            status_detail=build.status_detail,
        )
        try:
            from .._backend import backend_info

            other["backend"] = backend_info()
        except Exception:
            pass
    label = other.get("model", "phase model")
    events = trace_events(
        phases, logs=logs, steps=steps, t_end=t_end, process_name=f"TensorRT build: {label}", build_name=name
    )
    cancel = build.cancel_info if not isinstance(build, PhaseModel) else None
    if cancel:
        events.append(
            {
                "ph": "i",
                "s": "p",
                "cat": "control",
                "name": "stop requested",
                "pid": events[0]["pid"],
                "tid": 1,
                "ts": _us(cancel.get("requested_at_s") or 0.0),
                "args": dict(cancel),
            }
        )
    text = json.dumps({"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}, default=str)
    if path is not None:
        write_output(path, utf8(text), "path", build)  # the one output-path policy (_files.py)
    return text
