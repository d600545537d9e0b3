"""What the GPU is doing for a build, from NVML (no CUDA): the device the build uses (honouring
``CUDA_VISIBLE_DEVICES``, which NVML ignores), who holds its memory, and the facts a comparison needs (name,
compute capability, driver). Also the host-side facts around it: Jetson's unified memory, the kernel's OOM kills,
and TensorRT's "insufficient memory" tactic skips summarised into one line.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, SupportsInt, TypedDict

from ._json import count_from_decimal, json_count

if TYPE_CHECKING:
    from ._resources import ResourceSampler

MIB = 1 << 20


class NvmlMemory(Protocol):
    @property
    def total(self) -> int: ...

    @property
    def free(self) -> int: ...

    @property
    def used(self) -> int: ...


class NvmlProcess(Protocol):
    @property
    def pid(self) -> int: ...

    @property
    def usedGpuMemory(self) -> int | None: ...  # None where the driver does not say (e.g. in a container)


class NvmlUtilization(Protocol):
    @property
    def gpu(self) -> int: ...


class NVML(Protocol):
    """What trt_widget calls of NVML (the ``pynvml`` module of nvidia-ml-py); a device handle is opaque."""

    def nvmlDeviceGetCount(self) -> int: ...

    def nvmlDeviceGetHandleByIndex(self, index: int, /) -> object: ...

    def nvmlDeviceGetHandleByUUID(self, uuid: str, /) -> object: ...

    def nvmlDeviceGetUUID(self, handle: object, /) -> str | bytes: ...

    def nvmlDeviceGetName(self, handle: object, /) -> str | bytes: ...

    def nvmlDeviceGetCudaComputeCapability(self, handle: object, /) -> tuple[int, int]: ...

    def nvmlSystemGetDriverVersion(self) -> str | bytes: ...

    def nvmlDeviceGetMemoryInfo(self, handle: object, /) -> NvmlMemory: ...

    def nvmlDeviceGetComputeRunningProcesses(self, handle: object, /) -> list[NvmlProcess]: ...

    def nvmlDeviceGetUtilizationRates(self, handle: object, /) -> NvmlUtilization: ...


class _GpuFactsName(TypedDict):
    name: str


class GpuFacts(_GpuFactsName, total=False):
    """What makes two builds' GPUs comparable (``gpu_identity``)."""

    compute_capability: str
    driver: str


class MemoryHolder(TypedDict):
    pid: int
    used: int | None  # bytes, None where NVML does not say
    name: str


class MemoryAtStart(TypedDict):
    """The build's GPU memory when it started, in bytes, and who held it (largest first)."""

    device: str
    total: int
    free: int
    used: int
    processes: list[MemoryHolder]


class MemorySkips(TypedDict):
    """TensorRT's insufficient-memory tactic skips in one build: how many, the largest request, the free bytes."""

    count: int
    largest_request: int | None
    free: int | None


def jetson() -> bool:
    """True on an NVIDIA Jetson (integrated GPU sharing host memory; no NVML)."""
    if Path("/etc/nv_tegra_release").exists():
        return True
    try:
        return b"nvidia,tegra" in Path("/proc/device-tree/compatible").read_bytes()
    except OSError:
        return False


UNIFIED_MEMORY = "unified memory (Jetson): the GPU shares host memory, so the host figures include GPU allocations"


def oom_kill_count() -> int | None:
    """How many processes the kernel's OOM killer has ended (system-wide, plus this cgroup's), or None."""
    total, found = 0, False
    try:
        for line in Path("/proc/vmstat").read_text().splitlines():
            if line.startswith("oom_kill "):
                total, found = total + int(line.split()[1]), True
    except (OSError, ValueError):
        pass
    try:  # cgroup v2: a container's memory limit kills show here (and in vmstat on most kernels)
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        group = next(line[3:] for line in lines if line.startswith("0::"))
        for line in (Path("/sys/fs/cgroup") / group.lstrip("/") / "memory.events").read_text().splitlines():
            if line.startswith("oom_kill "):
                total, found = total + int(line.split()[1]), True
    except (OSError, ValueError, StopIteration):
        pass
    return total if found else None


# -- the device a build uses -----------------------------------------------------------------------------------
def build_device(
    nvml: NVML, environ: Mapping[str, str] | None = None, device: int | None = None
) -> tuple[object, str] | None:
    """(NVML handle, label) of the GPU a build uses — CUDA's device ``device`` (``device=``, default 0): that entry
    of ``CUDA_VISIBLE_DEVICES`` (an index, or a GPU-/MIG- UUID or its prefix) — or None when CUDA sees no such
    device."""
    env = os.environ if environ is None else environ
    count = int(nvml.nvmlDeviceGetCount())
    visible = env.get("CUDA_VISIBLE_DEVICES")
    ordinal = device or 0
    if visible is None:
        first = str(ordinal)
    else:
        entries = [entry.strip() for entry in visible.split(",")]
        valid = list(itertools.takewhile(_visible_entry, entries))  # CUDA stops at an invalid entry
        if ordinal >= len(valid) or ordinal < 0:
            return None
        first = valid[ordinal]
    handle: object | None = None
    if first.isascii() and first.isdigit():
        index = int(first)
        if index >= count:
            return None
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    elif first.startswith(("GPU-", "MIG-")):
        index = -1
        for i in range(count):
            candidate = nvml.nvmlDeviceGetHandleByIndex(i)
            if _text(nvml.nvmlDeviceGetUUID(candidate)).startswith(first):
                handle, index = candidate, i
                break
        if handle is None and first.startswith("MIG-"):
            try:
                handle = nvml.nvmlDeviceGetHandleByUUID(first)
            except Exception:
                return None
        if handle is None:
            return None
    else:
        return None  # CUDA stops at an invalid entry: "" or "-1" hide every device
    name = _text(nvml.nvmlDeviceGetName(handle))
    where = f"GPU {index}" if index >= 0 else first
    return handle, f"{where} ({name})"


def _visible_entry(entry: str) -> bool:
    return (entry.isascii() and entry.isdigit()) or entry.startswith(("GPU-", "MIG-"))


_identity: dict[int, GpuFacts | None] = {}  # cached: device -> facts, once looked up


def gpu_identity(device: int | None = None) -> GpuFacts | None:
    """:func:`device_facts` of the GPU a build on CUDA device ``device`` (``device=``, default 0) uses, looked up
    once per device through NVML (None without NVML or such a GPU)."""
    ordinal = device or 0
    if ordinal not in _identity:
        facts = None
        try:
            import pynvml

            pynvml.nvmlInit()
            found = build_device(pynvml, device=ordinal)
            facts = device_facts(pynvml, found[0]) if found is not None else None
        except Exception:
            facts = None
        _identity[ordinal] = facts
    return _identity[ordinal]


def device_facts(nvml: NVML, handle: object) -> GpuFacts:
    """Name, compute capability and driver of a GPU: what makes two builds comparable."""
    facts: GpuFacts = {"name": _text(nvml.nvmlDeviceGetName(handle))}
    try:
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        facts["compute_capability"] = f"{major}.{minor}"
    except Exception:
        pass
    with contextlib.suppress(Exception):
        facts["driver"] = _text(nvml.nvmlSystemGetDriverVersion())
    return facts


def memory_at_start(nvml: NVML, handle: object, label: str) -> MemoryAtStart:
    """Total / free / used memory of the build's GPU and the processes holding it, largest first."""
    info = nvml.nvmlDeviceGetMemoryInfo(handle)
    holders: list[MemoryHolder] = []
    try:
        for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
            used = _int_or_none(proc.usedGpuMemory)
            holders.append({"pid": int(proc.pid), "used": used, "name": _proc_name(proc.pid)})
    except Exception:
        pass
    holders.sort(key=lambda h: -(h["used"] or 0))
    return {
        "device": label,
        "total": int(info.total),
        "free": int(info.free),
        "used": int(info.used),
        "processes": holders,
    }


def describe_at_start(start: MemoryAtStart) -> str:
    """'GPU 0 (NVIDIA H200) at build start: 2,166 MiB used, 141,611 MiB free of 143,776 MiB; held by pid 528
    python (1,542 MiB)'."""
    text = (
        f"{start['device']} at build start: {_mib(start['used'])} used, {_mib(start['free'])} free of "
        f"{_mib(start['total'])}"
    )
    holders = [
        f"pid {h['pid']}{' ' + h['name'] if h['name'] else ''} ({_mib(h['used']) if h['used'] is not None else '?'})"
        for h in start["processes"][:5]
    ]
    if holders:
        more = len(start["processes"]) - len(holders)
        text += "; held by " + ", ".join(holders) + (f" and {more} more" if more > 0 else "")
    return text


# -- TensorRT's insufficient-memory tactic skips ---------------------------------------------------------------
# TensorRT 10: "UNSUPPORTED_STATE: Skipping tactic 33 due to insufficient memory on requested size of 629145600
# detected for tactic 0xa5...": bytes. TensorRT 8 spelled it "insuficient" and gave MiB.
_SKIP = re.compile(r"Skipping tactic \S+ due to insuf+icient memory on requested size of ([0-9]+)")
_REQUEST = re.compile(r"Tactic Device request: ([0-9]+)\s*MB Available: ([0-9]+)\s*MB")


def memory_skips(messages: Iterable[str]) -> MemorySkips | None:
    """{"count", "largest_request" (bytes), "free" (bytes TensorRT saw then, or None)} over a build's lines."""
    skips, requests, largest, free = 0, 0, 0, None
    for message in messages:
        skip = _SKIP.search(message)
        request = _REQUEST.search(message)
        if skip:
            skips += 1
            size = count_from_decimal(skip.group(1), MIB if "insuficient" in message else 1)  # TensorRT 8: MiB
            largest = max(largest, size or 0)  # a size past any memory (a model's name may say one) is none
        if request:
            requests += 1
            size, available = count_from_decimal(request.group(1), MIB), count_from_decimal(request.group(2), MIB)
            if size is not None and size >= largest:
                largest, free = size, available
    count = skips or requests  # TensorRT 7 logged only the "Tactic Device request" line
    if count == 0:
        return None
    return {"count": count, "largest_request": largest or None, "free": free}


def describe_skips(skips: MemorySkips, free_at_start: int | None = None) -> str:
    """One line for all of a build's skips, with what to do."""
    parts = [f"largest request {_mib(skips['largest_request'])}"] if skips["largest_request"] else []
    if skips["free"] is not None:
        parts.append(f"{_mib(skips['free'])} free then")
    elif free_at_start is not None:
        parts.append(f"{_mib(free_at_start)} free at build start")
    detail = f" ({', '.join(parts)})" if parts else ""
    return (
        f"TensorRT skipped {skips['count']} tactic(s) for lack of free GPU memory{detail}: the engine is valid but "
        "may be slower. Free GPU memory other processes hold (e.g. torch.cuda.empty_cache() in the notebook), or "
        "set workspace= to cap what tactics may request"
    )


def memory_skip_note(records: Iterable[Mapping[str, object]], resources: ResourceSampler | None = None) -> str | None:
    """The one line for a build's insufficient-memory skips (None without any), with the free memory at start."""
    skips = memory_skips(str(r.get("message", "")) for r in records)
    if skips is None:
        return None
    start = resources.gpu_at_start() if resources is not None else None
    return describe_skips(skips, start["free"] if start else None)


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _int_or_none(value: SupportsInt | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _proc_name(pid: int) -> str:
    try:
        import psutil

        return str(psutil.Process(pid).name())
    except Exception:
        return ""


def _mib(value: int | None) -> str:
    return f"{value / MIB:,.0f} MiB" if json_count(value) else "?"  # total: a huge size would raise OverflowError
