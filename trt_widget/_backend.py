"""Choose the TensorRT Python module once: NVIDIA ``tensorrt`` where it imports and a CUDA GPU is visible, else
TensorRT for RTX (which also builds without a GPU), else NVIDIA ``tensorrt`` anyway (its builder then says why).

``TRT_WIDGET_BACKEND`` (``tensorrt`` / ``rtx``) overrides the choice. Nothing else in trt_widget imports
TensorRT directly; where the backends differ, :func:`capabilities` says how (decided by the API, not versions).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

INSTALL_HINT = (
    "trt_widget needs a TensorRT Python module and found none. Install one of:\n"
    "  pip install tensorrt-rtx-cu13-libs tensorrt-rtx-cu13-bindings  # TensorRT for RTX, builds without a GPU\n"
    "  pip install tensorrt                                           # NVIDIA TensorRT, for an NVIDIA GPU\n"
    "(in a clone of trt_widget: pip install -e '.[rtx]' or -e '.[tensorrt]')"
)

_CANDIDATES = {
    "tensorrt": ("tensorrt", "tensorrt_bindings"),  # the second: tensorrt-cuXX-bindings installed directly
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
        raise BackendUnavailable(f"TRT_WIDGET_BACKEND={wanted!r} is not a known backend; use 'tensorrt' or 'rtx'.")
    if wanted:
        module = _try_import(_CANDIDATES[wanted])
        if module is not None:
            _selected = (wanted, module)
            return _selected
    else:
        nvidia = _try_import(_CANDIDATES["tensorrt"])
        if nvidia is not None and cuda_gpu_visible():
            _selected = ("tensorrt", nvidia)
            return _selected
        rtx = _try_import(_CANDIDATES["rtx"])
        if rtx is not None:
            _selected = ("rtx", rtx)
            return _selected
        if nvidia is not None:  # no GPU visible and no TensorRT for RTX: its builder says what is missing
            _selected = ("tensorrt", nvidia)
            return _selected
    if wanted:
        reasons = "; ".join(_import_errors[n] for n in _CANDIDATES[wanted] if n in _import_errors)
        raise BackendUnavailable(
            f"TRT_WIDGET_BACKEND={wanted!r} but it cannot be imported ({reasons or 'no usable module'}).\n"
            f"{INSTALL_HINT}"
        )
    raise BackendUnavailable(INSTALL_HINT)


def cuda_gpu_visible() -> bool:
    """True when the CUDA driver loads and reports at least one device (no CUDA toolkit needed)."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            cuda = ctypes.CDLL(name)
        except OSError:
            continue
        count = ctypes.c_int(0)
        try:
            return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
        except Exception:
            return False
    return False


def capabilities() -> dict[str, object]:
    """What the selected backend can do: its label, whether weak typing (precision flags such as FP16) exists."""
    kind, module = select_backend()
    weak = hasattr(module.BuilderFlag, "FP16")
    version = str(getattr(module, "__version__", "?"))
    label = f"TensorRT for RTX {version}" if kind == "rtx" else f"NVIDIA TensorRT {version}"
    return {"label": label, "weak_typing": weak, "gil_unsafe_parse": kind == "tensorrt" and _older(version, (10, 13))}


def check_options(options: Any) -> None:
    """Refuse, at construction, option combinations the selected backend cannot build (as trtexec does)."""
    caps = capabilities()
    label, weak = caps["label"], caps["weak_typing"]
    if options.fp16 and not weak:
        raise ValueError(
            f"fp16=True is not available with {label}: it builds strongly typed networks only, so "
            "precision comes from the model's tensor types. Export the model in FP16 instead (e.g. "
            "onnxconverter-common's float16 conversion)"
        )
    if options.fp16 and options.strongly_typed:
        raise ValueError(
            "fp16=True asks for a weakly typed network, but strongly_typed=True (the default): pass "
            f"strongly_typed=False too ({label}; weak typing is deprecated since TensorRT 10.12), or "
            "export the model in FP16 and keep strong typing"
        )
    if not options.strongly_typed and not weak:
        raise ValueError(f"strongly_typed=False: {label} builds strongly typed networks only; drop the option")


def _older(version: str, than: tuple[int, ...]) -> bool:
    """True when ``version`` (e.g. "10.12.0.36") is older than ``than``; unknown versions count as not older."""
    try:
        parts = tuple(int(p) for p in version.split(".")[: len(than)])
    except ValueError:
        return False
    return parts < than


def trt() -> ModuleType:
    """The selected TensorRT module (``tensorrt`` or ``tensorrt_rtx_bindings``)."""
    return select_backend()[1]


def backend_info() -> dict[str, str]:
    """Name, module and version of the selected backend, e.g. for history keys and reports."""
    kind, module = select_backend()
    return {"backend": kind, "module": module.__name__, "version": str(getattr(module, "__version__", "?"))}
