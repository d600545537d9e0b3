"""The GPU contract suite: what a user with an NVIDIA GPU runs against their installed TensorRT (``pytest -m
contract``), and what runs here on TensorRT for RTX on a CPU. No RTX-only phase names, expectations per backend,
deadlines that grow with the build (``TRT_WIDGET_CONTRACT_SCALE`` multiplies them); what a backend cannot do
skips with the reason. docs/gpu.md ("Checking a GPU machine") says what a GPU run covers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from trt_widget import Build, _backend, models, trt
from trt_widget._phases import PhaseRow

pytestmark = pytest.mark.contract

KIND = _backend.select_backend()[0]
RTX = KIND == "rtx"
SCALE = float(os.environ.get("TRT_WIDGET_CONTRACT_SCALE", "1"))


def deadline(blocks: int) -> float:
    """Seconds for a deep_residual(blocks) build: NVIDIA TensorRT times tactics for every layer, RTX on a CPU does
    not; both get room for a loaded machine."""
    per_block = 0.05 if RTX else 1.5
    return (120.0 + per_block * blocks) * SCALE


def _phases(build: Build) -> list[PhaseRow]:
    return list(build.timings())


def test_a_build_succeeds_with_a_closed_phase_tree() -> None:
    build = Build(models.deep_residual(4), history=False).start()
    assert build.wait(deadline(4)) == "succeeded", build.error
    rows = _phases(build)
    assert rows and all(r["status"] != "running" for r in rows)
    assert all(r["end_s"] is not None and r["end_s"] >= r["start_s"] for r in rows)
    names = {r["name"] for r in rows}
    if RTX:
        assert "Determining refit engines" in names  # RTX's own phase; never expected from NVIDIA TensorRT
    assert build.engine and len(build.engine) > 0


def test_stop_ends_a_running_build_on_every_backend() -> None:
    blocks = 400
    build = Build(models.deep_residual(blocks), history=False).start()
    started = threading.Event()
    build.model.subscribe(lambda event, phase: started.set() if event == "phase_start" else None)
    assert started.wait(deadline(blocks)), "no phase started"
    build.stop("contract: stop")
    status = build.wait(deadline(blocks))
    assert status in ("cancelled", "succeeded"), build.error  # succeeded: TensorRT had no step left to cancel at
    if status == "cancelled":
        assert all(r["status"] != "running" for r in _phases(build))


FORK_AFTER_DETECTION = textwrap.dedent("""
    import ctypes, json, os, sys
    import trt_widget
    trt_widget.select_backend()
    maps = [l.split()[-1] for l in open("/proc/self/maps") if "libcuda" in l]
    pid = os.fork()
    if pid == 0:
        cuda = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        ok = cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"maps": maps, "child": os.waitstatus_to_exitcode(status)}))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and /proc/self/maps: Linux only")
def test_a_child_forked_after_backend_detection_can_use_cuda() -> None:
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        pytest.skip("no NVIDIA driver (libcuda) here: no CUDA for a forked child to lose")
    done = subprocess.run([sys.executable, "-c", FORK_AFTER_DETECTION], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["maps"] == []  # detection loaded no CUDA in the user's process
    assert report["child"] == 0  # cuInit works in the forked child (it fails after a parent's cuInit)


def test_fp16_builds_where_the_backend_has_weak_typing() -> None:
    if not _backend.capabilities()["weak_typing"]:
        pytest.skip(
            f"{_backend.capabilities()['label']} builds strongly typed networks only: no FP16 flag (10.x has it)"
        )
    build = Build(models.deep_residual(4), fp16=True, strongly_typed=False, history=False).start()
    assert build.wait(deadline(4)) == "succeeded", build.error


def nms_model(boxes: int = 64, classes: int = 3, keep: int = 10) -> Any:
    """One EfficientNMS_TRT node, as exported detectors end (a TensorRT standard plugin)."""
    from onnx import TensorProto, helper

    inputs = [
        helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, boxes, 4]),
        helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, boxes, classes]),
    ]
    outputs = [
        helper.make_tensor_value_info("num_detections", TensorProto.INT32, [1, 1]),
        helper.make_tensor_value_info("detection_boxes", TensorProto.FLOAT, [1, keep, 4]),
        helper.make_tensor_value_info("detection_scores", TensorProto.FLOAT, [1, keep]),
        helper.make_tensor_value_info("detection_classes", TensorProto.INT32, [1, keep]),
    ]
    node = helper.make_node(
        "EfficientNMS_TRT",
        ["boxes", "scores"],
        [o.name for o in outputs],
        name="nms",
        background_class=-1,
        box_coding=0,
        iou_threshold=0.5,
        max_output_boxes=keep,
        plugin_version="1",
        score_activation=0,
        score_threshold=0.25,
    )
    graph = helper.make_graph([node], "nms", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _logger() -> Any:
    """trt_widget's own process-wide logger: TensorRT keeps the first logger a process registers, so a logger of
    this test's own would swallow the lines of every later thread build in the suite."""
    from trt_widget._engine import CaptureLogger, routed_logs

    with routed_logs(CaptureLogger()) as router:
        return router


def test_a_model_with_a_standard_plugin_node_builds() -> None:
    logger = _logger()
    trt.init_libnvinfer_plugins(logger, "")
    if trt.get_plugin_registry().get_creator("EfficientNMS_TRT", "1", "") is None:
        pytest.skip(f"{_backend.capabilities()['label']} ships no EfficientNMS_TRT plugin")
    build = Build(nms_model(), history=False).start()
    assert build.wait(deadline(1)) == "succeeded", build.error


def _cache_keys(data: bytes) -> set[str]:
    config = trt.Builder(_logger()).create_builder_config()
    return {str(k) for k in config.create_timing_cache(data).queryKeys()}


def test_a_timing_cache_shared_by_two_concurrent_builds_keeps_both(tmp_path: Path) -> None:
    small, wide = models.deep_residual(3, channels=8), models.deep_residual(3, channels=16)
    shared = tmp_path / "shared.cache"
    builds = [Build(m, timing_cache=shared, history=False) for m in (small, wide)]
    for b in builds:
        b.start()
    assert [b.wait(deadline(3)) for b in builds] == ["succeeded", "succeeded"], [b.error for b in builds]
    if RTX:  # its timing-cache operations are no-ops: an RTX build neither reads nor writes the file
        assert not shared.exists()
        pytest.skip("TensorRT for RTX keeps no timing-cache entries (its timing-cache operations are no-ops)")
    assert shared.stat().st_size > 0
    if not hasattr(trt.ITimingCache, "queryKeys"):  # added after 10.0 (python/src/infer/pyCore.cpp)
        pytest.skip("this TensorRT cannot list timing-cache entries (no ITimingCache.queryKeys)")
    alone = []
    for i, m in enumerate((small, wide)):
        path = tmp_path / f"alone{i}.cache"
        assert Build(m, timing_cache=path, history=False).start().wait(deadline(3)) == "succeeded"
        alone.append(_cache_keys(path.read_bytes()))
    assert _cache_keys(shared.read_bytes()) >= alone[0] | alone[1]


def test_a_stopped_build_keeps_what_it_timed(tmp_path: Path) -> None:
    """A build stopped after TensorRT timed tactics leaves a timing cache with those entries, and a build resumed
    from it keeps them: the ITimingCache the application created stays serializable after a cancelled
    build_serialized_network (NvInfer.h names no state in which ITimingCache::serialize is refused; whether it
    holds what was timed before the stop is not documented: this checks it)."""
    if RTX:
        pytest.skip("TensorRT for RTX keeps no timing-cache entries (its timing-cache operations are no-ops)")
    if not hasattr(trt.ITimingCache, "queryKeys"):  # added after 10.0 (python/src/infer/pyCore.cpp)
        pytest.skip("this TensorRT cannot list timing-cache entries (no ITimingCache.queryKeys)")
    blocks = 40
    path = tmp_path / "stopped.cache"
    build = Build(models.deep_residual(blocks), timing_cache=str(path), history=False)
    timed = threading.Event()

    def seen(event: str, phase: Any) -> None:
        name = str(phase.name).lower()  # phase names may change between versions (NvInfer.h): by what they say
        if event == "phase_finish" and any(word in name for word in ("tactic", "timing", "cost")):
            timed.set()

    build.model.subscribe(seen, steps=False)
    build.start()
    if timed.wait(deadline(blocks)):
        build.stop("contract: stop after tactic timing")
    status = build.wait(deadline(blocks))
    if status != "cancelled":
        names = sorted({r["name"] for r in _phases(build)})
        pytest.skip(f"the build {status} before a stop after its tactic timing took effect (phases: {names})")
    assert path.is_file(), "a build stopped after timing tactics left no timing cache"
    stopped = _cache_keys(path.read_bytes())
    assert stopped, "the timing cache of a build stopped after timing tactics holds no entry"
    resumed = Build(models.deep_residual(blocks), timing_cache=str(path), history=False).start()
    assert resumed.wait(deadline(blocks)) == "succeeded", resumed.error
    assert _cache_keys(path.read_bytes()) >= stopped


def test_gpu_memory_figures_say_whose_they_are() -> None:
    build = Build(models.deep_residual(4), history=False).start()
    assert build.wait(deadline(4)) == "succeeded", build.error
    assert build.resources is not None
    build.resources.stop()
    summary = build.resources.summary()
    if not summary["gpu"]:
        pytest.skip("no NVML GPU here: no GPU memory figures to label")
    scope = str(summary["gpu_scope"])
    assert scope.startswith((f"the builder process (pid {build.child_pid}) on GPU", "all processes on GPU")), scope
    at_start, device = summary["gpu_at_start"], summary["gpu_device"]
    assert at_start is not None and at_start["total"] > 0 and device is not None and device["name"]


def test_the_engine_inspector_agrees_with_the_log_record_where_the_engine_deserializes() -> None:
    """GPU machines: IEngineInspector's JSON of the engine names the layers the build's log record named. Where
    the engine cannot be deserialized (TensorRT for RTX on a CPU: cudaError 35) the error says to use the log's."""
    from trt_widget import EngineReport

    build = Build(models.deep_residual(4)).start()
    assert build.wait(deadline(4)) == "succeeded", build.status_detail
    logged = build.engine_report
    assert logged is not None, build.engine_report_reason
    assert build.engine is not None
    try:
        inspected = EngineReport.from_engine(build.engine)
    except ValueError as exc:
        assert "engine_report" in str(exc)
        if RTX:
            return
        pytest.skip(f"this machine cannot deserialize the engine: {exc}")
    assert [layer.name for layer in inspected.layers] == [layer.name for layer in logged.layers]
    assert [layer.type for layer in inspected.layers] == [layer.type for layer in logged.layers]
