"""How a :class:`~trt_widget.BuildWidget` is displayed: the widget view plus static renderings (text, Markdown,
HTML) for front ends without its JavaScript, under an IPython display id so that every output of the widget is
replaced by the final state when the build ends, and resent with the cell that waits (headless runners read only
the running cell's messages). The kernel-restart notice is the view's (``js/src/build/kernel.js``).
"""

from __future__ import annotations

import sys
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._status import log as _log

if TYPE_CHECKING:
    from ._build import Build
    from ._snapshot import SnapshotPump

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
VIEW_WAIT_S = 5.0  # how long an output first shown after its build ended waits for a front end to render it


class NotebookDisplay:
    """The display side of BuildWidget (a mixin before ``anywidget.AnyWidget``): reads the widget's build and pump."""

    build: Build
    _pump: SnapshotPump
    _display_id: str | None  # IPython display id, once displayed in a kernel
    _display_parent: str | None  # the request the last display update was sent with
    # a front end rendered a view of this widget (its JS said so): only then does a final display update keep the
    # widget view; without one (nbclient, nbconvert --execute) the saved output is the static rendering, which
    # readers without the widget's JavaScript (nbconvert's HTML offline, GitHub) show
    _view_seen: bool
    _view_dropped: bool
    send_state: Callable[..., None]  # the widget's (ipywidgets)

    def _init_display(self) -> None:
        self._display_id = None
        self._display_parent = None
        self._view_seen = False
        self._view_dropped = False

    def _view_rendered(self) -> None:
        """A front end rendered a view (its message may come after the final update: then the view again)."""
        self._view_seen = True
        if self._view_dropped:
            self._refresh_display()

    # -- static output: what front ends without the widget's JavaScript show ----------------------------------
    def _repr_mimebundle_(self, **kwargs: object) -> tuple[dict[str, object], dict[str, object]]:
        """The widget view plus ``text/plain``, ``text/markdown`` and ``text/html`` renderings of the current state
        (front ends with the widget show the view; GitHub, nbviewer, nbconvert and the like show the HTML)."""
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        return {**data, **self._static()}, dict(metadata or {})

    def _static(self) -> dict[str, str]:
        from .report import mimebundle

        return mimebundle(self.build, title=repr(self))

    def _bundle(self, first: bool = False) -> tuple[dict[str, object], dict[str, object]]:
        """The output's data; once the build ended, without the widget view when no front end has shown one (in
        nbconvert's HTML a widget view wins over text/html and renders nothing offline: its manager comes from a
        CDN). A view's late message brings the widget view back (``_on_custom_msg``). The ``first`` display keeps
        it: a front end can only say it rendered a view it was given (a replay ends before its cell does)."""
        render = getattr(self, "_repr_mimebundle_", None)  # ipywidgets sets it to None when the widget is closed
        data, metadata = render() if callable(render) else (self._static(), {})
        self._view_dropped = not first and self.build.done() and not self._view_seen and WIDGET_VIEW in data
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
        first = self._display_id is None
        if first:
            self._display_id = f"trt_widget-{uuid.uuid4().hex}"
        ended = self.build.done()
        data, metadata = self._bundle(first=first)  # shown again: the outputs with its id are updated too
        display(data, metadata=metadata, raw=True, display_id=self._display_id)
        if not ended and self.build.done():  # it ended while this output was made: make sure it is final
            self._refresh_display()
        elif first and ended and not self._view_seen:  # first shown ended: the view stays if a front end renders it
            timer = threading.Timer(VIEW_WAIT_S, self._drop_unseen_view)
            timer.daemon = True
            timer.start()

    def _drop_unseen_view(self) -> None:
        """No front end rendered the view of an output first shown after the build ended (nbclient, nbconvert
        --execute): the static rendering alone, as for a build that ended while shown."""
        if not self._view_seen:
            self._refresh_display()

    def _on_build_end(self, _build: object) -> None:
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


def _request_id(shell: object) -> str | None:
    """The id of the request (cell) that display messages sent now belong to, as ipykernel resolves it."""
    header = getattr(getattr(shell, "display_pub", None), "parent_header", None) or {}
    msg_id = header.get("msg_id") if isinstance(header, dict) else None
    return msg_id if isinstance(msg_id, str) else None


def _in_repl() -> bool:
    """True in an interactive interpreter (``python``, ``python -i``, IPython's terminal): its prompt owns the
    terminal between commands, so nothing may redraw there from a background thread."""
    if hasattr(sys, "ps1") or sys.flags.interactive:
        return True
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None and not _in_notebook()


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
