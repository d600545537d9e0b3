"""The phase model: one record per phase *instance* of a TensorRT build, fed by progress callbacks.

Pure Python (imports neither TensorRT nor Jupyter) with an injected clock, so every front end (widget,
terminal, JSON events, process pipe) reads the same state and tests of timing are deterministic.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Final, Literal, TypedDict

from ._format import escape_controls, fmt_s, keep_units

if TYPE_CHECKING:
    from IPython.lib.pretty import RepresentationPrinter

PhaseStatus = Literal["running", "done", "finished-early", "cancelled", "failed"]
RUNNING: Final = "running"
DONE: Final = "done"
FINISHED_EARLY: Final = "finished-early"
CANCELLED: Final = "cancelled"
FAILED: Final = "failed"  # the build failed while the phase ran
PHASE_STATUSES = (RUNNING, DONE, FINISHED_EARLY, CANCELLED, FAILED)
MAX_DEPTH = 256  # phase nesting; a real build nests about 8 deep: deeper comes only from a hostile recording/server


class PhaseRow(TypedDict):
    """One phase instance as front ends and ``timings()`` share it (JSON-ready; ``js/src/build/rows.js`` reads it)."""

    id: int
    name: str
    parent: int | None
    depth: int
    step: int
    num_steps: int
    start_s: float
    end_s: float | None
    duration_s: float | None
    status: PhaseStatus


class TimingRow(PhaseRow):
    """A row of ``Build.timings()``: a phase TensorRT closed before its announced last step reads ``done`` with
    ``ended_early`` True (the phase model and the JSON events keep the word ``finished-early``)."""

    ended_early: bool


class Timings(list[TimingRow]):
    """``Build.timings()``: the list of rows (index, iterate, ``len``, JSON) that shows compactly in a notebook or
    REPL, as the top-level phases with their times and a count of the nested rows, not one dict per phase."""

    def _summary(self) -> tuple[list[TimingRow], int]:
        top = [row for row in self if row.get("parent") is None]
        return top, len(self) - len(top)

    def __repr__(self) -> str:
        top, nested = self._summary()
        head = f"Timings: {len(self)} phase rows ({nested} nested; iterate or index for all, timings_df() for a table)"
        width = max((len(escape_controls(row.get("name", ""))) for row in top), default=0)
        lines = [head]
        for row in top:
            name = escape_controls(row.get("name", ""))
            lines.append(f"  {name:<{width}}  {fmt_s(row.get('duration_s')) or '…':>9}  {row.get('status', '')}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: RepresentationPrinter, cycle: bool) -> None:
        head, *rows = repr(self).split("\n")
        with p.group(2, head, ""):  # indented as a value inside another (a watch's timings per build)
            for row in rows:
                p.break_()
                p.text(row[2:])

    def _repr_html_(self) -> str:
        top, nested = self._summary()
        cells = "".join(
            f"<tr><td>{escape(escape_controls(row.get('name', '')))}</td><td style='text-align:right'>"
            f"{escape(keep_units(fmt_s(row.get('duration_s'))) or '…')}</td>"
            f"<td>{escape(str(row.get('status', '')))}</td></tr>"
            for row in top
        )
        return (
            f"<div><b>Timings</b>: {len(self)} phase rows ({nested} nested; iterate or index for all, "
            f"<code>timings_df()</code> for a table)<table>{cells}</table></div>"
        )


Clock = Callable[[], float]
Listener = Callable[[str, "Phase"], None]


@dataclass
class Phase:
    """One phase instance: TensorRT may start a phase of the same name many times."""

    id: int
    name: str
    parent: int | None
    depth: int
    num_steps: int
    start_s: float
    step: int = 0  # steps completed: the highest step index seen + 1
    end_s: float | None = None
    status: PhaseStatus = RUNNING
    thread: int | None = None  # the TensorRT thread that started it, when known (callbacks may come from several)

    @property
    def duration_s(self) -> float | None:
        return None if self.end_s is None else self.end_s - self.start_s

    def row(self) -> PhaseRow:
        """The JSON-ready form that front ends and ``timings()`` share."""
        return {
            "id": self.id,
            "name": self.name,
            "parent": self.parent,
            "depth": self.depth,
            "step": self.step,
            "num_steps": self.num_steps,
            "start_s": self.start_s,
            "end_s": self.end_s,
            "duration_s": self.duration_s,
            "status": self.status,
        }


@dataclass(frozen=True)
class Framing:
    """The rows trt_widget adds where TensorRT reports no phase: ``after`` opens when TensorRT's last top-level
    phase ends (and closes when another starts, or at :meth:`PhaseModel.end_after`); ``own`` names every framing
    row (the builder's "before" rows, the process start-up, ``after``), which never open or close ``after``."""

    after: str
    own: frozenset[str]


class PhaseModel:
    """Thread-safe record of phase instances. Callbacks never raise on odd sequences.

    A parent name resolves to the newest *active* instance of that name; a step or finish resolves to the
    newest active instance of its name (a late step for a finished phase updates the newest finished one).
    Memory grows with phase instances, never with steps. With ``framing``, the model itself adds the "after"
    row (see :class:`Framing`): the one place it is made, never a listener writing back.
    """

    def __init__(self, clock: Clock = time.perf_counter, framing: Framing | None = None) -> None:
        self._clock = clock
        self.framing = framing
        self._after: Phase | None = None  # the open "after" row
        self._closed = False  # close_all ran: the build ended, no "after" row opens now
        self._t0 = clock()
        self._lock = threading.Lock()
        self._phases: list[Phase] = []
        self._active: dict[str, list[Phase]] = {}  # name -> active instances, oldest first
        self._newest: dict[str, Phase] = {}  # name -> newest instance, active or not
        self._running: dict[int, Phase] = {}  # id -> phase, in start order
        self._listeners: list[Listener] = []
        self._step_listeners: list[Listener] = []  # those that also want every step
        self._rows: list[PhaseRow] = []  # cached row dicts, replaced (never mutated) when dirty
        self._dirty: set[int] = set()
        self.version = 0  # bumped on every change; readers compare to skip unchanged snapshots
        self.last_event_s: float | None = None  # build time of the last callback: how long TensorRT has been quiet
        self.structure_version = 0  # bumped on phase start/finish/close only
        self.ignored = 0  # callbacks that matched no phase (unknown names)
        self.cancelling = False  # once set, phases that finish short of their steps count as cancelled
        self.refused_s: float | None = None  # the first step while cancelling: the builder was told to stop there
        self.cancel_s: float | None = None  # when the cancel was asked (request_cancel)

    # -- clock -------------------------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the model was created (the build's time axis)."""
        return self._clock() - self._t0

    def restart_clock(self) -> None:
        """Make t=0 now: call when the build actually starts."""
        with self._lock:
            self._t0 = self._clock()

    # -- callbacks (TensorRT's IProgressMonitor, or replayed events) -------------------------------
    def _time(self, at: float | None) -> float:
        """Build time of clock reading ``at`` (a replayed event's own time), or of now."""
        return (self._clock() if at is None else min(at, self._clock())) - self._t0

    @staticmethod
    def _pick(stack: list[Phase] | None, thread: int | None) -> Phase | None:
        """The newest active instance started on ``thread``, else the newest of all (callbacks from a TensorRT
        worker thread may name a phase its parent thread started)."""
        if not stack:
            return None
        if thread is not None:
            for phase in reversed(stack):
                if phase.thread == thread:
                    return phase
        return stack[-1]

    def phase_start(
        self,
        name: str,
        parent_name: str | None,
        num_steps: int,
        at: float | None = None,
        thread: int | None = None,
        parent_thread: int | None = None,
    ) -> Phase:
        """A phase instance starts; ``parent_thread`` (default ``thread``) picks among same-named parents."""
        if self._after is not None and parent_name is None and self._frames(name):
            self.end_after()  # another top-level TensorRT phase: not the end after all
        with self._lock:
            parent = None
            if parent_name is not None:
                parent = self._pick(self._active.get(parent_name), thread if parent_thread is None else parent_thread)
                if parent is not None and parent.depth >= MAX_DEPTH:
                    raise ValueError(f"phases nest more than {MAX_DEPTH} deep ({name!r} under {parent_name!r})")
            phase = Phase(
                id=len(self._phases),
                name=name,
                parent=parent.id if parent else None,
                depth=parent.depth + 1 if parent else 0,
                num_steps=max(int(num_steps), 0),
                start_s=self._time(at),
                thread=thread,
            )
            self._phases.append(phase)
            self.last_event_s = phase.start_s
            self._active.setdefault(name, []).append(phase)
            self._newest[name] = phase
            self._running[phase.id] = phase  # not dirty: rows() makes a new phase's row
            self.version += 1
            self.structure_version += 1
        self._notify("phase_start", phase)
        return phase

    def step_complete(self, name: str, step: int, thread: int | None = None) -> Phase | None:
        with self._lock:
            phase = self._pick(self._active.get(name), thread) or self._newest.get(name)
            if phase is None:
                self.ignored += 1
                return None
            completed = int(step) + 1
            self.last_event_s = self._time(None)
            if self.cancelling and self.refused_s is None:
                self.refused_s = self.last_event_s
            changed = completed > phase.step
            if changed:
                phase.step = completed
                if phase.status == FINISHED_EARLY and completed >= phase.num_steps:
                    phase.status = DONE
                self._dirty.add(phase.id)
                self.version += 1
        if changed and self._step_listeners:
            self._notify("step", phase)
        return phase

    def request_cancel(self) -> None:
        """A cancel was asked: from the next step on the builder is told to stop, and a phase still open then
        was cut short by it, unless all its steps completed (TensorRT calls ``stepComplete`` when a step is done,
        so a phase whose last step is where it heard the cancel did all its work: done, not cancelled)."""
        with self._lock:
            self.cancelling = True
            if self.cancel_s is None:
                self.cancel_s = self._time(None)

    def phase_finish(
        self, name: str, at: float | None = None, thread: int | None = None, ended: str | None = None
    ) -> Phase | None:
        """``ended``: CANCELLED or FAILED as a recording says it ended (else the status follows from its steps)."""
        with self._lock:
            phase = self._pick(self._active.get(name), thread)
            if phase is None:
                self.ignored += 1
                return None
            stack = self._active[name]  # holds phase: _pick found it there
            stack.remove(phase)
            if not stack:
                del self._active[name]
            # open when the builder was told to stop, and ended after the cancel was asked (a replayed phase that
            # ended before it, whose events came late, was done); a phase whose announced steps all completed did
            # its work whenever the cancel came, so only a phase without steps can be cut short at its end
            cut = self.cancelling and self.refused_s is not None and self._time(at) >= (self.cancel_s or 0.0)
            complete = phase.step >= phase.num_steps and (phase.num_steps > 0 or not cut)
            status: PhaseStatus = DONE if complete else (CANCELLED if self.cancelling else FINISHED_EARLY)
            if ended == CANCELLED:
                status = CANCELLED
            elif ended == FAILED:
                status = FAILED
            self.last_event_s = end = self._close(phase, status, at)
            after = self._open_after(phase, end)
        self._notify("phase_finish", phase)
        if after is not None:
            self._notify("phase_start", after)
        return phase

    def _frames(self, name: str) -> bool:
        """True when a top-level phase ``name`` is TensorRT's, so framing rows follow it."""
        return self.framing is not None and name not in self.framing.own

    def _open_after(self, ended: Phase, end_s: float) -> Phase | None:
        """Open the "after" row at ``end_s`` (lock held) when ``ended`` was TensorRT's last running top-level
        phase."""
        if (
            self.framing is None
            or ended.depth != 0
            or not self._frames(ended.name)
            or ended.status == CANCELLED
            or self._closed
            or self._running
            or self._after is not None
        ):
            return None
        name = self.framing.after
        after = Phase(id=len(self._phases), name=name, parent=None, depth=0, num_steps=0, start_s=end_s)
        self._phases.append(after)
        self._active.setdefault(name, []).append(after)
        self._newest[name] = after
        self._running[after.id] = after
        self.version += 1
        self.structure_version += 1
        self._after = after
        return after

    def end_after(self) -> Phase | None:
        """Close the open "after" row (the engine is in place, or TensorRT started another phase)."""
        if self._after is None or self.framing is None:
            return None
        self._after = None
        return self.phase_finish(self.framing.after)

    def close_all(self, status: PhaseStatus = CANCELLED) -> list[Phase]:
        """End every running phase (build cancelled or failed) so no phase is left open."""
        with self._lock:
            self._closed, self._after = True, None
            closed = list(self._running.values())
            for phase in closed:
                self._close(phase, status)
            self._active.clear()
        for phase in closed:
            self._notify("phase_finish", phase)
        return closed

    def uncancel(self) -> None:
        """A Stop came too late and the build produced its engine: phases it cut short finished early."""
        with self._lock:
            self.cancelling, self.refused_s, self.cancel_s = False, None, None
            for phase in self._phases:
                if phase.status == CANCELLED:
                    phase.status = DONE if phase.step >= phase.num_steps else FINISHED_EARLY
                    self._dirty.add(phase.id)
                    self.version += 1

    def _close(self, phase: Phase, status: PhaseStatus, at: float | None = None) -> float:
        """End ``phase`` (lock held); returns its end time."""
        phase.end_s = end_s = self._time(at)
        phase.status = status
        self._running.pop(phase.id, None)
        self._dirty.add(phase.id)
        self.version += 1
        self.structure_version += 1
        return end_s

    # -- listeners ---------------------------------------------------------------------------------
    def subscribe(self, listener: Listener, *, steps: bool = True) -> Callable[[], None]:
        """Call ``listener(event, phase)`` on every change (event: phase_start, step, phase_finish; not step
        with ``steps=False``), on the thread that made it; returns a function that unsubscribes. A listener
        that raises is skipped."""
        with self._lock:  # copy on write: _notify iterates without the lock
            self._listeners = [*self._listeners, listener]
            if steps:
                self._step_listeners = [*self._step_listeners, listener]

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = [x for x in self._listeners if x is not listener]
                self._step_listeners = [x for x in self._step_listeners if x is not listener]

        return unsubscribe

    def _notify(self, event: str, phase: Phase) -> None:
        # try/except, not contextlib.suppress: this runs on every TensorRT step (~20 ns against ~700 ns)
        for listener in self._step_listeners if event == "step" else self._listeners:
            try:  # noqa: SIM105
                listener(event, phase)
            except Exception:  # a broken reader must not break the build
                pass

    # -- readers -----------------------------------------------------------------------------------
    def rows(self) -> list[PhaseRow]:
        """A new list of row dicts; rows that did not change since the last call are the same objects."""
        with self._lock:
            rows = self._rows
            for phase in self._phases[len(rows) :]:  # a new phase's row is made here (it is not in _dirty)
                rows.append(phase.row())
            for pid in self._dirty:
                rows[pid] = self._phases[pid].row()
            self._dirty.clear()
            return list(rows)

    def phases(self) -> list[Phase]:
        """Copies of every phase instance, in start order."""
        with self._lock:
            return [Phase(**vars(p)) for p in self._phases]

    def innermost_running(self) -> Phase | None:
        """The most recently started phase that is still running (what a Stop waits on)."""
        with self._lock:
            if not self._running:
                return None
            return Phase(**vars(next(reversed(self._running.values()))))

    def running_count(self) -> int:
        return len(self._running)

    def __len__(self) -> int:
        return len(self._phases)

    def timings(self) -> list[PhaseRow]:
        """Per-instance timings as plain dicts (id, name, parent, depth, start_s, end_s, duration_s, ...)."""
        return [row.copy() for row in self.rows()]
