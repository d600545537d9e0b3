"""Call a Python ``IProgressMonitor`` the way TensorRT does: through its C++ vtable and pybind11 trampoline.

The builder calls ``IProgressMonitor::stepComplete`` on a C++ object; the bindings' trampoline takes the GIL,
converts the arguments and calls the Python method. ``ctypes`` lets a benchmark make exactly that C++ call
(and ctypes releases the GIL around it, as the builder thread holds none). The slot layout is checked with a
probe monitor before use, so a different binding layout is reported as "not feasible" instead of crashing
silently on wrong numbers.
"""

from __future__ import annotations

import ctypes
from typing import Any

from _common import ROOT  # noqa: F401

from trt_widget._backend import trt

# IProgressMonitor's vtable: getInterfaceInfo, two destructor slots, one more base slot, then the three
# callbacks in declaration order (found and verified on tensorrt_rtx 1.7 bindings by ``_verify``).
_SLOTS = {"phase_start": 4, "step_complete": 5, "phase_finish": 6}
_PHASE_START = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32)
_STEP_COMPLETE = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32)
_PHASE_FINISH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)


class NativeCaller:
    """``phase_start`` / ``step_complete`` / ``phase_finish`` of ``monitor`` invoked through C++."""

    def __init__(self, monitor: Any) -> None:
        self.monitor = monitor  # keeps the C++ object alive
        # pybind11 "simple layout" instance: the C++ value pointer follows the 16-byte PyObject header.
        self.this = ctypes.c_void_p.from_address(id(monitor) + 16).value
        vtable = ctypes.c_void_p.from_address(self.this).value
        slot = lambda i: ctypes.c_void_p.from_address(vtable + 8 * i).value  # noqa: E731
        self.phase_start_fn = _PHASE_START(slot(_SLOTS["phase_start"]))
        self.step_complete_fn = _STEP_COMPLETE(slot(_SLOTS["step_complete"]))
        self.phase_finish_fn = _PHASE_FINISH(slot(_SLOTS["phase_finish"]))

    def phase_start(self, name: bytes, parent: bytes | None, steps: int) -> None:
        self.phase_start_fn(self.this, name, parent, steps)

    def step_complete(self, name: bytes, step: int) -> bool:
        return bool(self.step_complete_fn(self.this, name, step))

    def phase_finish(self, name: bytes) -> None:
        self.phase_finish_fn(self.this, name)


class _Probe(trt().IProgressMonitor):  # type: ignore[misc]
    def __init__(self) -> None:
        trt().IProgressMonitor.__init__(self)
        self.calls: list[tuple[Any, ...]] = []

    def phase_start(self, name: str, parent: str | None, steps: int) -> None:
        self.calls.append(("start", name, parent, steps))

    def step_complete(self, name: str, step: int) -> bool:
        self.calls.append(("step", name, step))
        return step < 1

    def phase_finish(self, name: str) -> None:
        self.calls.append(("finish", name))


def verify() -> str | None:
    """None when calls through the vtable reach the Python methods with the right arguments, else why not."""
    try:
        probe = _Probe()
        native = NativeCaller(probe)
        if native.this is None:
            return "no C++ object pointer"
        native.phase_start(b"Outer", None, 7)
        native.phase_start(b"Inner", b"Outer", 2)
        results = [native.step_complete(b"Inner", 0), native.step_complete(b"Inner", 1)]
        native.phase_finish(b"Inner")
    except Exception as exc:  # a layout mismatch usually shows up as a ctypes error or wrong calls
        return f"{type(exc).__name__}: {exc}"
    expected = [
        ("start", "Outer", None, 7),
        ("start", "Inner", "Outer", 2),
        ("step", "Inner", 0),
        ("step", "Inner", 1),
        ("finish", "Inner"),
    ]
    if probe.calls != expected or results != [True, False]:
        return f"vtable calls reached {probe.calls} / returned {results}"
    return None
