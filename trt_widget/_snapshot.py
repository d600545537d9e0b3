"""Snapshots of a build: the JSON-ready state every front end reads, and the throttled pump that sends it.

The pump is the only writer of a widget's synced traits: one thread, at most one send per ``interval``,
phase starts/ends and the final state sent promptly, the builder thread never waits on it. The phase rows
travel as one JSON text built from per-row texts cached while a row is unchanged, so a send costs little
Python work (and little time holding the GIL) even with thousands of phase instances.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict, TypeVar

from ._backend import select_backend
from ._expected import annotate, shown_logs
from ._status import CANCELLING, FAILED, FINAL, LIVE
from ._subscribe import BuildEvent, subscribe

if TYPE_CHECKING:
    from ._build import Build
    from ._json import JSONObject
    from ._phases import PhaseRow
    from ._resources import ResourcesSnapshot
    from ._status import BuildStatus, CancelInfo
    from ._tensorrt_log import LogRecord
    from ._verbose import Timing

MAX_LOGS = 200
T = TypeVar("T")


class Activity(TypedDict):
    """While the build is live: the build time of TensorRT's last callback, and what the autotuner times."""

    last_callback_s: float | None
    timing: Timing | None


class Snapshot(TypedDict):
    """What a front end shows of a build: BuildWidget's synced traits (``phases`` travels as ``phases_json`` and
    deltas), the ``Traits`` typedef of ``js/src/build/widget.js``."""

    status: BuildStatus
    status_detail: str
    elapsed_s: float
    started: bool  # False while queued, and for a build stopped there: it never built, so no time is shown
    phases: list[PhaseRow]
    engine_size: int
    error: str
    logs: list[LogRecord]
    cancel: CancelInfo | None
    can_force: bool
    eta: JSONObject | None  # HistoryLink.eta()
    history_delta: dict[str, float] | None  # HistoryLink.deltas()
    history_basis: JSONObject | None  # HistoryLink.basis(): the past build history_delta compares with
    resources: ResourcesSnapshot | None
    activity: Activity | None
    engine_json: str  # the engine report as JSON text once the build succeeded (made once: see ``snapshot``)


def snapshot(build: Build, *, engine: str = "") -> Snapshot:
    """The state a front end shows, as trait name -> JSON-ready value. ``engine``: the ``engine_json`` to show (a
    view makes it once, with :func:`engine_json`, as the report may be megabytes; "" shows none)."""
    status = build.status
    error = build.error
    rows = build.model.rows()  # one copy for the phases and the log's rule (the pump calls this often)
    return {
        "status": status,
        "status_detail": build.status_detail,
        "elapsed_s": round(build.elapsed_s, 4),
        "started": build.started_building,
        "phases": rows,
        "engine_size": build.engine_size or 0,
        "error": str(error) if error is not None and status == FAILED else "",
        "logs": annotate(
            shown_logs(build.problems, rows, verbose=build.options.verbose)[-MAX_LOGS:],
            cancelled=build.cancel_info is not None,
            backend=_backend_kind(),
        ),
        "cancel": build.cancel_info if status == CANCELLING else None,
        "can_force": build.options.isolation == "process",
        "eta": _guarded(build.history.eta) if build.history is not None else None,
        "history_delta": _guarded(build.history.deltas) if build.history is not None else None,
        "history_basis": _guarded(build.history.basis) if build.history is not None else None,
        # a build that failed before TensorRT built anything has no memory peak of its own (not the worker's)
        "resources": _guarded(build.resources.snapshot)
        if build.resources is not None and (status != FAILED or build.tensorrt_started)
        else None,
        "activity": {
            "last_callback_s": build.model.last_event_s,
            "timing": _guarded(build.logger.tactics.snapshot),
        }
        if status in LIVE
        else None,
        "engine_json": engine,
    }


def traits(snap: Snapshot) -> tuple[list[PhaseRow], dict[str, object]]:
    """A snapshot's phase rows, and the rest as a plain dict of trait values (the rows travel encoded)."""
    return snap["phases"], {key: value for key, value in snap.items() if key != "phases"}


WIDGET_REPORT_BYTES = 8 << 20  # the engine report sent to a widget view (10,000 layers fit)


def engine_json(build: Build) -> str:
    """The engine report as JSON text for a view once the build succeeded ("" before, or where there is none)."""
    if build.status != "succeeded":
        return ""
    try:
        report = build.engine_report
        if report is None:
            return ""
        data = report.to_dict(WIDGET_REPORT_BYTES)
        change = engine_change(build)
        if change is not None:  # "Δ last build": what changed from the matched past build
            data["delta"], data["delta_basis"] = change
        return json.dumps(data)
    except Exception:  # an optional extra must never stop the pump
        return ""


def engine_change(build: Build) -> tuple[JSONObject, str] | None:
    """ "Δ last build" for the engine: (what changed, the past build it compares with) where the build's history
    matched one whose engine brief is known; None otherwise."""
    history = build.history
    delta = history.engine_delta() if history is not None else None
    if not isinstance(delta, dict):
        return None
    return delta, str(getattr(history, "based_on", None) or "")


def _backend_kind() -> str:
    try:
        return select_backend()[0]
    except Exception:  # no backend: nothing is expected of one
        return ""


def _guarded(read: Callable[[], T | None]) -> T | None:
    try:
        return read()
    except Exception:  # an optional extra must never stop the pump
        return None


class ListPhase(TypedDict):
    """The phase a row of a list view (matrix, watch) is in."""

    name: str
    step: int
    num_steps: int


class ListRow(TypedDict):
    """One build's row in a list view: the matrix and the watch list (``js/src/matrix`` reads it)."""

    id: int
    model: str
    variant: str
    status: BuildStatus
    detail: str
    elapsed_s: float
    engine_size: int
    error: str
    phase: ListPhase | None
    can_force: bool
    started: bool  # False while the build waits in its queue (or ended there): its time is not shown


class SnapshotPump:
    """Sends changed parts of ``snapshot(build)`` to ``send`` from one thread, at most every ``interval`` s."""

    def __init__(
        self,
        build: Build,
        send: Callable[[dict[str, object]], None],
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.build = build
        self.clock = clock
        self.send = send
        self.interval = interval
        self.last: dict[str, object] = {}
        self._rows = RowsEncoder()
        self.seq = 0  # number of the last phases_delta
        self._full = False
        self._wake = threading.Event()
        self._hurry = threading.Event()  # ends a throttle wait early: a Stop click or the build's end
        self._urgent = False
        self.last_send_s: float | None = None  # when the last send was made (a flush before the thread starts too)
        self._thread = threading.Thread(target=self._loop, name="trt_widget-pump", daemon=True)
        self.unsubscribe = subscribe(build, self._on_event, steps=False)  # steps wait for the next tick
        build.add_done_callback(lambda _build: self.wake(urgent=True))

    def _on_event(self, event: BuildEvent) -> None:
        if event.kind in ("phase_start", "phase_finish"):
            self._wake.set()

    def start(self) -> None:
        self._thread.start()

    def wake(self, urgent: bool = False) -> None:
        """Send soon (a phase started or ended, the build ended); ``urgent`` (a Stop click) sends at once."""
        self._urgent = self._urgent or urgent
        if urgent:
            self._hurry.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def _loop(self) -> None:
        while True:
            finished = self.build.done()  # read first, so the snapshot after it is the final one
            if not finished:
                # A step-only change waits for the next tick; a phase start/end or the end of the build wakes us
                # early. Never more than one send per interval, except the final state and a Stop click.
                self._wake.wait(self.interval)
                self._wake.clear()
                finished = self.build.done()
                last_send = self.last_send_s
                gap = 0.0 if last_send is None else self.interval - (self.clock() - last_send)
                if gap > 0 and not finished and not self._urgent:
                    self._hurry.wait(gap)
                    finished = self.build.done()
            self._hurry.clear()
            self._urgent = False
            self.flush()
            if finished:
                return

    def request_full(self) -> None:
        """A view missed deltas (or is new): send the whole row list with the next send, soon."""
        self._full = True
        self.wake(urgent=True)

    def flush(self) -> None:
        """Send what changed since the last send (call only from the pump's thread, or before it starts).

        Phase rows travel as deltas (``phases_delta``: the rows that changed, numbered ``seq``); the whole list
        (``phases_json`` with the ``phases_seq`` it includes) only first, at the end, and when a view asks."""
        made = self.last.get("engine_json")
        rows, state = traits(
            snapshot(self.build, engine=made if isinstance(made, str) and made else engine_json(self.build))
        )
        changed_rows = self._rows.update(rows)
        if changed_rows:
            self.seq += 1
            state["phases_delta"] = f'{{"seq":{self.seq},"rows":[{",".join(changed_rows)}]}}'
        else:
            state["phases_delta"] = self.last.get("phases_delta", "")
        if self._full or "phases_json" not in self.last or state["status"] in FINAL:
            self._full = False
            state["phases_json"], state["phases_seq"] = self._rows.text(), self.seq
        else:
            state["phases_json"], state["phases_seq"] = self.last["phases_json"], self.last["phases_seq"]
        changed = {k: v for k, v in state.items() if self.last.get(k, _MISSING) != v}
        if changed.keys() == {"elapsed_s"} and state["status"] in LIVE:
            return  # the browser ticks elapsed time itself; re-anchor it only along with real news
        if changed:
            self.send(changed)
            self.last_send_s = self.clock()
            self.last.update(changed)


class RowsEncoder:
    """JSON texts of a list of row dicts, re-encoding only rows that are new objects since the last call
    (the phase model hands out a new dict only for a row that changed)."""

    def __init__(self) -> None:
        self._rows: list[Mapping[str, object]] = []
        self._texts: list[str] = []

    def update(self, rows: Sequence[Mapping[str, object]]) -> list[str]:
        """Take the current rows; return the texts of the rows that are new or changed since the last call."""
        known, texts = self._rows, self._texts
        del known[len(rows) :], texts[len(rows) :]
        changed: list[str] = []
        for i, row in enumerate(rows):
            if i < len(known):
                if known[i] is row:
                    continue
                known[i], texts[i] = row, json.dumps(row)
            else:
                known.append(row)
                texts.append(json.dumps(row))
            changed.append(texts[i])
        return changed

    def text(self) -> str:
        """The whole list as one JSON text."""
        return "[" + ",".join(self._texts) + "]"

    def encode(self, rows: Sequence[Mapping[str, object]]) -> str:
        """The whole list of ``rows`` as one JSON text."""
        self.update(rows)
        return self.text()


_MISSING = object()
