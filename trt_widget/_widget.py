"""``BuildWidget``: the anywidget front end of a :class:`Build` — live phase tree, Stop, final timings.

Data flows one way: builder thread -> phase model -> snapshot pump (the only trait writer) -> browser.
Stop flows back as one custom message ``{"type": "stop"}`` -> ``Build.stop()`` -> the cancel event.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anywidget
import traitlets

from ._build import Build, BuildArgs
from ._engine import ModelLike
from ._snapshot import SnapshotPump, snapshot
from ._status import log as _log
from .runners import Recording

if TYPE_CHECKING:
    from typing_extensions import Unpack

_STATIC = Path(__file__).parent / "static"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class BuildWidget(anywidget.AnyWidget):
    """A TensorRT engine build you can watch and stop: ``BuildWidget("model.onnx").start()``.

    Takes the same arguments as :class:`Build`. ``start()`` returns the widget at once, so as the last
    expression of a cell it displays itself while the build runs on a background thread.
    """

    _esm = _STATIC / "widget.js"
    _css = _STATIC / "widget.css"

    status = traitlets.Unicode("idle").tag(sync=True)
    status_detail = traitlets.Unicode("").tag(sync=True)
    elapsed_s = traitlets.Float(0.0).tag(sync=True)
    # the phase rows: the whole list as one JSON text (first, at the end, and when a view asks), then deltas
    phases_json = traitlets.Unicode("[]").tag(sync=True)
    phases_seq = traitlets.Int(0).tag(sync=True)  # the last delta phases_json includes
    phases_delta = traitlets.Unicode("").tag(sync=True)  # {"seq": n, "rows": [rows new or changed since n-1]}
    engine_size = traitlets.Int(0).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    logs: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    cancel = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    can_force = traitlets.Bool(False).tag(sync=True)
    eta = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    history_delta = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    resources = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    activity = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)  # last_callback_s while live
    engine_json = traitlets.Unicode("").tag(sync=True)  # EngineReport.to_dict() as JSON text once the build succeeded

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
        self._pump = SnapshotPump(build, self._apply)
        self._pump.flush()  # initial state, written before the pump thread exists
        self.on_msg(self._on_custom_msg)
        self._display_id: str | None = None  # IPython display id, once displayed in a kernel
        self._display_parent: Any = None  # the request the last display update was sent with
        # a front end rendered a view of this widget (its JS said so): only then does a final display update keep
        # the widget view; without one (nbclient, nbconvert --execute) the saved output is the static rendering,
        # which readers without the widget's JavaScript (nbconvert's HTML offline, GitHub) show
        self._view_seen = False
        self._view_dropped = False
        build.add_done_callback(self._on_build_end)

    @classmethod
    def from_events(cls, recording: Recording, *, speed: float | None = None) -> BuildWidget:
        """A widget replaying a recorded build (see :meth:`Build.from_events`); ``start()`` it to play."""
        return cls(None, build=Build.from_events(recording, speed=speed))

    @staticmethod
    def watch(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` on a background thread and show every TensorRT build inside it as a live
        list (a :class:`trt_widget.watch.WatchWidget`: ``result()``, ``await``, ``timings()``, ``stop()``).
        Two keywords are the watch's, not ``fn``'s: ``isolation="process"`` and ``watch_settings={...}`` (events,
        history, budget, resources of each watched build; docs/watch.md)."""
        from .watch import watch_widget

        return watch_widget(fn, *args, **kwargs)

    @staticmethod
    def run(command: Sequence[str], *, force_after: float | None = 0.5) -> Any:
        """Run ``command`` (e.g. ``["polygraphy", "convert", "m.onnx", "-o", "m.engine"]``) with its TensorRT builds
        watched, as a live list; Stop ends it within a second (a process). ``result()`` is its exit code."""
        from .watch import run_widget

        return run_widget(command, force_after=force_after)

    # -- the one writer of synced traits ---------------------------------------------------------------
    def _apply(self, changed: dict[str, Any]) -> None:
        with self.hold_sync():
            for name, value in changed.items():
                setattr(self, name, value)

    def _on_custom_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "stop":
            self.stop()
        elif isinstance(content, dict) and content.get("type") == "sync":  # a view missed deltas or is new
            self._pump.request_full()
        elif isinstance(content, dict) and content.get("type") == "view":  # a front end rendered a view
            self._view_seen = True
            if self._view_dropped:  # its message came after the final update (a cell was running): the view again
                self._refresh_display()

    @property
    def phases(self) -> list[dict[str, Any]]:
        """The phase rows the front end shows (id, name, parent, depth, step, num_steps, start_s, ...)."""
        return [dict(row) for row in self.build.model.rows()]

    # -- the Build API ---------------------------------------------------------------------------------
    def start(self) -> BuildWidget:
        """Start the build in the background and return the widget at once (display it to watch)."""
        self.build.start()
        self._pump.flush()  # "running" from the first moment; the pump thread, the only writer after this, starts next
        self._pump.start()
        if not _in_notebook():
            try:
                from ._terminal import render_in_terminal
            except ImportError:
                pass
            else:
                render_in_terminal(self.build)
        return self

    def stop(self) -> bool:
        """Stop the build: gracefully at the next step boundary, in a builder process terminated after 0.1 s."""
        asked = self.build.stop()
        self._pump.wake(urgent=True)
        return asked

    def wait(self, timeout: float | None = None) -> str:
        """Block until the build ends and the widget shows its final state; returns the status.

        In a notebook, Stop clicks are not processed while a cell blocks here; use ``await widget``.
        """
        status = self.build.wait(timeout)
        if self.build.done():
            self._pump.join(timeout=5)
            self._resync_display()
        return status

    async def wait_async(self, poll: float = 0.05) -> str:
        """Await the end of the build; the kernel keeps handling widget messages (Stop works)."""
        status = await self.build.wait_async(poll)
        self._pump.join(timeout=5)
        self._resync_display()
        return status

    def __await__(self) -> Generator[Any, None, str]:
        return self.wait_async().__await__()

    def result(self, timeout: float | None = None) -> bytes:
        """The engine bytes, or raise the build's error (BuildCancelled when cancelled)."""
        return self.build.result(timeout)

    def save(self, path: str) -> str:
        """Write the engine to ``path`` atomically (with TensorRT for RTX an RTX engine: see :meth:`Build.save`)."""
        return self.build.save(path)

    @property
    def engine(self) -> bytes | None:
        return self.build.engine

    @property
    def build_error(self) -> Exception | None:
        """The build's exception (``error`` is the synced message text)."""
        return self.build.error

    def timings(self) -> list[dict[str, Any]]:
        """Per phase instance: id, name, parent, depth, start_s, end_s, duration_s, step, num_steps, status."""
        return self.build.timings()

    def timings_df(self) -> Any:
        """The timings as a pandas DataFrame indexed by phase id (needs pandas): :meth:`Build.timings_df`."""
        return self.build.timings_df()

    def to_json(self, path: str | None = None) -> str:
        """Final state and timings as JSON text; also written to ``path`` when given."""
        text = json.dumps({**snapshot(self.build), "timings": self.timings()}, indent=1)
        if path is not None:
            Path(path).write_text(text)
        return text

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """A standalone HTML report of the build (no script, no network); also written to ``path`` when given."""
        from .report import to_html

        return to_html(self.build, path)

    def to_trace(self, path: str | os.PathLike[str] | None = None) -> str:
        """The build as Chrome trace-event JSON (Perfetto, chrome://tracing); also written to ``path`` when given."""
        from .report.trace import to_trace

        return to_trace(self.build, path)

    # -- static output: what front ends without the widget's JavaScript show ----------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget view plus ``text/plain``, ``text/markdown`` and ``text/html`` renderings of the current state
        (front ends with the widget show the view; GitHub, nbviewer, nbconvert and the like show the HTML)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        return {**data, **self._static()}, dict(metadata or {})

    def _static(self) -> dict[str, str]:
        from .report import mimebundle

        return mimebundle(self.build, title=repr(self))

    def _bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The output's data; once the build ended, without the widget view when no front end has shown one (in
        nbconvert's HTML a widget view wins over text/html and renders nothing offline: its manager comes from a
        CDN). A view's late message brings the widget view back (``_on_custom_msg``)."""
        render = getattr(self, "_repr_mimebundle_", None)  # ipywidgets sets it to None when the widget is closed
        data, metadata = render() if callable(render) else (self._static(), {})
        self._view_dropped = self.build.done() and not self._view_seen and WIDGET_VIEW in data
        if self._view_dropped:
            data = {k: v for k, v in data.items() if k != WIDGET_VIEW}
            metadata = {k: v for k, v in metadata.items() if k != WIDGET_VIEW}
        return data, metadata

    def _ipython_display_(self) -> None:
        """Display under an IPython display id, so every output of this widget is replaced by the final state
        when the build ends (``_repr_mimebundle_`` alone cannot give an output a display id)."""
        from IPython.display import display

        if not _in_notebook():  # terminal IPython: the terminal tree shows progress; print the result, once
            display({"text/plain": self._static()["text/plain"] if self.build.done() else repr(self)}, raw=True)
            return
        if self._display_id is None:
            self._display_id = f"trt_widget-{uuid.uuid4().hex}"
        ended = self.build.done()
        data, metadata = self._bundle()
        display(data, metadata=metadata, raw=True, display_id=self._display_id)
        if not ended and self.build.done():  # it ended while this output was made: make sure it is final
            self._refresh_display()

    def _on_build_end(self, _build: Any) -> None:
        """A done callback, on the builder thread: ipykernel's IOPub socket is thread-safe, so the update goes out now,
        with the request of the cell running at this moment (or of the last one)."""
        if self._display_id is not None:
            self._refresh_display()

    def _refresh_display(self) -> None:
        """Replace every output of this widget by its current bundle (IPython ``update_display``); never raises."""
        try:
            from IPython import get_ipython
            from IPython.display import update_display

            shell = get_ipython()
            if shell is None:
                return
            data, metadata = self._bundle()
            update_display(data, metadata=metadata, raw=True, display_id=self._display_id)
            self._display_parent = _request_id(shell)
        except Exception:
            _log.debug("could not update the displayed output of %r", self, exc_info=True)

    def _resync_display(self) -> None:
        """After a wait in a cell: resend the final state with this cell's request. Headless runners (nbclient,
        ``nbconvert --execute``) read only the running cell's messages, so what went out between cells is lost."""
        if self._display_id is None or not self.build.done():
            return
        try:
            from IPython import get_ipython

            shell = get_ipython()
            if shell is None:
                return
            if not self._pump.thread.is_alive():
                self.send_state()  # the final widget state, for the notebook's saved widget state
            if _request_id(shell) != self._display_parent:
                self._refresh_display()
        except Exception:
            _log.debug("could not resend the final state of %r", self, exc_info=True)

    def __repr__(self) -> str:
        return f"BuildWidget({self.build.source.label!r})"


def _request_id(shell: Any) -> Any:
    """The id of the request (cell) that display messages sent now belong to, as ipykernel resolves it."""
    header = getattr(getattr(shell, "display_pub", None), "parent_header", None) or {}
    return header.get("msg_id") if isinstance(header, dict) else None


def _in_notebook() -> bool:
    """True where the widget displays (a Jupyter kernel, marimo); False in a terminal or script."""
    marimo = sys.modules.get("marimo")
    if marimo is not None:
        try:
            if marimo.running_in_notebook():
                return True
        except Exception:
            pass
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})
