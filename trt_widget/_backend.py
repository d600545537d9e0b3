"""Choose the TensorRT Python module once: NVIDIA ``tensorrt`` where it imports and a CUDA GPU is visible, else
TensorRT for RTX (which also builds without a GPU), else NVIDIA ``tensorrt`` anyway (its builder then says why).

``TRT_WIDGET_BACKEND`` (``tensorrt`` / ``rtx``) overrides the choice. Nothing else in trt_widget imports
TensorRT directly; where the backends differ, :func:`capabilities` says how (decided by the API, not versions).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ._options import BuildOptions
    from ._tensorrt_types import TensorRT

INSTALL_HINT = (
    "trt_widget needs a TensorRT Python module and found none. Install one of:\n"
    "  pip install tensorrt-rtx-cu13-libs tensorrt-rtx-cu13-bindings  # TensorRT for RTX, builds without a GPU\n"
    "  pip install tensorrt-cu13  # NVIDIA TensorRT for CUDA 13 (NVIDIA driver R580 or newer)\n"
    "  pip install tensorrt-cu12  # NVIDIA TensorRT for CUDA 12 (drivers R525 to R575)\n"
    "(in a clone of trt_widget: pip install -e '.[rtx]', '.[tensorrt]' or '.[tensorrt-cu12]')"
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


_JETSON_NODES = ("/dev/nvhost-ctrl-gpu", "/dev/nvgpu")  # integrated GPUs (Jetson) have no /dev/nvidiaN
_PROBE = (
    "import ctypes,sys\n"
    "for n in ('libcuda.so.1','libcuda.so','nvcuda.dll'):\n"
    "    try: c=ctypes.CDLL(n)\n"
    "    except OSError: continue\n"
    "    k=ctypes.c_int(0)\n"
    "    sys.exit(0 if c.cuInit(0)==0 and c.cuDeviceGetCount(ctypes.byref(k))==0 and k.value>0 else 3)\n"
    "sys.exit(4)\n"
)
PROBE_TIMEOUT_S = 30.0


def likely_backend() -> str:
    """The kind :func:`select_backend` picks, or will most likely pick, without importing TensorRT or probing
    CUDA here: so a builder process can start while this one is still importing. Builder processes are
    checked against the real choice before they get a job."""
    if _selected is not None:
        return _selected[0]
    wanted = os.environ.get("TRT_WIDGET_BACKEND", "").strip().lower()
    wanted = "rtx" if wanted in ("tensorrt_rtx", "tensorrt-rtx") else wanted
    if wanted in _CANDIDATES:
        return wanted
    found = {kind for kind, names in _CANDIDATES.items() if any(_findable(n) for n in names)}
    nvidia_gpu = _visible_devices_listed() and (not sys.platform.startswith("linux") or bool(gpu_device_nodes()))
    if "tensorrt" in found and (nvidia_gpu or "rtx" not in found):
        return "tensorrt"
    return "rtx" if "rtx" in found else "tensorrt"


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def cuda_gpu_visible() -> bool:
    """True when CUDA reports at least one device to this process's environment — decided without loading CUDA here.

    ``cuInit`` in the user's process would break every child it forks later (they get
    CUDA_ERROR_NOT_INITIALIZED), and even NVML maps libcuda. So: ``CUDA_VISIBLE_DEVICES`` hiding every device,
    or no NVIDIA device node on Linux, means no GPU at no cost; otherwise a short-lived probe process calls
    ``cuInit`` and counts the devices (about 0.25 s, only on machines with an NVIDIA device).
    """
    if not _visible_devices_listed():
        return False
    if sys.platform.startswith("linux") and not gpu_device_nodes():
        return False
    return _probe_in_child()


def _visible_devices_listed() -> bool:
    """False when CUDA_VISIBLE_DEVICES is set and names no device (empty, or starting with an invalid entry)."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return True
    first = value.split(",")[0].strip()
    if first.startswith(("GPU-", "MIG-")):
        return True
    return first.isascii() and first.isdigit()  # CUDA stops at the first invalid index: "-1" or "" hides every device


def gpu_device_nodes() -> list[str]:
    """The NVIDIA GPU device nodes present (``/dev/nvidia0`` …, or a Jetson's integrated GPU)."""
    try:
        nodes = [f"/dev/{n}" for n in os.listdir("/dev") if n.startswith("nvidia") and n[6:].isdigit()]
    except OSError:
        nodes = []
    return sorted(nodes) + [n for n in _JETSON_NODES if os.path.exists(n)]


def _probe_in_child() -> bool:
    import subprocess

    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _PROBE],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=PROBE_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def cuda_driver_version() -> tuple[int, int] | None:
    """The CUDA version the installed NVIDIA driver supports, e.g. (12, 4), or None without a driver.

    ``cuDriverGetVersion`` needs no ``cuInit`` but loads libcuda: call it only in the process that builds.
    """
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            cuda = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        try:
            if cuda.cuDriverGetVersion(ctypes.byref(version)) != 0 or version.value <= 0:
                return None
        except Exception:
            return None
        return version.value // 1000, version.value % 1000 // 10
    return None


TENSORRT_EXTRAS = {13: "tensorrt", 12: "tensorrt-cu12"}  # CUDA major -> the trt_widget extra built for it
_DRIVER_FOR_CUDA = {13: "R580", 12: "R525"}  # the oldest driver branch each CUDA major runs on


def tensorrt_cuda_major() -> int | None:
    """The CUDA major version the installed NVIDIA TensorRT wheels were built for (from their package names)."""
    from importlib import metadata

    for major in (13, 12, 11):
        for name in (f"tensorrt_cu{major}_libs", f"tensorrt_cu{major}_bindings", f"tensorrt_cu{major}"):
            try:
                metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
            return major
    return None


def builder_failure_message(label: str, exc: BaseException) -> str:
    """Why NVIDIA's ``Builder()`` came back null, from the driver's CUDA version, naming the extra that fits."""
    head = f"{label} could not create a builder ({exc})"
    driver = cuda_driver_version()
    needed = tensorrt_cuda_major()
    if driver is None:
        return (
            f"{head}: no NVIDIA driver (libcuda) is loadable in this process, so no CUDA GPU. On a machine "
            "without an NVIDIA GPU install TensorRT for RTX (pip install 'trt_widget[rtx]') or set "
            "TRT_WIDGET_BACKEND=rtx"
        )
    have = f"the NVIDIA driver supports CUDA {driver[0]}.{driver[1]}"
    if needed is not None and driver[0] < needed:
        fits = TENSORRT_EXTRAS.get(driver[0])
        advice = (
            f"pip install 'trt_widget[{fits}]' (TensorRT built for CUDA {driver[0]}; uninstall tensorrt-cu{needed}* "
            "first)"
            if fits
            else f"no TensorRT 10+ wheel is built for CUDA {driver[0]}"
        )
        return (
            f"{head}: {have}, but this TensorRT is built for CUDA {needed} (needs driver "
            f"{_DRIVER_FOR_CUDA.get(needed, 'newer')} or newer). Either {advice}, or update the driver"
        )
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    where = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
    return (
        f"{head}: {have}, yet no CUDA GPU is usable by this process{where}; check `nvidia-smi`, or build "
        "without a GPU with TensorRT for RTX (pip install 'trt_widget[rtx]', TRT_WIDGET_BACKEND=rtx)"
    )


def capabilities() -> dict[str, object]:
    """What the selected backend can do: its label, whether weak typing (precision flags such as FP16) exists."""
    kind, module = select_backend()
    weak = hasattr(module.BuilderFlag, "FP16")
    version = str(getattr(module, "__version__", "?"))
    label = f"TensorRT for RTX {version}" if kind == "rtx" else f"NVIDIA TensorRT {version}"
    return {"label": label, "weak_typing": weak, "gil_unsafe_parse": kind == "tensorrt" and _older(version, (10, 13))}


def check_options(options: BuildOptions) -> None:
    """Refuse, at construction, options the selected backend cannot build (as trtexec does), asking its API."""
    from ._options import PRECISION_FLAGS, TRT_SETTINGS

    caps = capabilities()
    label, weak = caps["label"], caps["weak_typing"]
    module = select_backend()[1]
    flags, config = module.BuilderFlag, getattr(module, "IBuilderConfig", None)
    asked = options.weak_precisions
    for name in asked:
        flag = PRECISION_FLAGS.get(name, "FP16")  # best: FP16 at least
        if not hasattr(flags, flag):
            raise ValueError(
                f"{name}=True is not available with {label}: its API has no BuilderFlag.{flag} (it builds strongly "
                "typed networks only, so precision comes from the model's tensor types). Make the model mixed "
                "precision instead, e.g. with NVIDIA ModelOpt's AutoCast (see docs/options.md)"
            )
    if asked and options.strongly_typed:
        raise ValueError(
            f"{', '.join(f'{n}=True' for n in asked)} asks for a weakly typed network, but strongly_typed=True: "
            f"drop strongly_typed (weak typing follows from the precision flag, as in trtexec; {label}; weak typing "
            "is deprecated since TensorRT 10.12), or keep strong typing and make the model mixed precision (ModelOpt "
            "AutoCast)"
        )
    if not options.strongly_typed and not weak:
        raise ValueError(f"strongly_typed=False: {label} builds strongly typed networks only; drop the option")
    for name, how in TRT_SETTINGS.items():
        value = getattr(options, name, None)
        if value is None or (value is False and name != "tf32"):  # tf32=False clears a flag: it must exist
            continue
        if how[0] == "flag" and not hasattr(flags, how[1]):
            raise ValueError(f"{name}={value!r} is not available with {label}: its API has no BuilderFlag.{how[1]}")
        if how[0] in ("attr", "enum") and not hasattr(config, how[1]):
            raise ValueError(f"{name}={value!r} is not available with {label}: its builder config has no {how[1]}")
        if how[0] == "enum":
            enum = getattr(module, how[2], None)
            if enum is None or not hasattr(enum, value.upper()):
                have = sorted(n.lower() for n in dir(enum) if n.isupper()) if enum is not None else []
                raise ValueError(
                    f"{name}={value!r} is not available with {label}"
                    + (f": it has {', '.join(have)}" if have else f": its API has no {how[2]}")
                )
    if options.tactic_sources is not None:
        sources = getattr(module, "TacticSource", None)
        have = sorted(n for n in dir(sources) if n.isupper()) if sources is not None else []
        for item in options.tactic_sources.split(","):
            if item[1:] not in have or not hasattr(config, "set_tactic_sources"):
                raise ValueError(
                    f"tactic_sources: {item[1:]} is not a tactic source of {label}"
                    + (f" (it has {', '.join(have)})" if have else " (its API has no TacticSource)")
                )


def _older(version: str, than: tuple[int, ...]) -> bool:
    """True when ``version`` (e.g. "10.12.0.36") is older than ``than``; unknown versions count as not older."""
    try:
        parts = tuple(int(p) for p in version.split(".")[: len(than)])
    except ValueError:
        return False
    return parts < than


def trt() -> TensorRT:
    """The selected TensorRT module (``tensorrt`` or ``tensorrt_rtx_bindings``), typed as trt_widget uses it."""
    return cast("TensorRT", select_backend()[1])


def backend_info() -> dict[str, str]:
    """Name, module and version of the selected backend, e.g. for history keys and reports."""
    kind, module = select_backend()
    return {"backend": kind, "module": module.__name__, "version": str(getattr(module, "__version__", "?"))}


if TYPE_CHECKING:  # TensorRT's classes, to subclass: looked up on first use (an import of _backend imports no TensorRT)

    class ProgressMonitorBase:
        """TensorRT's ``IProgressMonitor`` class, to subclass (its callbacks are the subclass's)."""

        def __init__(self) -> None: ...

    class LoggerBase:
        """TensorRT's ``ILogger`` class, to subclass."""

        def __init__(self) -> None: ...

else:

    def __getattr__(name: str) -> type:
        """``ProgressMonitorBase`` and ``LoggerBase``: the selected backend's classes, imported on first use."""
        if name == "ProgressMonitorBase":
            return trt().IProgressMonitor
        if name == "LoggerBase":
            return trt().ILogger
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
