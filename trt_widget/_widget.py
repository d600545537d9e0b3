"""``BuildWidget``: the anywidget front end of a :class:`Build` — live phase tree, Stop, final timings.

A view of one build (``widget.build``): Build's methods reach it through :mod:`._view` (none is copied here);
the widget adds the display (:mod:`._display`) and what a notebook needs. Data flows one way: builder thread ->
phase model -> snapshot pump (the only trait writer) -> browser. Stop flows back as one custom message
``{"type": "stop"}`` -> ``Build.stop()`` -> the cancel event.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import anywidget
import traitlets

from ._build import Build, BuildArgs
from ._display import WIDGET_VIEW, NotebookDisplay, _in_notebook, _in_repl
from ._engine import ModelLike
from ._files import check_output, utf8, write_output
from ._format import fmt_s
from ._messages import StopOutcomeMessage, build_message
from ._snapshot import SnapshotPump, snapshot
from ._status import CANCELLED, CANCELLING, SUCCEEDED, log
from ._view import Attribute, Chained, Delegate
from .runners import Recording

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._tensorrt_log import LogRecord
    from ._terminal import TerminalView
    from .watch import WatchWidget

__all__ = ["WIDGET_VIEW", "BuildWidget"]

_STATIC = Path(__file__).parent / "static"


class BuildWidget(NotebookDisplay, anywidget.AnyWidget):
    """A TensorRT engine build you can watch and stop: ``BuildWidget("model.onnx").start()``.

    Takes the same arguments as :class:`Build`. ``start()`` returns the widget at once, so as the last
    expression of a cell it displays itself while the build runs on a background thread. Build's methods work on
    the widget (``result()``, ``stop()``, ``save()``, ``await widget`` ...); a wait also shows the final state. In a
    notebook, ``await widget.wait_async()`` waits while Stop clicks get through, and returns the status.
    """

    _esm = _STATIC / "widget.js"
    _css = _STATIC / "widget.css"

    status = traitlets.Unicode("idle").tag(sync=True)
    status_detail = traitlets.Unicode("").tag(sync=True)
    elapsed_s = traitlets.Float(0.0).tag(sync=True)
    started = traitlets.Bool(False).tag(sync=True)  # False: queued, or stopped there (it never built)
    # the phase rows: the whole list as one JSON text (first, at the end, and when a view asks), then deltas
    phases_json = traitlets.Unicode("[]").tag(sync=True)
    phases_seq = traitlets.Int(0).tag(sync=True)  # the last delta phases_json includes
    phases_delta = traitlets.Unicode("").tag(sync=True)  # {"seq": n, "rows": [rows new or changed since n-1]}
    engine_size = traitlets.Int(0).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    logs: traitlets.List[LogRecord] = traitlets.List().tag(sync=True)
    cancel = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    can_force = traitlets.Bool(False).tag(sync=True)
    eta = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    history_delta = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    history_basis = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    resources = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    activity = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)  # last_callback_s while live
    engine_json = traitlets.Unicode("").tag(sync=True)  # EngineReport.to_dict() as JSON text once the build succeeded

    # -- Build's API, on its view: the build's own methods; a wait then shows the final state ---------------
    start = Chained(Build.start, then="_started")
    stop = Delegate(Build.stop, then="_stopped")
    wait = Delegate(Build.wait, before="_following", then="_shown")
    wait_async = Delegate(Build.wait_async, then="_shown")
    __await__ = Delegate(Build.__await__, then="_shown")
    result = Delegate(Build.result, before="_following", then="_shown")
    exception = Delegate(Build.exception, before="_following", then="_shown")
    done = Delegate(Build.done)
    running = Delegate(Build.running)
    cancelled = Delegate(Build.cancelled)
    add_done_callback = Delegate(Build.add_done_callback)
    subscribe = Delegate(Build.subscribe)
    save = Delegate(Build.save)
    timings = Delegate(Build.timings)
    timings_df = Delegate(Build.timings_df)
    to_html = Delegate(Build.to_html)
    to_trace = Delegate(Build.to_trace)
    engine = Attribute(lambda build: build.engine, "engine")
    future = Attribute(lambda build: build.future, "future")
    problems = Attribute(lambda build: build.problems, "problems")
    # what a newcomer reached for on the widget as on a Build (an AttributeError before)
    engine_report = Attribute(lambda build: build.engine_report, "engine_report")
    engine_report_reason = Attribute(lambda build: build.engine_report_reason, "engine_report_reason")
    reused_from = Attribute(lambda build: build.reused_from, "reused_from")
    cold_builder = Attribute(lambda build: build.cold_builder, "cold_builder")

    def __init__(
        self, model: ModelLike | Build | None, *, build: Build | None = None, **kwargs: Unpack[BuildArgs]
    ) -> None:
        """The same arguments as :class:`Build`; or ``build=`` (or as ``model``) an existing, not yet started Build."""
        if build is None and isinstance(model, Build):  # e.g. a trt_widget.serve.RemoteBuild
            build = model
        if build is None:
            if model is None:
                raise TypeError("BuildWidget needs a model (or build=, a Build not yet started)")
            build = Build(cast("ModelLike", model), **kwargs)
        super().__init__()
        self.build = build
        self.stop_outcome = ""  # what came of a Stop that reached the kernel after the build ended ("" if none did)
        self._follower: TerminalView | None = None  # at an interpreter's prompt: the live tree while a wait blocks
        self._pump = SnapshotPump(build, self._apply)
        self._pump.flush()  # initial state, written before the pump thread exists
        self.on_msg(self._on_custom_msg)
        self._init_display()
        build.add_done_callback(self._on_build_end)

    @classmethod
    def from_events(cls, recording: Recording, *, speed: float | None = None) -> BuildWidget:
        """A widget replaying a recorded build (see :meth:`Build.from_events`); ``start()`` it to play."""
        return cls(None, build=Build.from_events(recording, speed=speed))

    @staticmethod
    def watch(
        fn: Callable[..., object],
        /,
        *args: object,
        isolation: str = "thread",
        watch_settings: Mapping[str, object] | None = None,
        **kwargs: object,
    ) -> WatchWidget:
        """Run ``fn(*args, **kwargs)`` on a background thread and show every TensorRT build inside it as a live
        list (a :class:`trt_widget.watch.WatchWidget`: ``result()``, ``await``, ``timings()``, ``stop()``).
        Two keywords are the watch's, not ``fn``'s: ``isolation="process"`` and ``watch_settings={...}`` (events,
        history, budget, resources of each watched build; docs/watch.md)."""
        from .watch import watch_widget

        return watch_widget(fn, *args, isolation=isolation, watch_settings=watch_settings, **kwargs)

    @staticmethod
    def run(command: Sequence[str], *, force_after: float | None = 0.5) -> WatchWidget:
        """Run ``command`` (e.g. ``["polygraphy", "convert", "m.onnx", "-o", "m.engine"]``) with its TensorRT builds
        watched, as a live list; Stop ends it within a second (a process). ``result()`` is its exit code."""
        from .watch import run_widget

        return run_widget(command, force_after=force_after)

    # -- what the delegated calls do to the view ----------------------------------------------------------
    def _started(self) -> None:
        self._pump.flush()  # "running" from the first moment; the pump thread, the only writer after this, starts next
        self._pump.start()
        if _in_notebook():
            return
        if _in_repl():  # the prompt owns the terminal: no redrawing from a background thread; a wait follows it
            print(
                f"Building {self.build.source.label} in the background: .wait() or .result() on this widget "
                "follows it here; .status says where it is",
                file=sys.stderr,
            )
            return
        try:
            from ._terminal import render_in_terminal
        except ImportError:
            pass
        else:
            render_in_terminal(self.build)

    def _following(self) -> None:
        """Before a blocking wait at an interpreter's prompt: the terminal is the build's until the wait returns."""
        if self._follower is not None or self.build.done() or _in_notebook() or not _in_repl():
            return
        if self.build.status == "idle":
            return  # never started: the wait says so
        try:
            from ._terminal import render_in_terminal
        except ImportError:
            return
        self._follower = render_in_terminal(self.build)

    def _stopped(self) -> None:
        self._pump.wake(urgent=True)  # "cancelling" now, not at the next throttled send

    def _shown(self) -> None:
        """After a wait: once the build ended, the widget shows its final state (and the cell's output too). A
        blocking wait holds Stop clicks in a notebook: ``await widget.wait_async()`` lets them through."""
        follower, self._follower = self._follower, None
        # at a prompt: the final tree and summary, or the tree as it is, then the prompt
        if follower is not None and not (self.build.done() and follower.join(5)):
            label = self.build.source.label
            follower.leave(
                f"{label} is stopping (asked by the interrupted wait; .wait() follows it to its end)"
                if self.build.status == CANCELLING  # a Ctrl-C in the wait asked it to stop: it does not go on
                else f"{label} goes on building in the background (the wait ended, not the build; .stop() stops it)"
            )
        if self.build.done():
            self._pump.join(timeout=5)
            self._resync_display()

    # -- the one writer of synced traits ---------------------------------------------------------------
    def _apply(self, changed: dict[str, object]) -> None:
        with self.hold_sync():
            for name, value in changed.items():
                setattr(self, name, value)

    def _on_custom_msg(self, _widget: object, content: object, _buffers: object) -> None:
        message = build_message(content)
        if message is None:
            return
        if message["type"] == "stop":
            if not self.stop() and self.build.done():
                self._answer_late_stop()
        elif message["type"] == "sync":  # a view missed deltas or is new
            self._pump.request_full()
        elif message["type"] == "view":  # a front end rendered a view
            self._view_rendered()

    def _answer_late_stop(self) -> None:
        """A Stop click the kernel read only after the build ended (a blocking ``wait()`` holds clicks until the
        cell ends): say so in the view and on the widget, rather than drop it in silence. A build that ended
        cancelled (a kernel interrupt, another Stop) did what the click asked: nothing to answer."""
        build = self.build
        if build.status == CANCELLED:
            return
        how = "succeeded in" if build.status == SUCCEEDED else "failed after"
        kept = "; the engine is kept" if build.status == SUCCEEDED else ""
        self.stop_outcome = (
            f"Stop arrived after the build had finished ({how} {fmt_s(build.elapsed_s)}): nothing was stopped{kept}. "
            "A blocking wait() holds Stop clicks until the cell ends; await widget.wait_async() lets them through."
        )
        log.info("%s", self.stop_outcome)
        answer: StopOutcomeMessage = {"type": "stop_outcome", "text": self.stop_outcome}
        self.send(answer)

    @property
    def phases(self) -> list[dict[str, object]]:
        """The phase rows the front end shows (id, name, parent, depth, step, num_steps, start_s, ...)."""
        return [dict(row) for row in self.build.model.rows()]

    @property
    def build_error(self) -> Exception | None:
        """The build's exception (``error`` is the synced message text)."""
        return self.build.error

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """Final state and timings as JSON text; also written to ``path`` when given (atomically, never onto the
        model: the one output-path policy, ``_files.check_output``)."""
        if path is not None:
            check_output(path, "path", self.build)
        text = json.dumps({**snapshot(self.build), "timings": self.timings()}, indent=1)
        if path is not None:
            write_output(path, utf8(text), "path", self.build)
        return text

    def __repr__(self) -> str:
        return f"BuildWidget({self.build.source.label!r})"
