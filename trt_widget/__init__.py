"""trt_widget: observable, cancelable TensorRT engine builds — in Jupyter, a terminal, or as JSON events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._backend import BackendUnavailable, backend_info, select_backend
from ._errors import BuildCancelled, BuildError
from ._python import hold_standard_fds
from ._version import __version__ as __version__

# a closed fd 0, 1 or 2 (cron, a daemon's ``>&-``) gets /dev/null now, in the importing thread: filled only when a
# builder process starts, a file another thread had open for a moment (an import's .pyc) could stand there, and
# the builder started with no stdout, or with that file as its stdout
hold_standard_fds()

if TYPE_CHECKING:  # what the lazy names below are, for type checkers (nothing is imported at run time)
    from types import ModuleType

    from ._build import Build
    from ._events import attach_events
    from ._monitor import BuildMonitor
    from ._options import BuildOptions, BuildOptionsDict
    from ._phases import Phase, PhaseModel
    from ._terminal import render_in_terminal
    from ._widget import BuildWidget
    from .engine import EngineReport
    from .matrix import BuildMatrix
    from .provenance import check_engine, read_manifest
    from .ray import RayRunner
    from .runners import shutdown_workers
    from .watch import watch as watch  # the subpackage is callable (see __getattr__): this is its call
    from .watch import watch_call

    # the selected TensorRT module, its whole API for users' network functions (``trt.float32``, ...): a module,
    # not trt_widget's own narrow protocol of what it calls (``_tensorrt_types.TensorRT``)
    trt: ModuleType

# Names that need a TensorRT backend are imported on first use, so `import trt_widget` always works and a
# missing backend gives one clear error naming both install commands.
_LAZY = {
    "Build": "._build",
    "BuildMonitor": "._monitor",
    "BuildOptions": "._options",
    "BuildOptionsDict": "._options",
    "BuildMatrix": ".matrix",
    "BuildWidget": "._widget",
    "EngineReport": ".engine",
    "Phase": "._phases",
    "PhaseModel": "._phases",
    "RayRunner": ".ray",
    "attach_events": "._events",
    "check_engine": ".provenance",
    "read_manifest": ".provenance",
    "render_in_terminal": "._terminal",
    "shutdown_workers": ".runners",
    "watch_call": ".watch",
}

__all__ = [
    "BackendUnavailable",
    "Build",
    "BuildCancelled",
    "BuildError",
    "BuildMatrix",
    "BuildMonitor",
    "BuildOptions",
    "BuildOptionsDict",
    "BuildWidget",
    "EngineReport",
    "Phase",
    "PhaseModel",
    "RayRunner",
    "attach_events",
    "backend_info",
    "check_engine",
    "read_manifest",
    "render_in_terminal",
    "select_backend",
    "shutdown_workers",
    "trt",
    "watch",
    "watch_call",
]


def __getattr__(name: str) -> Any:  # Any: ``watch``, a callable module, is typed by its use
    if name == "trt":
        return select_backend()[1]
    if name == "watch":  # the subpackage, callable: ``with trt_widget.watch():``
        import importlib

        return importlib.import_module(".watch", __name__)
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'trt_widget' has no attribute {name!r}")
