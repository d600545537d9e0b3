"""Resource sampling during a build: process RSS (psutil) and GPU memory/utilisation (NVML) at ~2 Hz.

Both libraries are optional: without psutil ``build.resources`` stays None; without a working NVML the GPU
columns are None. The sampler runs from ``Build.start()`` (its on_start hook) to the end of the build.
TensorRT's own "[MemUsageStats] Peak memory usage ..." log line is reported as ``trt_peak``.
"""

from __future__ import annotations

import os
import re
import threading
from typing import TYPE_CHECKING, TypedDict

from ._gpu import UNIFIED_MEMORY, build_device, describe_at_start, device_facts, jetson, memory_at_start
from ._json import count_from_decimal

if TYPE_CHECKING:
    import psutil

    from ._build import Build
    from ._gpu import NVML, GpuFacts, MemoryAtStart
    from ._tensorrt_log import LogRecord

INTERVAL_S = 0.5
MAX_STORED = 600  # stored samples; beyond this, pairs merge (keeping maxima) and the interval doubles
MAX_SENT = 300  # samples in a snapshot
LOW_FREE = 0.5  # warn at build start when less than this share of the build's GPU memory is free
_TRT_PEAK = re.compile(r"\[MemUsageStats\] Peak memory usage of TRT CPU/GPU memory allocators:\s*(.+)$")
_MIB = re.compile(r"(CPU|GPU)\s+([0-9]+(?:\.[0-9]+)?)\s*MiB")

Sample = list[float | None]  # [t_s, rss_bytes, gpu_mem_bytes | None, gpu_util_percent | None, cpu_percent]


class ResourcesSnapshot(TypedDict):
    """What a front end shows of the sampling (``snapshot()``): the samples (≤ MAX_SENT) and the peaks."""

    samples: list[Sample]
    peak_rss: int
    peak_gpu_mem: int | None
    trt_peak: str | None
    scope: str
    gpu_scope: str | None


class ResourcesSummary(TypedDict):
    """Peaks for reports and history records (``summary()``)."""

    peak_rss: int | None
    peak_gpu_mem: int | None
    trt_peak: str | None
    trt_peak_cpu_bytes: int | None
    trt_peak_gpu_bytes: int | None
    samples: int
    sampled_pids: list[int]
    gpu: bool
    gpu_scope: str | None
    gpu_at_start: MemoryAtStart | None
    gpu_device: GpuFacts | None
    memory_kind: str | None


def attach_resources(build: Build) -> None:
    """Set ``build.resources`` to a :class:`ResourceSampler` when psutil is importable."""
    try:
        import psutil  # noqa: F401
    except ImportError:
        return
    sampler = build.resources = ResourceSampler(build)
    if hasattr(build, "on_start"):
        build.on_start(lambda _build: sampler.start())
    else:  # older Build without the start hook: begin at the first phase event
        build.model.subscribe(lambda _event, _phase: sampler.start() if sampler._thread is None else None)
    build.add_done_callback(lambda _build: sampler.stop())


class _Gpu:
    """NVML access to the GPU the build uses (CUDA's device ``device``, the build's ``device=`` — 0 by default —
    under ``CUDA_VISIBLE_DEVICES``), or nothing.

    The memory figure is the builder process's own where NVML lists its pid, else the whole device's (NVML in
    containers with older drivers lists host pids), and ``scope`` says which. NVML failing turns sampling off;
    utilisation alone failing (unsupported on MIG) leaves memory on.
    """

    def __init__(self, device: int | None = None) -> None:
        self.nvml: NVML | None = None
        self.handle: object = None
        self.device = ""
        self.scope: str | None = None
        self.at_start: MemoryAtStart | None = None
        self.facts: GpuFacts | None = None
        self._util = True
        try:
            import pynvml

            pynvml.nvmlInit()
            found = build_device(pynvml, device=device)
            if found is not None:
                self.handle, self.device = found
                self.nvml = pynvml
                self.facts = device_facts(pynvml, self.handle)
                self.at_start = memory_at_start(pynvml, self.handle, self.device)
        except Exception:
            self.nvml = None

    def sample(self, pid: int) -> tuple[int | None, float | None]:
        """(GPU memory of ``pid`` on the build's device — or of the device when NVML does not list it, utilisation)."""
        nvml = self.nvml
        if nvml is None:
            return None, None
        try:
            used, seen = 0, False
            try:
                for proc in nvml.nvmlDeviceGetComputeRunningProcesses(self.handle):
                    if proc.pid == pid and proc.usedGpuMemory is not None:
                        used += int(proc.usedGpuMemory)
                        seen = True
            except Exception:
                pass
            if seen:
                self.scope = f"the builder process (pid {pid}) on {self.device}"
            else:
                used = int(nvml.nvmlDeviceGetMemoryInfo(self.handle).used)
                self.scope = (
                    f"all processes on {self.device}: NVML does not list the builder's pid {pid} (in a container "
                    "with an older driver it lists host pids)"
                )
            util = None
            if self._util:
                try:
                    util = float(nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)
                except Exception:  # NVML_ERROR_NOT_SUPPORTED on MIG instances
                    self._util = False
            return used, util
        except Exception:
            self.nvml = None
            return None, None


class ResourceSampler:
    """Samples the build's process (the child under process isolation) on a daemon thread.

    ``snapshot()`` is cheap (cached until a new sample arrives) and safe from any thread.
    """

    def __init__(self, build: Build, interval: float = INTERVAL_S) -> None:
        self.build = build
        self.interval = interval
        self.samples: list[Sample] = []
        self.peak_rss = 0
        self.peak_gpu_mem: int | None = None
        self.pids: set[int] = set()  # processes sampled
        self._lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._procs: dict[int, psutil.Process] = {}
        self._gpu: _Gpu | None = None
        self._snapshot: ResourcesSnapshot | None = None
        self._snapshot_key: tuple[int, int, str | None] = (-1, -1, None)
        self._trt_peak: str | None = None
        self._last_record: LogRecord | None = None

    # -- life cycle --------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the sampler thread (once; called by ``Build.start()``)."""
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._loop, name="trt_widget-resources", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop sampling (after one last sample) and wait for the thread; safe to call twice or before start."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        options = getattr(self.build, "options", None)
        self._gpu = _Gpu(getattr(options, "device", None))  # the device the build runs on, not always GPU 0
        start = self._gpu.at_start
        if start and start["total"] and start["free"] < LOW_FREE * start["total"]:
            logger = getattr(self.build, "logger", None)
            if logger is not None:  # TensorRT will skip tactics, and the build may take far longer
                logger.log(2, f"GPU memory: little is free. {describe_at_start(start)}")
        while True:
            self._sample()
            if self._stop.wait(self.interval):
                self._sample()
                return

    def _pid(self) -> int:
        pid = getattr(self.build, "child_pid", None)
        return int(pid) if pid else os.getpid()

    def _sample(self) -> None:
        import psutil

        pid = self._pid()
        try:
            proc = self._procs.get(pid)
            if proc is None:
                proc = self._procs[pid] = psutil.Process(pid)
            rss = int(proc.memory_info().rss)
            cpu = round(float(proc.cpu_percent(interval=None)), 1)  # since the last sample (0.0 at the first)
        except (psutil.Error, OSError):
            return  # the child already exited
        gpu_mem, gpu_util = self._gpu.sample(pid) if self._gpu is not None else (None, None)
        sample = [round(self.build.elapsed_s, 3), rss, gpu_mem, gpu_util, cpu]
        with self._lock:
            self.pids.add(pid)
            self.samples.append(sample)
            self.peak_rss = max(self.peak_rss, rss)
            if gpu_mem is not None:
                self.peak_gpu_mem = max(self.peak_gpu_mem or 0, gpu_mem)
            if len(self.samples) > MAX_STORED:
                self.samples = _halve(self.samples)
                self.interval *= 2

    # -- readers -----------------------------------------------------------------------------------------
    def trt_peak(self) -> str | None:
        """TensorRT's allocator peak, e.g. "CPU 97 MiB, GPU 0 MiB" (the newest such log line), or None."""
        records = self.build.logger.records
        with self._log_lock:
            if not records or records[-1] is self._last_record:
                return self._trt_peak
            lines = list(records)  # one C-level copy: the builder thread may append meanwhile
            for record in reversed(lines):  # only the lines logged since the last look
                if record is self._last_record:
                    break
                match = _TRT_PEAK.search(record["message"])
                if match:
                    self._trt_peak = match.group(1).strip()
                    break
            self._last_record = lines[-1]
            return self._trt_peak

    def snapshot(self) -> ResourcesSnapshot | None:
        """``{"samples": [[t_s, rss, gpu_mem, gpu_util], ...] (≤ 300), "peak_rss", "peak_gpu_mem", "trt_peak"}``."""
        peak = self.trt_peak()
        with self._lock:
            key = (len(self.samples), id(self.samples), peak)
            if key == self._snapshot_key and self._snapshot is not None:
                return self._snapshot
            if not self.samples:
                return None
            samples = [list(s) for s in self.samples]
            while len(samples) > MAX_SENT:
                samples = _halve(samples)
            self._snapshot = {
                "samples": samples,
                "peak_rss": self.peak_rss,
                "peak_gpu_mem": self.peak_gpu_mem,
                "trt_peak": peak,
                "scope": self.scope(),
                "gpu_scope": self._gpu.scope if self._gpu is not None else None,
            }
            self._snapshot_key = key
            return self._snapshot

    def scope(self) -> str:
        """Whose memory and CPU the samples are: the builder process, or this one for a thread build."""
        pid = getattr(self.build, "child_pid", None)
        return f"the builder process (pid {pid})" if pid else f"this process (pid {os.getpid()}), which runs the build"

    def summary(self) -> ResourcesSummary:
        """Peaks for reports and history records: peak_rss, peak_gpu_mem, trt_peak (+ parsed MiB), samples."""
        peak = self.trt_peak()
        parsed = {kind.lower(): count_from_decimal(mib, 1 << 20) for kind, mib in _MIB.findall(peak or "")}
        with self._lock:
            return {
                "peak_rss": self.peak_rss or None,
                "peak_gpu_mem": self.peak_gpu_mem,
                "trt_peak": peak,
                "trt_peak_cpu_bytes": parsed.get("cpu"),  # None past any memory: a model's name may say one
                "trt_peak_gpu_bytes": parsed.get("gpu"),
                "samples": len(self.samples),
                "sampled_pids": sorted(self.pids),
                "gpu": self._gpu is not None and self._gpu.nvml is not None,
                "gpu_scope": self._gpu.scope if self._gpu is not None else None,
                "gpu_at_start": self._gpu.at_start if self._gpu is not None else None,
                "gpu_device": self._gpu.facts or None if self._gpu is not None else None,
                "memory_kind": UNIFIED_MEMORY if jetson() else None,
            }

    def gpu_at_start(self) -> MemoryAtStart | None:
        """The build's GPU memory when sampling began (None before, or without NVML)."""
        return self._gpu.at_start if self._gpu is not None else None

    def report(self) -> str:
        """One line for people: "peak RSS 812 MiB (5 samples); TensorRT allocators: CPU 97 MiB, GPU 0 MiB"."""
        s = self.summary()
        parts = [f"peak RSS {_mib(s['peak_rss'])} ({s['samples']} samples)"]
        if s["peak_gpu_mem"] is not None:
            parts.append(f"peak GPU memory {_mib(s['peak_gpu_mem'])} ({s['gpu_scope']})")
        if s["gpu_at_start"]:
            parts.append(describe_at_start(s["gpu_at_start"]))
        if s["memory_kind"]:
            parts.append(s["memory_kind"])
        if s["trt_peak"]:
            parts.append(f"TensorRT allocators: {s['trt_peak']}")
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"<ResourceSampler {self.report()}>"


def _halve(samples: list[Sample]) -> list[Sample]:
    """Merge neighbouring samples pairwise, keeping the later time and the maxima (peaks survive)."""
    out = []
    for i in range(0, len(samples) - 1, 2):
        a, b = samples[i], samples[i + 1]
        out.append([b[0], *(_max(x, y) for x, y in zip(a[1:], b[1:], strict=False))])
    if len(samples) % 2:
        out.append(list(samples[-1]))
    return out


def _max(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


def _mib(value: int | None) -> str:
    return "?" if value is None else f"{value / (1 << 20):,.0f} MiB"
