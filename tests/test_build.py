"""Real TensorRT(-RTX) builds on a background thread: success, nesting, cancel, budget, options, files, life cycle."""

from __future__ import annotations

import _thread
import asyncio
import concurrent.futures
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import onnx
import pytest
from fixture_types import WaitUntil

import trt_widget
from trt_widget import Build, BuildCancelled, BuildError
from trt_widget._backend import capabilities
from trt_widget._build import FINAL
from trt_widget._phases import CANCELLED, RUNNING, PhaseRow
from trt_widget.models import deep_residual

DEADLINE = 180.0
BACKEND = trt_widget.backend_info()["backend"]


def run_coroutine(coro: Any) -> Any:
    """asyncio.run on a fresh thread: the e2e session's Playwright keeps an event loop on this one."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def finished(build: Build) -> Build:
    """Start ``build`` (if idle) and wait for its end with a generous deadline."""
    if build.status == "idle":
        build.start()
    assert build.wait(DEADLINE) in FINAL, f"build still {build.status} after {DEADLINE} s"
    return build


def check_closed_tree(rows: Sequence[PhaseRow]) -> None:
    """Every phase closed, ids dense, parents earlier, depth = parent depth + 1."""
    assert rows, "no phases were recorded"
    for i, row in enumerate(rows):
        assert row["id"] == i
        assert row["status"] != RUNNING and row["end_s"] is not None and row["duration_s"] is not None, row
        assert row["end_s"] >= row["start_s"] and row["duration_s"] >= 0
        if row["parent"] is not None:
            parent = rows[row["parent"]]
            assert row["parent"] < i and row["depth"] == parent["depth"] + 1
        else:
            assert row["depth"] == 0


def gate_at_first_phase(build: Build, until: Callable[[], bool]) -> threading.Event:
    """Hold the builder thread inside its first phase_start callback until ``until()`` (or the deadline)."""
    reached = threading.Event()

    def listener(event: str, phase: Any) -> None:
        if event == "phase_start" and not reached.is_set():
            reached.set()
            deadline = time.monotonic() + DEADLINE
            while not until() and time.monotonic() < deadline:
                time.sleep(0.005)

    build.model.subscribe(listener)
    return reached


def no_part_files(directory: Path) -> bool:
    return not [p for p in directory.iterdir() if p.name.endswith(".part")]


# -- success -----------------------------------------------------------------------------------------
def test_resnet50_builds_an_engine_with_a_nested_closed_phase_tree(resnet50_bytes: bytes) -> None:
    build = finished(Build(resnet50_bytes))
    assert build.status == "succeeded", build.status_detail
    assert build.error is None and build.status_detail == ""
    engine = build.result()
    weights = sum(len(t.raw_data) for t in onnx.load_from_string(resnet50_bytes).graph.initializer)
    assert len(engine) >= weights  # the plan carries the weights
    assert engine[1:4] == b"trt"  # the plan file's magic tag ("vtrt" on TensorRT for RTX)
    rows = build.timings()
    check_closed_tree(rows)
    assert max(r["depth"] for r in rows) >= 2
    assert not [r for r in rows if r["status"] == CANCELLED]
    for row in rows:  # a child runs inside its parent's interval
        if row["parent"] is not None:
            parent = rows[row["parent"]]
            assert row["end_s"] is not None and parent["end_s"] is not None  # check_closed_tree: all closed
            assert parent["start_s"] <= row["start_s"] and row["end_s"] <= parent["end_s"]
    assert rows[0]["end_s"] is not None
    assert build.elapsed_s > 0 and rows[0]["end_s"] <= build.elapsed_s
    assert any(log["severity"] == "INFO" for log in build.logs)


def test_engine_bytes_deserialize_or_fail_only_for_want_of_a_gpu(small_model: Any) -> None:
    """On this CPU-only machine the runtime cannot deserialize (no CUDA driver); the failure must name CUDA."""
    from trt_widget._engine import CaptureLogger, routed_logs

    engine_bytes = finished(Build(small_model)).result()
    logger = CaptureLogger()
    with routed_logs(logger) as router:
        engine = trt_widget.trt.Runtime(router).deserialize_cuda_engine(engine_bytes)
    if engine is not None:
        assert engine.num_io_tensors == 2
    else:
        assert logger.errors() and all("cuda" in message.lower() for message in logger.errors()), logger.errors()


def test_network_api_callable_builds() -> None:
    trt = trt_widget.trt

    def define(network: Any) -> None:
        x = network.add_input("x", trt.float32, (1, 16))
        y = network.add_activation(x, trt.ActivationType.RELU).get_output(0)
        y.name = "y"
        network.mark_output(y)

    build = finished(Build(define))
    assert build.status == "succeeded", build.status_detail
    assert len(build.engine or b"") > 0
    check_closed_tree(build.timings())


def test_onnx_path_and_bytes_and_modelproto_all_build(onnx_path: Path, small_model: Any) -> None:
    for model in (onnx_path, str(onnx_path), onnx_path.read_bytes(), small_model):
        build = finished(Build(model))
        assert build.status == "succeeded", (model if not isinstance(model, bytes) else "bytes", build.status_detail)


def test_done_callbacks_run_once_after_the_end_and_at_once_when_late(small_model: Any) -> None:
    calls: list[str] = []
    build = Build(small_model)
    build.add_done_callback(lambda b: calls.append(b.status))
    finished(build)
    assert calls == ["succeeded"]
    build.add_done_callback(lambda b: calls.append("late " + b.status))
    assert calls == ["succeeded", "late succeeded"]


def test_done_callbacks_may_wait_for_the_result(small_model: Any) -> None:
    """Callbacks run on the builder thread: result()/wait() there must not wait for the callbacks themselves."""
    seen: list[Any] = []
    build = Build(small_model)
    build.add_done_callback(lambda b: seen.append(len(b.result())))
    build.add_done_callback(lambda b: seen.append(b.wait()))
    assert finished(build).status == "succeeded"
    assert seen == [len(build.engine or b""), "succeeded"]


def test_a_callback_raising_systemexit_does_not_hang_wait(small_model: Any, caplog: Any) -> None:
    seen: list[str] = []
    build = Build(small_model)
    build.add_done_callback(lambda b: sys.exit(1))
    build.add_done_callback(lambda b: seen.append(b.status))
    assert finished(build).status == "succeeded"
    assert seen == ["succeeded"]
    assert [r for r in caplog.records if r.name == "trt_widget" and "SystemExit" in (r.exc_text or "")]


# -- cancel --------------------------------------------------------------------------------------------
def test_stop_mid_build_cancels_and_closes_every_phase(
    long_model_bytes: bytes, tmp_path: Path, wait_until: WaitUntil
) -> None:
    output = tmp_path / "model.engine"
    build = Build(long_model_bytes, output=output).start()
    wait_until(lambda: build.model.running_count() > 0 or build.done(), what="the first phase")
    assert build.stop() is True
    assert build.status in ("cancelling", "cancelled")
    assert finished(build).status == "cancelled"
    assert build.engine is None
    assert isinstance(build.error, BuildCancelled) and "stopped by user" in str(build.error)
    with pytest.raises(BuildCancelled):
        build.result()
    rows = build.timings()
    check_closed_tree(rows)
    assert any(r["status"] == CANCELLED for r in rows)
    assert build.cancel_info is not None and build.cancel_info["phase"] in {r["name"] for r in rows}
    assert not output.exists() and no_part_files(tmp_path)
    with pytest.raises(BuildError, match="no engine to save"):
        build.save(str(tmp_path / "saved.engine"))


def test_stop_inside_a_nested_phase_closes_the_whole_tree(long_model_bytes: bytes) -> None:
    build = Build(long_model_bytes)
    asked: list[bool] = []

    def stop_when_deep(event: str, phase: Any) -> None:
        if event == "phase_start" and phase.depth >= 2 and not asked:
            asked.append(build.stop())

    build.model.subscribe(stop_when_deep)
    assert finished(build).status == "cancelled"
    assert asked == [True]
    rows = build.timings()
    check_closed_tree(rows)
    assert max(r["depth"] for r in rows) >= 2
    assert build.cancel_info is not None and build.cancel_info["phase"]


def test_time_budget_cancels_and_names_the_budget(long_model_bytes: bytes) -> None:
    build = Build(long_model_bytes, budget=0.05)
    gate_at_first_phase(build, lambda: build.status != "running")  # the build outlives its budget
    assert finished(build).status == "cancelled"
    assert "time budget of 0.05 s exceeded" in build.status_detail
    assert isinstance(build.error, BuildCancelled) and "time budget" in str(build.error)
    check_closed_tree(build.timings())


def test_a_budget_that_is_not_reached_changes_nothing(small_model: Any) -> None:
    build = finished(Build(small_model, budget=3600))
    assert build.status == "succeeded"
    assert build.stop() is False  # the budget timer is gone too; nothing left to stop


# -- options -------------------------------------------------------------------------------------------
@pytest.mark.usefixtures("nvidia_timing_cache")
def test_timing_cache_is_written_and_read_back(small_model: Any, tmp_path: Path) -> None:
    """First build: no file, so nothing to load; it writes a non-empty cache. Second build: TensorRT is handed
    the cache and logs that it deserializes it. (TensorRT for RTX on a CPU-only machine cannot use it: it logs
    "Failed to deserialize timing cache" and RTX treats timing caches as no-ops; the log line is the sign.)"""
    cache = tmp_path / "timing.cache"

    def cache_lines(build: Build) -> list[str]:
        return [log["message"] for log in build.logs if "timing cache" in log["message"].lower()]

    first = finished(Build(small_model, timing_cache=cache, verbose=True, isolation="thread"))
    assert first.status == "succeeded", first.status_detail
    assert cache.is_file() and cache.stat().st_size > 0
    assert not [m for m in cache_lines(first) if "deserializ" in m.lower()]
    assert no_part_files(tmp_path)

    second = finished(Build(small_model, timing_cache=cache, verbose=True, isolation="thread"))
    assert second.status == "succeeded", second.status_detail
    assert [m for m in cache_lines(second) if "deserializ" in m.lower()], cache_lines(second)
    assert cache.stat().st_size > 0


def test_dynamic_batch_with_a_profile_builds(dynamic_model: Any) -> None:
    build = finished(Build(dynamic_model, profiles={"input": ((1, 8, 8, 8), (2, 8, 8, 8), (4, 8, 8, 8))}))
    assert build.status == "succeeded", build.status_detail
    assert len(build.engine or b"") > 0


def test_workspace_reaches_tensorrt(small_model: Any) -> None:
    roomy = finished(Build(small_model, workspace="256MiB"))
    assert roomy.status == "succeeded", roomy.status_detail
    cramped = finished(Build(small_model, workspace="1MiB"))
    if BACKEND == "rtx":  # RTX's compiler finds no tactic for this graph within 1 MiB: the limit got through
        assert cramped.status == "failed" and "workspace" in str(cramped.error), cramped.status_detail


def test_optimization_level_reaches_tensorrt(small_model: Any) -> None:
    level0 = finished(Build(small_model, optimization_level=0, verbose=True))
    assert level0.status == "succeeded", level0.status_detail
    level5 = finished(Build(small_model, optimization_level=5))
    assert level5.status == "succeeded", level5.status_detail
    if BACKEND == "rtx":
        assert any("optimization level 0" in log["message"] for log in level0.logs)


def _relu_recording_flags(seen: list[bool]) -> Any:
    def define(network: Any) -> None:
        t = trt_widget.trt
        seen.append(bool(network.get_flag(t.NetworkDefinitionCreationFlag.STRONGLY_TYPED)))
        x = network.add_input("x", t.float32, (1, 4))
        network.mark_output(network.add_activation(x, t.ActivationType.RELU).get_output(0))

    return define


def test_strong_typing_reaches_the_network_by_default() -> None:
    seen: list[bool] = []
    build = finished(Build(_relu_recording_flags(seen), isolation="thread", history=False))
    assert build.status == "succeeded", build.status_detail
    assert seen == [True]  # the network TensorRT built was created with the STRONGLY_TYPED flag


def test_option_combinations_the_backend_cannot_build_are_refused_at_construction(small_model: Any) -> None:
    caps = capabilities()
    if not caps["weak_typing"]:  # TensorRT for RTX, TensorRT 11
        with pytest.raises(ValueError, match=r"fp16=True is not available with .*no BuilderFlag.FP16.*AutoCast"):
            Build(small_model, fp16=True)
        with pytest.raises(ValueError, match="builds strongly typed networks only"):
            Build(small_model, strongly_typed=False)
    with pytest.raises(ValueError, match=r"fp16=True (asks for a weakly typed network|is not available)"):
        Build(small_model, fp16=True, strongly_typed=True)  # asked for both: as trtexec, refused


# -- files ---------------------------------------------------------------------------------------------
def test_output_is_written_atomically(small_model: Any, tmp_path: Path) -> None:
    output = tmp_path / "model.engine"
    output.write_bytes(b"an older engine")
    build = finished(Build(small_model, output=output))
    assert build.status == "succeeded"
    assert output.read_bytes() == build.engine
    assert no_part_files(tmp_path)


def test_save_is_atomic_and_leaves_nothing_behind_on_failure(
    small_model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = finished(Build(small_model))
    target = tmp_path / "saved.engine"
    assert build.save(str(target)) == str(target)
    assert target.read_bytes() == build.engine

    def broken_replace(src: Any, dst: Any) -> None:
        raise OSError("disk full (simulated)")

    target.write_bytes(b"previous")
    monkeypatch.setattr("trt_widget._files.os.replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        build.save(str(target))
    assert target.read_bytes() == b"previous"  # the old file is intact
    assert no_part_files(tmp_path)
    monkeypatch.undo()
    with pytest.raises(FileNotFoundError):
        build.save(str(tmp_path / "missing" / "x.engine"))


# -- life cycle ----------------------------------------------------------------------------------------
def test_start_twice_is_an_error(small_model: Any) -> None:
    build = Build(small_model).start()
    with pytest.raises(RuntimeError, match="already started"):
        build.start()
    assert finished(build).status == "succeeded"
    with pytest.raises(RuntimeError, match="already started"):
        build.start()


def test_stop_wait_and_result_before_start(small_model: Any) -> None:
    build = Build(small_model)
    assert build.stop() is False
    assert build.status == "idle" and build.elapsed_s == 0.0
    assert build.wait() == "idle"  # nothing to wait for: returns at once
    assert run_coroutine(build.wait_async()) == "idle"
    with pytest.raises(RuntimeError, match="not started"):
        build.result()
    assert build.status == "idle" and build.cancel_info is None


def test_stop_after_the_end_does_nothing(small_model: Any) -> None:
    build = finished(Build(small_model))
    assert build.stop() is False
    assert build.status == "succeeded" and build.cancel_info is None and build.error is None


def test_wait_with_timeout_returns_the_status_while_running(long_model_bytes: bytes) -> None:
    release = threading.Event()
    build = Build(long_model_bytes)
    reached = gate_at_first_phase(build, release.is_set)
    build.start()
    try:
        assert reached.wait(DEADLINE)
        assert build.wait(0.05) == "running"
        with pytest.raises(TimeoutError, match="still running"):
            build.result(timeout=0.05)
        assert not build.done()
    finally:
        release.set()
        build.stop()
    assert finished(build).status in FINAL


def test_keyboard_interrupt_during_wait_cancels_and_reraises(
    long_model_bytes: bytes, monkeypatch: pytest.MonkeyPatch, wait_until: WaitUntil
) -> None:
    build = Build(long_model_bytes).start()
    wait_until(lambda: build.model.running_count() > 0, what="a running phase")
    real_wait = threading.Condition.wait

    def interrupted_wait(self: threading.Condition, timeout: float | None = None) -> bool:
        if self is build._condition:
            raise KeyboardInterrupt
        return real_wait(self, timeout)

    monkeypatch.setattr(threading.Condition, "wait", interrupted_wait)
    with pytest.raises(KeyboardInterrupt):
        build.wait(DEADLINE)
    monkeypatch.undo()
    assert build.status in ("cancelling", "cancelled")
    assert finished(build).status == "cancelled"
    assert "KeyboardInterrupt" in build.status_detail
    assert isinstance(build.error, BuildCancelled)
    check_closed_tree(build.timings())


def test_real_ctrl_c_during_wait_cancels_and_reraises(long_model_bytes: bytes, sigint_raises: None) -> None:
    """``_thread.interrupt_main()`` from another thread, once the main thread is blocked inside wait()."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("needs to run on the main thread")
    build = Build(long_model_bytes).start()
    main_id = threading.main_thread().ident
    assert main_id is not None

    def main_is_waiting() -> bool:
        frame = sys._current_frames().get(main_id)
        while frame is not None:
            if frame.f_code is Build.wait.__code__:
                return True
            frame = frame.f_back
        return False

    def interrupter() -> None:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline and not build.done():
            if main_is_waiting() and build.model.running_count() > 0:
                _thread.interrupt_main()
                return
            time.sleep(0.005)

    helper = threading.Thread(target=interrupter, daemon=True)
    helper.start()
    with pytest.raises(KeyboardInterrupt):
        build.wait(DEADLINE)
    helper.join(DEADLINE)
    assert finished(build).status == "cancelled"
    assert "KeyboardInterrupt" in build.status_detail


def test_await_gives_the_engine_and_wait_async_the_status(small_model: Any) -> None:
    async def run() -> tuple[bytes, str]:
        first = Build(small_model).start()
        second = Build(small_model).start()
        return await first, await second.wait_async(poll=0.01)

    engine, status = run_coroutine(run())
    assert isinstance(engine, bytes) and len(engine) > 1000 and status == "succeeded"


def test_model_of_the_wrong_type_is_rejected_at_once() -> None:
    with pytest.raises(TypeError, match="model must be an ONNX file path, ONNX bytes"):
        Build(42)  # type: ignore[arg-type]  # the wrong type on purpose: the runtime check is under test


def test_a_build_from_another_thread_is_independent(small_model: Any) -> None:
    """Two builds at once (one per thread) do not mix their phase models."""
    builds = [Build(small_model), Build(deep_residual(6))]
    for build in builds:
        build.start()
    for build in builds:
        assert finished(build).status == "succeeded"
        check_closed_tree(build.timings())
    assert builds[0].model is not builds[1].model
