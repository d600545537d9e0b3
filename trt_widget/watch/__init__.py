"""Watching builds you don't run yourself: every TensorRT build inside the code's own calls, live, with Stop.

- ``with trt_widget.watch() as w:`` — builds inside the block (Stop: the kernel interrupt / Ctrl-C).
- ``trt_widget.watch_call(fn, *args)`` / ``BuildWidget.watch(fn, *args)`` — ``fn`` on a background thread.
- ``trt-widget run -- <command>`` — a Python command with the monitor injected.

While a watch is open, TensorRT's ``Builder`` build methods are patched (see :mod:`._patch`); the last watch to
close restores TensorRT's own methods.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ._build import WatchedBuild, network_info, network_label
from ._cli import add_arguments as cli_arguments
from ._cli import run as cli_run
from ._patch import METHODS, current_watches, is_patched, originals
from ._rtx import alias_tensorrt_rtx
from ._run import CommandRun, ProcessCall, RelayedBuild, run_command
from ._watch import Watch, WatchedCall, check_isolation, stop_notice
from ._watch import watch_call as _thread_call

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._watch import WatchOptions
    from ._widget import WatchWidget, run_widget, watch_widget  # loaded on first use (anywidget): __getattr__


def watch_call(
    fn: Callable[..., object],
    /,
    *args: object,
    isolation: str = "thread",
    watch_settings: Mapping[str, object] | None = None,
    **kwargs: object,
) -> WatchedCall[object] | ProcessCall:
    """Start ``fn(*args, **kwargs)`` and watch every TensorRT build inside it: on a background thread
    (``isolation="thread"``, a :class:`WatchedCall`), or in a fresh process (``"process"``: fn and its arguments
    cross by cloudpickle, the result comes back; Stop can terminate it; a :class:`ProcessCall`).

    ``watch_settings={"events": ..., "history": ..., "resources": ..., "budget": ..., "keep_engines": ...}``
    are :func:`watch`'s options (thread only); a dict, so every other keyword reaches ``fn``."""
    check_isolation(isolation, watch_settings)
    if isolation == "process":
        return ProcessCall(fn, args, kwargs).start()
    return _thread_call(fn, *args, watch_settings=watch_settings, **kwargs)


def watch(**settings: Unpack[WatchOptions]) -> Watch:
    """``with trt_widget.watch():`` — every TensorRT build made inside the block (see :class:`Watch`); in a
    Jupyter kernel the list of builds is shown below the cell."""
    w = Watch(**settings)
    w.display_factory = _block_widget
    return w


def _block_widget(w: Watch) -> WatchWidget:
    from ._widget import WatchWidget

    return WatchWidget(w, label="the block")


def __getattr__(name: str) -> object:  # the widget needs anywidget: imported on first use
    if name in ("WatchWidget", "watch_widget", "run_widget"):
        from . import _widget

        return getattr(_widget, name)
    raise AttributeError(f"module 'trt_widget.watch' has no attribute {name!r}")


__all__ = [
    "METHODS",
    "CommandRun",
    "ProcessCall",
    "RelayedBuild",
    "Watch",
    "WatchWidget",
    "WatchedBuild",
    "WatchedCall",
    "alias_tensorrt_rtx",
    "cli_arguments",
    "cli_run",
    "current_watches",
    "is_patched",
    "network_info",
    "network_label",
    "originals",
    "run_command",
    "run_widget",
    "stop_notice",
    "watch",
    "watch_call",
    "watch_widget",
]


class _CallableModule(types.ModuleType):
    """``trt_widget.watch`` is this package once imported: calling it is :func:`watch`, so
    ``with trt_widget.watch():`` works either way."""

    def __call__(self, **settings: Unpack[WatchOptions]) -> Watch:
        return watch(**settings)


sys.modules[__name__].__class__ = _CallableModule
