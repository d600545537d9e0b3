"""``MatrixWidget``: a build matrix in Jupyter — one row per build (status, current phase, elapsed, engine, Stop),
rows that expand to the build's full phase tree (the view of ``BuildWidget``), Stop all, and a comparison.

Data flows one way, as in ``BuildWidget``: builds -> one pump thread (the only writer of synced traits, one
message per send, at most one send per ``INTERVAL_S``) -> browser. The builder threads only set an event.
The browser sends ``{"type": "stop", "build": id}``, ``{"type": "stop_all"}`` and ``{"type": "expand",
"build": id, "open": bool}``; an expanded build's traits (those of ``BuildWidget``) travel in ``details_json``.
"""

from __future__ import annotations

import html
import json
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import anywidget
import traitlets

from .._messages import rows_message
from .._snapshot import ListRow, RowsEncoder, snapshot, traits
from .._status import FINAL, IDLE
from .._status import log as _log
from ._table import elapsed, result_row

if TYPE_CHECKING:
    from .._phases import Phase
    from ._matrix import BuildMatrix, Cell

_STATIC = Path(__file__).parent.parent / "static"
INTERVAL_S = 0.125  # at most 8 messages a second to the browser, for the whole matrix


MatrixRow = ListRow  # one row of the matrix view (js/src/matrix reads it)


class PumpState(TypedDict):
    """The whole synced state, before encoding."""

    status: str
    rows: list[MatrixRow]
    expanded: list[int]
    details: dict[str, dict[str, object]]
    comparison_json: str


def build_row(cell: Cell) -> MatrixRow:
    """One row of the matrix view: the build's state and the progress of its innermost running phase."""
    build = cell.build
    phase = build.model.innermost_running() if build.status in ("running", "cancelling") else None
    error = build.error
    return {
        "id": cell.id,
        "model": cell.model,
        "variant": cell.variant,
        "status": build.status,
        "detail": build.waiting_for if build.status == "queued" else build.status_detail,
        "elapsed_s": elapsed(build),
        "engine_size": build.engine_size or 0,
        "error": str(error).splitlines()[0] if error is not None and build.status == "failed" else "",
        "phase": {"name": phase.name, "step": phase.step, "num_steps": phase.num_steps} if phase else None,
        "can_force": build.options.isolation == "process",
        "started": build.started_building,
    }


class MatrixPump:
    """Sends the changed parts of the matrix's state to ``send`` from one thread, at most every ``interval`` s.

    A change of elapsed time alone is not sent (the browser ticks it); phase starts and ends, a build's start
    and end, Stop and expand requests wake it early. It lives as long as the widget: expanding a finished build
    still needs a send."""

    def __init__(
        self, matrix: BuildMatrix, send: Callable[[dict[str, object]], None], interval: float = INTERVAL_S
    ) -> None:
        self.matrix = matrix
        self.send = send
        self.interval = interval
        self.expanded: list[int] = []
        self.sends = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._last: dict[str, object] = {}
        self._compared: dict[str, object] = {}  # what was sent, without the elapsed times
        self._encoders: dict[int, RowsEncoder] = {}
        self._unsubscribe = [cell.build.model.subscribe(self._on_phase, steps=False) for cell in matrix.cells]
        for cell in matrix.cells:
            cell.build.on_start(lambda _b: self.wake())
            cell.build.add_done_callback(lambda _b: self.wake())
        self._thread = threading.Thread(target=self._loop, name="trt_widget-matrix-pump", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _on_phase(self, _kind: str, _phase: Phase) -> None:  # a phase started or ended: on a builder's thread
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def set_expanded(self, build_id: int, open_: bool) -> None:
        with self._lock:
            if open_ and build_id not in self.expanded:
                self.expanded.append(build_id)
            elif not open_ and build_id in self.expanded:
                self.expanded.remove(build_id)
        self.wake()

    def close(self) -> None:
        self._closed.set()
        self._wake.set()
        for unsubscribe in self._unsubscribe:
            unsubscribe()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _live(self) -> bool:
        return any(b.status not in FINAL and b.status != IDLE for b in self.matrix.builds)

    def _loop(self) -> None:
        last_send = 0.0
        while not self._closed.is_set():
            self._wake.wait(self.interval if self._live() else None)
            self._wake.clear()
            gap = self.interval - (time.monotonic() - last_send)
            if gap > 0:
                threading.Event().wait(gap)  # the throttle: one send per interval at most
            if self._closed.is_set():
                return
            try:
                if self.flush():
                    last_send = time.monotonic()
            except Exception:  # the pump must outlive any single bad snapshot
                _log.debug("the matrix widget could not send its state", exc_info=True)

    def state(self) -> PumpState:
        """Trait name -> value: the whole synced state now."""
        matrix = self.matrix
        with self._lock:
            expanded = list(self.expanded)
        details: dict[str, dict[str, object]] = {}
        for build_id in expanded:
            if 0 <= build_id < len(matrix.cells):
                build = matrix.cells[build_id].build
                encoder = self._encoders.setdefault(build_id, RowsEncoder())
                phases, state = traits(snapshot(build))
                state["phases_json"] = encoder.encode(phases)
                details[str(build_id)] = state
        done = matrix.done()
        return {
            "status": matrix.status,
            "rows": [build_row(cell) for cell in matrix.cells],
            "expanded": expanded,
            "details": details,
            "comparison_json": json.dumps(matrix.comparison()) if done else "",
        }

    def flush(self) -> bool:
        """Send what changed since the last send; True if something was sent (pump thread, or before it starts)."""
        state = self.state()
        compared: dict[str, object] = {
            "status": state["status"],
            "rows": [{k: v for k, v in row.items() if k != "elapsed_s"} for row in state["rows"]],
            "expanded": state["expanded"],
            "details": {k: {n: v for n, v in d.items() if n != "elapsed_s"} for k, d in state["details"].items()},
            "comparison_json": state["comparison_json"],
        }
        news = {k for k, v in compared.items() if self._compared.get(k, _MISSING) != v}
        if not news:
            return False
        traits: dict[str, object] = {
            "status": state["status"],
            "rows_json": json.dumps(state["rows"]),
            "expanded": state["expanded"],
            "details_json": json.dumps(state["details"]),
            "comparison_json": state["comparison_json"],
        }
        changed = {k: v for k, v in traits.items() if self._last.get(k, _MISSING) != v}
        self.send(changed)
        self.sends += 1
        self._last.update(changed)
        self._compared.update({k: compared[k] for k in news})
        return True


class MatrixWidget(anywidget.AnyWidget):
    """The widget of a :class:`~trt_widget.matrix.BuildMatrix` (``matrix.widget``; shown when the matrix is the
    last expression of a cell)."""

    _esm = _STATIC / "matrix.js"
    _css = _STATIC / "matrix.css"

    status = traitlets.Unicode("idle").tag(sync=True)
    rows_json = traitlets.Unicode("[]").tag(sync=True)  # one row per build (see build_row)
    expanded: traitlets.List[int] = traitlets.List().tag(sync=True)  # build ids whose phase tree is shown
    details_json = traitlets.Unicode("{}").tag(sync=True)  # build id -> that build's BuildWidget traits
    comparison_json = traitlets.Unicode("").tag(sync=True)  # once every build ended: see BuildMatrix.comparison

    def __init__(self, matrix: BuildMatrix) -> None:
        super().__init__()
        self.matrix = matrix
        self._display_id: str | None = None
        self._pump = MatrixPump(matrix, self._apply)
        self._pump.flush()  # the initial state, written before the pump thread exists
        self.on_msg(self._on_custom_msg)
        self._pump.start()

    def _apply(self, changed: dict[str, object]) -> None:
        with self.hold_sync():
            for name, value in changed.items():
                setattr(self, name, value)

    def _on_custom_msg(self, _widget: object, content: object, _buffers: object) -> None:
        message = rows_message(content, len(self.matrix.cells))
        if message is None:
            return
        if message["type"] == "stop_all":
            self.matrix.stop()
        elif message["type"] == "stop":
            self.matrix.cells[message["build"]].build.stop()
        elif message["type"] == "expand":
            self._pump.set_expanded(message["build"], message["open"])
            return
        self._pump.wake()

    def expand(self, build_id: int, open_: bool = True) -> None:
        """Show (or hide) build ``build_id``'s phase tree, as a click on its row does."""
        self._pump.set_expanded(build_id, open_)

    @property
    def rows(self) -> list[MatrixRow]:
        return list(json.loads(self.rows_json))

    def close(self) -> None:
        self._pump.close()
        super().close()

    # -- static output for front ends without the widget's JavaScript ------------------------------------
    def _ipython_display_(self) -> None:
        """Display under an IPython display id, replaced by the final state when the last build ends, so a saved
        notebook holds the final results table for readers without the widget's JavaScript."""
        from IPython.display import display

        if self._display_id is None:
            self._display_id = f"trt_widget-matrix-{uuid.uuid4().hex}"
            for build in self.matrix.builds:
                build.add_done_callback(self._on_build_end)
        data, metadata = self._repr_mimebundle_()
        display(data, metadata=metadata, raw=True, display_id=self._display_id)

    def _on_build_end(self, _build: object) -> None:
        """On a builder thread: once every build ended, update the displayed outputs (never raises)."""
        if not self.matrix.done():
            return
        try:
            from IPython.display import update_display

            data, metadata = self._repr_mimebundle_()
            update_display(data, metadata=metadata, raw=True, display_id=self._display_id)
        except Exception:
            _log.debug("could not update the displayed output of the matrix", exc_info=True)

    def _repr_mimebundle_(self, **kwargs: dict[str, object]) -> tuple[dict[str, object], dict[str, object]]:
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        return {**data, "text/plain": self.matrix.table_text(), "text/html": self.to_html()}, dict(metadata or {})

    def to_html(self) -> str:
        """The results as an HTML table (inline styles, every value escaped)."""
        from .._format import fmt_bytes, fmt_s, keep_units

        head = ["model", "variant", "status", "build time", "engine", "top phases / error"]
        cells = "".join(f"<th style='text-align:left;padding:2px 8px'>{h}</th>" for h in head)
        lines = [f"<table style='border-collapse:collapse'><tr>{cells}</tr>"]
        for cell in self.matrix.cells:
            row = result_row(cell)
            top = row["error"] or ", ".join(f"{n} {keep_units(fmt_s(s))}" for n, s in row["top_phases"].items())
            values = [
                row["model"],
                row["variant"],
                row["status"],
                keep_units(fmt_s(row["build_s"])) if row["build_s"] is not None else "",
                keep_units(fmt_bytes(row["engine_bytes"])) if row["engine_bytes"] else "",
                top,
            ]
            tds = "".join(f"<td style='padding:2px 8px'>{html.escape(str(v))}</td>" for v in values)
            lines.append(f"<tr>{tds}</tr>")
        lines.append("</table>")
        return "".join(lines)


_MISSING = object()
