"""Backend detection initialises no CUDA in the user's process, and a too-old driver gets a message naming the extra
that fits. NVIDIA's driver cannot run here: a fake libcuda.so.1 (tests/native/fake_libcuda.c) logs each call with
its process id, and a fake ``tensorrt`` module stands in for NVIDIA's wheels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

# NVIDIA's module as it imports on a GPU host; its Builder fails as pybind11 reports a null createInferBuilder()
# (python/src/infer/pyCore.cpp: `py::init([](ILogger& logger) { return nvinfer1::createInferBuilder(logger); })`).
FAKE_TENSORRT = textwrap.dedent("""
    __version__ = "11.4.0.106"
    class IProgressMonitor:
        def __init__(self): pass
    class ILogger:
        def __init__(self): pass
    class BuilderFlag:
        pass
    class Builder:
        def __init__(self, logger):
            raise TypeError("pybind11::init(): factory function returned nullptr")
""")


def _site(tmp_path: Path, cuda_major: int | None = 13) -> Path:
    """A directory holding the fake ``tensorrt`` and, like the real wheels, a ``tensorrt_cu13_libs`` distribution."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "tensorrt.py").write_text(FAKE_TENSORRT)
    if cuda_major is not None:
        info = site / f"tensorrt_cu{cuda_major}_libs-11.4.0.106.dist-info"
        info.mkdir()
        name = f"tensorrt_cu{cuda_major}_libs"
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 11.4.0.106\n")
    return site


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("TRT_WIDGET_BACKEND", "CUDA_VISIBLE_DEVICES")}
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environment)


def _calls(log: Path) -> list[tuple[str, int]]:
    if not log.exists():
        return []
    return [(name, int(pid)) for name, pid in (line.split() for line in log.read_text().splitlines())]


DETECT = textwrap.dedent("""
    import json, os, sys
    from trt_widget import _backend
    # an NVIDIA device node as on a GPU host, or none as on a CPU machine, whatever this machine has
    _backend.gpu_device_nodes = lambda: ["/dev/nvidia0"] if sys.argv[1] == "node" else []
    kind = _backend.select_backend()[0]
    maps = [line.split()[-1] for line in open("/proc/self/maps") if "libcuda" in line]
    print(json.dumps({"kind": kind, "pid": os.getpid(), "libcuda_mapped": maps}))
""")


@pytest.fixture
def fake_cuda(tmp_path: Path, native_lib: Callable[[str, str], Path]) -> dict[str, str]:
    lib = native_lib("fake_libcuda.c", "libcuda.so.1")
    return {"LD_LIBRARY_PATH": str(lib.parent), "TRT_WIDGET_FAKE_CUDA_LOG": str(tmp_path / "cuda.log")}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_detection_with_a_gpu_runs_cuinit_only_in_a_probe(tmp_path: Path, fake_cuda: dict[str, str]) -> None:
    env = {**fake_cuda, "PYTHONPATH": f"{_site(tmp_path)}:{os.getcwd()}"}
    done = _run(DETECT.replace("sys.argv[1]", "'node'"), env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["kind"] == "tensorrt"  # the probe saw the (fake) device
    assert report["libcuda_mapped"] == []  # nothing of CUDA in the user's process ...
    calls = _calls(Path(fake_cuda["TRT_WIDGET_FAKE_CUDA_LOG"]))
    assert ("cuInit", report["pid"]) not in calls  # ... and cuInit never called there
    assert [name for name, pid in calls] == ["cuInit", "cuDeviceGetCount"]  # but in the probe, once


@pytest.mark.parametrize(
    ("nodes", "visible"), [("none", None), ("node", ""), ("node", "-1")], ids=["no device node", "CVD empty", "CVD -1"]
)
def test_no_gpu_is_decided_without_any_cuda_call(
    tmp_path: Path, fake_cuda: dict[str, str], nodes: str, visible: str | None
) -> None:
    env = {**fake_cuda, "PYTHONPATH": f"{_site(tmp_path)}:{os.getcwd()}"}
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    done = _run(DETECT.replace("sys.argv[1]", repr(nodes)), env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["kind"] == "rtx" and report["libcuda_mapped"] == []
    assert _calls(Path(fake_cuda["TRT_WIDGET_FAKE_CUDA_LOG"])) == []


BUILD = textwrap.dedent("""
    import os
    from trt_widget import Build, models
    print(os.getpid())
    b = Build(models.deep_residual(2), history=False, isolation=ISOLATION).start()
    print(b.wait(120)); print(b.error)
""")


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_too_old_driver_names_the_cuda_12_extra(tmp_path: Path, fake_cuda: dict[str, str], isolation: str) -> None:
    """R550 (CUDA 12.4) with TensorRT 11.4 for CUDA 13: Builder() is null; the message reads the driver version
    in the process that builds (the worker under process isolation) and names the extra that fits."""
    env = {**fake_cuda, "PYTHONPATH": f"{_site(tmp_path)}:{os.getcwd()}", "TRT_WIDGET_BACKEND": "tensorrt"}
    done = _run(BUILD.replace("ISOLATION", repr(isolation)), {**env, "TRT_WIDGET_FAKE_CUDA_VERSION": "12040"})
    assert done.returncode == 0, done.stderr
    pid, status, error = done.stdout.strip().splitlines()[-3:]
    assert status == "failed"
    assert "NVIDIA TensorRT 11.4.0.106 could not create a builder" in error
    assert "the NVIDIA driver supports CUDA 12.4, but this TensorRT is built for CUDA 13" in error
    assert "pip install 'trt_widget[tensorrt-cu12]'" in error and "update the driver" in error
    assert "trt_widget[rtx]" not in error  # the GPU is fine: no advice to build without it
    calls = _calls(Path(fake_cuda["TRT_WIDGET_FAKE_CUDA_LOG"]))
    versions = [pid for name, pid in calls if name == "cuDriverGetVersion"]
    assert len(versions) == 1 and (versions[0] == int(pid)) == (isolation == "thread")  # asked where it builds


def test_a_driver_new_enough_is_not_blamed(tmp_path: Path, fake_cuda: dict[str, str]) -> None:
    env = {**fake_cuda, "PYTHONPATH": f"{_site(tmp_path)}:{os.getcwd()}", "TRT_WIDGET_BACKEND": "tensorrt"}
    done = _run(BUILD.replace("ISOLATION", "'thread'"), {**env, "TRT_WIDGET_FAKE_CUDA_VERSION": "13000"})
    error = done.stdout.strip().splitlines()[-1]
    assert "the NVIDIA driver supports CUDA 13.0, yet no CUDA GPU is usable by this process" in error
    assert "nvidia-smi" in error and "[tensorrt-cu12]" not in error
