"""Choose the TensorRT Python module once: NVIDIA ``tensorrt`` if importable, else TensorRT for RTX.

``TRT_WIDGET_BACKEND`` (``tensorrt`` / ``rtx``) overrides the choice. Nothing else in trt_widget imports
TensorRT directly, so both backends run the same code path.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

INSTALL_HINT = (
    "trt_widget needs a TensorRT Python module and found none. Install one of:\n"
    "  pip install 'trt_widget[rtx]'       # TensorRT for RTX from PyPI, builds engines without a GPU\n"
    "  pip install 'trt_widget[tensorrt]'  # NVIDIA TensorRT, for machines with an NVIDIA GPU"
)

_CANDIDATES = {
    "tensorrt": ("tensorrt",),
    "rtx": ("tensorrt_rtx", "tensorrt_rtx_bindings"),
}

_selected: tuple[str, ModuleType] | None = None


class BackendUnavailable(ImportError):
    """No TensorRT module could be imported (or the requested one is missing)."""


_import_errors: dict[str, str] = {}  # module name -> why it could not be imported (for the error message)


def _try_import(names: tuple[str, ...]) -> ModuleType | None:
    for name in names:
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # ImportError, or e.g. OSError when a broken install lacks its shared libraries
            _import_errors[name] = f"{type(exc).__name__}: {exc}"
            continue
        if hasattr(module, "Builder") and hasattr(module, "IProgressMonitor"):
            return module
    return None


def select_backend() -> tuple[str, ModuleType]:
    """Return ``(kind, module)`` for the TensorRT backend in use, importing it on first call."""
    global _selected
    if _selected is not None:
        return _selected
    wanted = os.environ.get("TRT_WIDGET_BACKEND", "").strip().lower()
    if wanted in ("tensorrt_rtx", "tensorrt-rtx"):
        wanted = "rtx"
    if wanted and wanted not in _CANDIDATES:
        raise BackendUnavailable(
            f"TRT_WIDGET_BACKEND={wanted!r} is not a known backend; use 'tensorrt' or 'rtx'."
        )
    order = [wanted] if wanted else ["tensorrt", "rtx"]
    for kind in order:
        module = _try_import(_CANDIDATES[kind])
        if module is not None:
            _selected = (kind, module)
            return _selected
    if wanted:
        reasons = "; ".join(_import_errors[n] for n in _CANDIDATES[wanted] if n in _import_errors)
        raise BackendUnavailable(
            f"TRT_WIDGET_BACKEND={wanted!r} but it cannot be imported ({reasons or 'no usable module'}).\n"
            f"{INSTALL_HINT}"
        )
    raise BackendUnavailable(INSTALL_HINT)


def trt() -> ModuleType:
    """The selected TensorRT module (``tensorrt`` or ``tensorrt_rtx_bindings``)."""
    return select_backend()[1]


def backend_info() -> dict[str, str]:
    """Name, module and version of the selected backend, e.g. for history keys and reports."""
    kind, module = select_backend()
    return {"backend": kind, "module": module.__name__, "version": str(getattr(module, "__version__", "?"))}
