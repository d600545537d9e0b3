"""GPU memory figures that say whose they are, the memory at build start, TensorRT's insufficient-memory skips in
one line, and a worker the OOM killer ended named so. No NVML here: ``FakeNvml`` reproduces pynvml's calls as
measured on an H200 (driver 580, NVML lists the container's pids; a CUDA process holding a 1 GiB tensor shows
1,542 MiB for its pid, 2,166 MiB used on the device)."""

from __future__ import annotations

import os
import signal
import sys
import time
import types
from collections.abc import Callable
from typing import Any, TypedDict, cast

import psutil
import pytest

from trt_widget import Build, _engine, _gpu, models
from trt_widget._resources import ResourceSampler, _Gpu
from trt_widget.runners import _process

GIB = 1 << 30


class NVMLError(Exception):
    pass


class FakeDevice(TypedDict):
    uuid: str
    name: str
    used: int


class FakeNvml(types.ModuleType):
    """Two GPUs; process lists and utilisation as NVML reports them. ``mig`` makes utilisation unsupported."""

    def __init__(self, procs: dict[int, list[tuple[int, int]]], mig: bool = False) -> None:
        super().__init__("pynvml")
        self.procs, self.mig = procs, mig
        self.devices: list[FakeDevice] = [
            {"uuid": "GPU-0e3e75fb-a849-d495-55e4-6fa2a459ad6e", "name": "NVIDIA H200", "used": 2 * GIB},
            {"uuid": "GPU-77aa0000-1111-2222-3333-444455556666", "name": "NVIDIA A100-SXM4-80GB", "used": 50 * GIB},
        ]

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:
        raise NVMLError("not found")

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return str(self.devices[h]["uuid"])

    def nvmlDeviceGetName(self, h: int) -> str:
        return self.devices[h]["name"]

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return (9, 0) if h == 0 else (8, 0)

    def nvmlSystemGetDriverVersion(self) -> str:
        return "580.159.04"

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        used = self.devices[h]["used"]
        return types.SimpleNamespace(total=140 * GIB, used=used, free=140 * GIB - used)

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        return [types.SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in self.procs.get(h, [])]

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        if self.mig:
            raise NVMLError("Not Supported")
        return types.SimpleNamespace(gpu=37, memory=5)


@pytest.fixture
def nvml(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeNvml]:
    def install(procs: dict[int, list[tuple[int, int]]], mig: bool = False, visible: str | None = None) -> FakeNvml:
        fake = FakeNvml(procs, mig)
        monkeypatch.setitem(sys.modules, "pynvml", fake)
        if visible is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        return fake

    return install


def test_the_builders_own_memory_when_nvml_lists_its_pid(nvml: Callable[..., FakeNvml]) -> None:
    nvml({0: [(4242, 1542 << 20), (99, 300 << 20)], 1: [(4242, 7 * GIB)]})
    gpu = _Gpu()
    assert gpu.sample(4242) == (1542 << 20, 37.0)  # its memory on the device it builds on, not on GPU 1
    assert gpu.scope == "the builder process (pid 4242) on GPU 0 (NVIDIA H200)"
    assert gpu.facts == {"name": "NVIDIA H200", "compute_capability": "9.0", "driver": "580.159.04"}


def test_an_unlisted_pid_gives_the_device_figure_labelled_so_never_all_gpus(nvml: Callable[..., FakeNvml]) -> None:
    nvml({0: [(1, 1542 << 20)]})  # host pids, as NVML in a container with an older driver reports them
    gpu = _Gpu()
    used, _ = gpu.sample(4242)
    assert used == 2 * GIB  # GPU 0's used memory, not GPU 0 + GPU 1 (52 GiB)
    assert gpu.scope is not None and gpu.scope.startswith("all processes on GPU 0 (NVIDIA H200): NVML does not list")


@pytest.mark.parametrize(
    ("visible", "device"),
    [
        ("1", "GPU 1 (NVIDIA A100-SXM4-80GB)"),
        ("GPU-77aa", "GPU 1 (NVIDIA A100-SXM4-80GB)"),
        ("1,0", "GPU 1 (NVIDIA A100-SXM4-80GB)"),
    ],
)
def test_cuda_visible_devices_picks_the_build_device(nvml: Callable[..., FakeNvml], visible: str, device: str) -> None:
    nvml({}, visible=visible)
    gpu = _Gpu()
    assert gpu.device == device
    assert gpu.sample(4242)[0] == 50 * GIB


@pytest.mark.parametrize("visible", ["", "-1", "7"])
def test_no_visible_device_means_no_gpu_figures(nvml: Callable[..., FakeNvml], visible: str) -> None:
    nvml({}, visible=visible)
    gpu = _Gpu()
    assert gpu.nvml is None and gpu.sample(4242) == (None, None)


def test_on_mig_utilisation_is_unsupported_and_memory_still_sampled(nvml: Callable[..., FakeNvml]) -> None:
    nvml({0: [(4242, GIB)]}, mig=True)
    gpu = _Gpu()
    assert gpu.sample(4242) == (GIB, None)
    assert gpu.sample(4242) == (GIB, None)  # sampling stays on


def test_memory_at_build_start_names_the_holders(nvml: Callable[..., FakeNvml]) -> None:
    nvml({0: [(os.getpid(), 1542 << 20), (99999999, None)]})
    start = _Gpu().at_start
    assert start is not None and start["free"] == 138 * GIB and start["used"] == 2 * GIB
    assert [h["pid"] for h in start["processes"]] == [os.getpid(), 99999999]
    text = _gpu.describe_at_start(start)
    assert text.startswith("GPU 0 (NVIDIA H200) at build start: 2,048 MiB used, 141,312 MiB free of 143,360 MiB")
    assert f"held by pid {os.getpid()} {psutil.Process().name()}" in text
    assert "(1,542 MiB)" in text and "pid 99999999 (?)" in text


# Real lines, each from a public build log:
SKIP_LINES_TRT10 = [  # ultralytics/ultralytics#22271 (TensorRT 10 on a Jetson AGX Orin, 2025)
    "UNSUPPORTED_STATE: Skipping tactic 33 due to insufficient memory on requested size of 629145600 detected for "
    "tactic 0xa5a46bfbd719d757.",
    "Tactic Device request: 600MB Available: 302MB. Device memory is insufficient to use tactic.",
    "UNSUPPORTED_STATE: Skipping tactic 34 due to insufficient memory on requested size of 629145600 detected for "
    "tactic 0x9d562342491490bf.",
    "Tactic Device request: 600MB Available: 302MB. Device memory is insufficient to use tactic.",
]
SKIP_LINES_TRT8 = [  # ultralytics/ultralytics#14751 (TensorRT 8 on a Jetson Nano, 2024)
    "Tactic Device request: 538MB Available: 166MB. Device memory is insufficient to use tactic.",
    "Skipping tactic 3 due to insuficient memory on requested size of 538 detected for tactic 4.\nTry decreasing "
    "the workspace size with IBuilderConfig::setMaxWorkspaceSize().",
    "Tactic Device request: 806MB Available: 187MB. Device memory is insufficient to use tactic.",
    "Skipping tactic 3 due to insuficient memory on requested size of 806 detected for tactic 4.\nTry decreasing "
    "the workspace size with IBuilderConfig::setMaxWorkspaceSize().",
]
SKIP_LINE_TRTLLM = (  # NVIDIA/TensorRT-LLM#493 (2023)
    "UNSUPPORTED_STATESkipping tactic 4 due to insufficient memory on requested size of 66048 detected for tactic "
    "0x000000000000001f."
)


def test_memory_skips_from_real_lines() -> None:
    assert _gpu.memory_skips(SKIP_LINES_TRT10) == {"count": 2, "largest_request": 600 << 20, "free": 302 << 20}
    assert _gpu.memory_skips(SKIP_LINES_TRT8) == {"count": 2, "largest_request": 806 << 20, "free": 187 << 20}
    assert _gpu.memory_skips([SKIP_LINE_TRTLLM]) == {"count": 1, "largest_request": 66048, "free": None}
    assert _gpu.memory_skips(["[MemUsageChange] Init cuDNN: CPU +241, GPU -7"]) is None


def _network_logging_skips(network: Any) -> None:
    """A one-layer network; while it is defined, TensorRT 'logs' the skip lines on the builder thread."""
    from trt_widget import trt

    for line in SKIP_LINES_TRT10 * 5:
        assert _engine._router is not None
        _engine._router.log(trt.ILogger.Severity.WARNING, line)
    x = network.add_input("x", trt.float32, (1, 4))
    network.mark_output(network.add_activation(x, trt.ActivationType.RELU).get_output(0))


def test_a_build_with_memory_skips_says_so_in_one_line() -> None:
    build = Build(_network_logging_skips, isolation="thread", history=False).start()
    assert build.wait(120) == "succeeded", build.error
    assert build.status_detail.count("TensorRT skipped") == 1
    assert (
        "TensorRT skipped 10 tactic(s) for lack of free GPU memory (largest request 600 MiB, 302 MiB free then)"
        in build.status_detail
    )
    assert "set workspace=" in build.status_detail
    assert "error line" not in build.status_detail  # the skips are expected, not errors


def test_a_worker_the_oom_killer_ended_is_named_so(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = iter([3, 4])  # the kernel's oom_kill counter: at the job's start, then after the worker died
    monkeypatch.setattr(_process, "oom_kill_count", lambda: next(counts, 4))
    build = Build(models.deep_residual(400), history=False).start()
    deadline = time.monotonic() + 120
    while build.model.innermost_running() is None and not build.done() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert build.child_pid
    os.kill(build.child_pid, signal.SIGKILL)  # what the OOM killer sends
    assert build.wait(60) == "failed"
    assert "was killed by the kernel's out-of-memory killer (SIGKILL; its OOM-kill count rose" in str(build.error)


def test_the_oom_kill_counter_reads_the_kernel() -> None:
    count = _gpu.oom_kill_count()
    assert count is None or count >= 0
    if os.path.exists("/proc/vmstat"):
        assert count is not None


def test_little_free_gpu_memory_at_build_start_is_a_warning_naming_the_holders(
    nvml: Callable[..., FakeNvml], model_bytes: bytes
) -> None:
    fake = nvml({0: [(os.getpid(), 100 * GIB)]})
    fake.devices[0]["used"] = 101 * GIB  # e.g. the notebook's own PyTorch cache
    build = Build(model_bytes, isolation="thread", history=False).start()
    assert build.wait(120) == "succeeded", build.error
    warned = [r["message"] for r in build.problems if r["message"].startswith("GPU memory: little is free.")]
    assert warned == [
        "GPU memory: little is free. GPU 0 (NVIDIA H200) at build start: 103,424 MiB used, 39,936 MiB free of "
        f"143,360 MiB; held by pid {os.getpid()} {psutil.Process().name()} (102,400 MiB)"
    ]


def test_enough_free_gpu_memory_is_not_a_warning(nvml: Callable[..., FakeNvml], model_bytes: bytes) -> None:
    nvml({0: [(os.getpid(), GIB)]})
    build = Build(model_bytes, isolation="thread", history=False).start()
    assert build.wait(120) == "succeeded", build.error
    assert not [r for r in build.problems if r["message"].startswith("GPU memory")]


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return models.to_bytes(models.deep_residual(1))


# -- issue 35: device= is the GPU whose memory is sampled and whose identity keys the history -------------------


@pytest.mark.parametrize(
    ("visible", "device", "label"),
    [
        (None, 1, "GPU 1 (NVIDIA A100-SXM4-80GB)"),
        ("1,0", 1, "GPU 0 (NVIDIA H200)"),
        ("GPU-77aa,GPU-0e3e", 1, "GPU 0 (NVIDIA H200)"),
        ("1", 0, "GPU 1 (NVIDIA A100-SXM4-80GB)"),
    ],
)
def test_device_picks_the_gpu_sampled(
    nvml: Callable[..., FakeNvml], visible: str | None, device: int, label: str
) -> None:
    """NVML numbers GPUs as the host does; device= numbers them as CUDA does, among CUDA_VISIBLE_DEVICES."""
    nvml({}, visible=visible)
    assert _Gpu(device).device == label


@pytest.mark.parametrize(("visible", "device"), [(None, 2), ("1", 1), ("0,-1,1", 2)])
def test_a_device_cuda_does_not_see_means_no_gpu_figures(
    nvml: Callable[..., FakeNvml], visible: str | None, device: int
) -> None:
    nvml({}, visible=visible)
    assert _Gpu(device).nvml is None  # never another GPU's figures


def test_a_build_on_device_1_samples_gpu_1_and_keys_its_history_by_it(
    nvml: Callable[..., FakeNvml], monkeypatch: pytest.MonkeyPatch
) -> None:
    from trt_widget.history._keys import like_facts

    nvml({0: [(4242, GIB)], 1: [(os.getpid(), 3 * GIB)]})
    monkeypatch.setattr(_gpu, "_identity", {})
    build = types.SimpleNamespace(
        options=types.SimpleNamespace(device=1, timing_cache=None),
        elapsed_s=0.0,
        child_pid=None,
        logger=types.SimpleNamespace(records=[]),
    )
    sampler = ResourceSampler(cast(Build, build), interval=0.05)  # a stand-in: what the sampler reads of a Build
    sampler.start()
    sampler.stop()
    summary = sampler.summary()
    assert summary["peak_gpu_mem"] == 3 * GIB  # this process's memory on GPU 1, not 1 GiB of pid 4242 on GPU 0
    assert summary["gpu_scope"] == f"the builder process (pid {os.getpid()}) on GPU 1 (NVIDIA A100-SXM4-80GB)"
    device = summary["gpu_device"]
    assert device is not None and device["name"] == "NVIDIA A100-SXM4-80GB"
    assert like_facts(cast(Build, build))["gpu"]["name"] == "NVIDIA A100-SXM4-80GB"
    build.options.device = None
    assert like_facts(cast(Build, build))["gpu"]["name"] == "NVIDIA H200"
