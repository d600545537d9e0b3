"""``WatchWidget``: the builds of a watch as a list, drawn by the matrix view (one row per build, rows that
expand to the build's phase tree, Stop per build and Stop all), with a title and a line saying which Stop
applies. One pump thread is the only writer of synced traits, as in the other widgets; builders only wake it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import anywidget
import traitlets

from .._format import plain_output_line
from .._messages import rows_message
from .._snapshot import ListRow, RowsEncoder, snapshot, traits
from .._status import FINAL, IDLE, LIVE, log
from .._view import Attribute, Delegate
from ._run import CommandRun
from ._watch import Watch, WatchedCall, check_isolation, check_settings

if TYPE_CHECKING:
    from .._build import Build
    from ._build import WatchedBuild
    from ._run import RelayedBuild


WatchRow = ListRow  # one row of the list: the matrix view's row shape


class WatchState(TypedDict):
    """The synced traits, as :meth:`WatchWidget.state` computes them."""

    status: str
    rows_json: str
    expanded: list[int]
    details_json: str
    title: str
    note: str
    stop_buttons: bool
    output: str


OUTPUT_LINES = 200  # the command's output the widget keeps: its last lines
OUTPUT_LINE_CHARS = 1000  # a longer line is cut (with "…"): the tail stays a few hundred KiB at most


class OutputTail:
    """The last lines of a command's stdout and stderr, as the widget shows them: a reader thread adds, the pump
    reads. Colours are dropped, tabs expanded and every other control character escaped; a line rewritten with
    ``\\r`` (a progress bar) keeps its last state."""

    def __init__(self, lines: int = OUTPUT_LINES) -> None:
        self._lines: deque[str] = deque(maxlen=lines)
        self._lock = threading.Lock()
        self.dropped = 0  # lines no longer kept
        self.on_change: Callable[[], None] | None = None

    def add(self, line: bytes) -> None:
        text = plain_output_line(line)
        if len(text) > OUTPUT_LINE_CHARS:
            text = text[:OUTPUT_LINE_CHARS] + "…"
        with self._lock:
            if len(self._lines) == self._lines.maxlen:
                self.dropped += 1
            self._lines.append(text)
        if self.on_change is not None:
            self.on_change()

    def text(self) -> str:
        with self._lock:
            head = [f"… {self.dropped} earlier line{'' if self.dropped == 1 else 's'} not kept"] if self.dropped else []
            return "\n".join([*head, *self._lines])


_STATIC = Path(__file__).parent.parent / "static"
INTERVAL_S = 0.125

STOP_BUTTON = "Stop: graceful — the running build ends at its next step boundary, and later builds at their first."
STOP_INTERRUPT = (
    "Stop: interrupt the kernel (■ or Ctrl-C) — the running build is cancelled at its next step boundary and "
    "the block raises KeyboardInterrupt. The buttons cannot work while the cell runs."
)


def watch_row(index: int, build: WatchedBuild | RelayedBuild) -> WatchRow:
    """One row of the list (the matrix view's row shape)."""
    phase = build.model.innermost_running() if build.status in LIVE else None
    error = build.error
    return {
        "id": index,
        "model": build.source.label,
        "variant": build.method,
        "status": build.status,
        "detail": build.status_detail,
        "elapsed_s": round(build.elapsed_s, 3),
        "engine_size": build.engine_size or 0,
        "error": str(error).splitlines()[0] if error is not None and build.status == "failed" else "",
        "phase": {"name": phase.name, "step": phase.step, "num_steps": phase.num_steps} if phase else None,
        "can_force": False,
        "started": True,  # a watched build runs in the user's code: it never waits in a queue of ours
    }


def _builds(watch: Watch | CommandRun) -> list[WatchedBuild] | list[RelayedBuild]:
    return watch.builds


def _future(call: WatchedCall[object] | CommandRun) -> Future[object] | Future[int]:
    """The function's (or command's) ``concurrent.futures.Future``: ``as_completed``, ``asyncio.wrap_future``."""
    return call.future


class WatchWidget(anywidget.AnyWidget):
    """The live list of a watch's builds. ``BuildWidget.watch(fn, ...)`` gives one around a
    :class:`WatchedCall` (``result()``, ``await``, ``timings()``, ``stop()`` delegate to it);
    ``trt_widget.watch()`` shows one in a notebook for the block."""

    _esm = _STATIC / "matrix.js"
    _css = _STATIC / "matrix.css"

    status = traitlets.Unicode("idle").tag(sync=True)
    rows_json = traitlets.Unicode("[]").tag(sync=True)
    expanded: traitlets.List[int] = traitlets.List().tag(sync=True)
    details_json = traitlets.Unicode("{}").tag(sync=True)
    comparison_json = traitlets.Unicode("").tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)  # shown instead of "Build matrix — N builds"
    note = traitlets.Unicode("").tag(sync=True)  # which Stop applies; the stop notice; how the function ended
    stop_buttons = traitlets.Bool(True).tag(sync=True)  # False: the cell is busy, only the interrupt works
    variant_label = traitlets.Unicode("call").tag(sync=True)  # the column holds the TensorRT method called
    # the command's own stdout and stderr (``BuildWidget.run``), its last lines: shown in the widget, as a thread's
    # writes to sys.stdout land in whichever cell runs when they arrive, not in the cell that started the command
    output = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        watch: Watch | CommandRun,
        *,
        call: WatchedCall[object] | CommandRun | None = None,
        label: str = "",
        output: OutputTail | None = None,
    ) -> None:
        super().__init__()
        self.watch = watch
        self.call = call
        self.label = label
        self._output = output
        self.stop_buttons = call is not None
        self._notice = ""
        self._stopping: list[WatchedBuild | RelayedBuild] = []  # the builds the stop notice waits for
        self._lock = threading.Lock()
        self._expanded: list[int] = []
        self._encoders: dict[int, RowsEncoder] = {}
        self._last: dict[str, object] = {}
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._remove = watch.on_build(self._on_build)
        for build in list(watch.builds):
            self._on_build(build)
        if call is not None:
            call.add_done_callback(lambda _c: self._wake.set())
        self.on_msg(self._on_custom_msg)
        if output is not None:
            output.on_change = self._wake.set
        self.flush()
        self._thread = threading.Thread(target=self._loop, name="trt_widget-watch-pump", daemon=True)
        self._thread.start()

    # -- builds -> traits (the pump thread) ------------------------------------------------------------
    def _on_build(self, build: Build) -> None:
        build.model.subscribe(lambda _k, _p: self._wake.set(), steps=False)
        build.on_start(lambda _b: self._wake.set())
        build.add_done_callback(lambda _b: self._wake.set())
        self._wake.set()

    def _live(self) -> bool:
        return (self.call is not None and not self.call.done()) or any(
            b.status not in FINAL and b.status != IDLE for b in self.watch.builds
        )

    def _loop(self) -> None:
        last = 0.0
        while not self._closed.is_set():
            self._wake.wait(INTERVAL_S if self._live() else 1.0)
            self._wake.clear()
            gap = INTERVAL_S - (time.monotonic() - last)
            if gap > 0:
                threading.Event().wait(gap)
            if self._closed.is_set():
                return
            try:
                if self.flush():
                    last = time.monotonic()
            except Exception:
                log.debug("the watch widget could not send its state", exc_info=True)

    def state(self) -> WatchState:
        builds: list[WatchedBuild | RelayedBuild] = list(self.watch.builds)
        with self._lock:
            expanded = list(self._expanded)
        details: dict[str, object] = {}
        for i in expanded:
            if 0 <= i < len(builds):
                phases, state = traits(snapshot(builds[i]))
                state["phases_json"] = self._encoders.setdefault(i, RowsEncoder()).encode(phases)
                details[str(i)] = state
        rows = [watch_row(i, b) for i, b in enumerate(builds)]
        live = self._live()
        status = "running" if live else (rows[-1]["status"] if rows else "succeeded")
        return {
            "status": status,
            "rows_json": json.dumps(rows),
            "expanded": expanded,
            "details_json": json.dumps(details),
            "title": f"Watching {self.label or 'builds'} — {len(rows)} build{'' if len(rows) == 1 else 's'}",
            "note": self._note_text(live),
            "stop_buttons": self.call is not None and live,
            "output": self._output.text() if self._output is not None else "",
        }

    def _note_text(self, live: bool) -> str:
        # the stop notice says what Stop waits for: gone once those builds ended (their rows say how), and said
        # once: not for a build shown expanded (its own header says it), nor beside what a Stop would do
        builds = list(self.watch.builds)
        with self._lock:
            shown = [builds[i] for i in self._expanded if 0 <= i < len(builds)]
        waiting = any(b.status in LIVE and b not in shown for b in self._stopping) or not self._stopping
        notice = self._notice if waiting else ""
        parts = [notice] if notice and live else []
        if live and not parts and not any(b.status == "cancelling" for b in builds):
            parts.append(STOP_BUTTON if self.call is not None else STOP_INTERRUPT)
        elif self.call is not None and self.call.done():
            exc = self.call.future.exception()
            if isinstance(self.call, CommandRun) and exc is None and not hasattr(self.call, "fn"):
                parts.append(self.call.ended_words())
            elif exc is None:
                parts.append("the function returned")
            else:
                parts.append(f"the function raised {type(exc).__name__}: {exc}")
        return " · ".join(parts)

    def flush(self) -> bool:
        state = self.state()
        compared = {**state, "rows_json": _without_elapsed(state["rows_json"])}
        changed = {k: v for k, v in state.items() if self._last.get(k, _MISSING) != compared[k]}
        if not changed:
            return False
        with self.hold_sync():
            for name, value in changed.items():
                setattr(self, name, value)
        self._last.update({k: compared[k] for k in changed})
        return True

    # -- browser -> builds -----------------------------------------------------------------------------
    def _on_custom_msg(self, _widget: object, content: object, _buffers: object) -> None:
        builds: list[WatchedBuild | RelayedBuild] = list(self.watch.builds)
        message = rows_message(content, len(builds))
        if message is None:
            return
        if message["type"] == "stop_all":
            self.stop("stopped by user (Stop all)")
        elif message["type"] == "stop":
            from ._watch import stop_notice

            if isinstance(self.watch, CommandRun):  # a build in the command's process: stop the command
                self.stop("stopped by user (Stop)")
            else:
                build = builds[message["build"]]
                running = [build] if build.status in LIVE else []
                build.stop("stopped by user (Stop)")
                self._notice, self._stopping = stop_notice(running), running
        elif message["type"] == "expand":
            self.expand(message["build"], message["open"])
        self._wake.set()

    def expand(self, index: int, open_: bool = True) -> None:
        """Show (or hide) build ``index``'s phase tree, as a click on its row does."""
        with self._lock:
            if open_ and index not in self._expanded:
                self._expanded.append(index)
            elif not open_ and index in self._expanded:
                self._expanded.remove(index)
        self._wake.set()

    def stop(self, reason: str = "stopped by user") -> str:
        """Stop all (graceful): see :meth:`Watch.stop`; returns the notice, also shown in the widget."""
        stopping = [b for b in self.watch.builds if b.status in LIVE]
        self._notice, self._stopping = self.watch.stop(reason), stopping
        self._wake.set()
        return self._notice

    # -- the function's Future: a view of the WatchedCall (or command run), as BuildWidget is of its Build -------
    @property
    def _the_call(self) -> WatchedCall[object] | CommandRun:
        if self.call is None:
            raise RuntimeError("this widget shows a `with trt_widget.watch()` block: it has no function result")
        return self.call

    builds = Attribute(_builds, "builds", via="watch")
    timings = Delegate(Watch.timings, via="watch")
    result = Delegate(WatchedCall[object].result, via="_the_call")
    exception = Delegate(WatchedCall[object].exception, via="_the_call")
    done = Delegate(WatchedCall[object].done, via="_the_call")
    __await__: Delegate[WatchedCall[object], [], Generator[object, None, object]] = Delegate(
        WatchedCall.__await__, via="_the_call"
    )
    future = Attribute(_future, "future", via="_the_call")

    def close(self) -> None:
        self._closed.set()
        self._wake.set()
        self._remove()
        super().close()

    def __repr__(self) -> str:
        return f"<WatchWidget {self.label!r} builds={len(self.watch.builds)}>"


def _without_elapsed(rows_json: str) -> str:
    """Elapsed time alone is no reason to send: the browser ticks it."""
    rows = json.loads(rows_json)
    for row in rows:
        row.pop("elapsed_s", None)
    return json.dumps(rows)


_MISSING = object()


def watch_widget(
    fn: Callable[..., object],
    /,
    *args: object,
    isolation: str = "thread",
    watch_settings: Mapping[str, object] | None = None,
    **kwargs: object,
) -> WatchWidget:
    """``BuildWidget.watch(fn, *args, **kwargs)``: run ``fn`` on a background thread (or, with
    ``isolation="process"``, in a fresh process Stop can end), shown as a live list; ``watch_settings``: the
    watch's options, as :func:`~trt_widget.watch.watch_call` takes them."""
    check_isolation(isolation, watch_settings)
    label = f"{getattr(fn, '__qualname__', 'a function')}()"
    if isolation == "process":
        from ._run import ProcessCall

        output = OutputTail()  # what fn's process prints: in the widget, as for BuildWidget.run
        run = ProcessCall(fn, args, kwargs, on_output=output.add, on_errors=output.add)
        widget = WatchWidget(run, call=run, label=label, output=output)
        run.start()
        return widget
    call = WatchedCall(fn, args, kwargs, **check_settings(watch_settings))
    widget = WatchWidget(call.watch, call=call, label=label)
    call.start()
    return widget


def run_widget(command: Sequence[str], *, force_after: float | None = 0.5) -> WatchWidget:
    """``BuildWidget.run([...])``: run a command with its builds watched, shown as a live list; Stop cancels at
    the next step boundary and ends the process ``force_after`` s later (it is a process: within a second)."""
    from ._run import CommandRun

    output = OutputTail()
    run = CommandRun(command, force_after=force_after, on_output=output.add, on_errors=output.add)
    widget = WatchWidget(run, call=run, label=" ".join(run.command)[:80], output=output)
    run.start()
    return widget
