"""The builder process (the default runner) with real TensorRT builds: results, two-stage stop, crashes, bad
sources, clean-up, worker reuse.

deep_residual(1000) is used where a build must be caught inside its long "Determining refit engines" step.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

import trt_widget
from trt_widget import _pool, models
from trt_widget._build import Build
from trt_widget._errors import BuildCancelled, BuildError
from trt_widget.runners import START_PHASE, _process

LONG_STEP = "Determining refit engines"


def relu_network(network: Any, width: int = 4) -> None:
    """A module-level network definition: importable by the build process."""
    t = trt_widget.trt
    x = network.add_input("x", t.float32, (1, width))
    network.mark_output(network.add_activation(x, t.ActivationType.RELU).get_output(0))


@pytest.fixture(scope="module")
def small() -> bytes:
    return models.to_bytes(models.deep_residual(20))


@pytest.fixture(scope="module")
def long_build() -> bytes:
    return models.to_bytes(models.deep_residual(1000))


def wait_until(predicate: Any, timeout: float = 120.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def start_and_reach(model: bytes, phase: str, **options: Any) -> Build:
    """Start a process build and return once ``phase`` is its innermost running phase."""
    build = Build(model, isolation="process", **options).start()

    def reached() -> bool:
        running = build.model.innermost_running()
        if build.done():
            raise AssertionError(f"the build ended ({build.status}: {build.status_detail}) before {phase!r}")
        return running is not None and running.name == phase

    wait_until(reached, what=f"phase {phase!r}")
    return build


def assert_tree_closed(build: Build) -> None:
    assert build.model.running_count() == 0
    assert all(row["end_s"] is not None for row in build.timings())


def assert_reaped(pid: int | None) -> None:
    assert pid is not None and pid != os.getpid()
    assert not psutil.pid_exists(pid), f"build process {pid} still exists (zombie?)"


def assert_pooled(pid: int | None) -> None:
    """The worker finished its job cleanly and waits, idle, for the next build."""
    assert pid is not None and pid != os.getpid()
    assert pid in _pool.pool.idle_pids()


def shape(build: Build) -> list[tuple[Any, ...]]:
    """The phase tree, without a cold worker's start-up row (whether the pool had a warm worker is not the build's)."""
    rows = [row for row in build.timings() if row["name"] != START_PHASE]
    names: dict[int | None, str] = {row["id"]: row["name"] for row in rows}
    return [(r["name"], r["depth"], names.get(r["parent"]), r["num_steps"], r["step"], r["status"]) for r in rows]


@pytest.fixture
def recorded_dirs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The private work directories each process build used (to check they are removed)."""
    seen: list[str] = []
    original = _process._work_dirs

    def recording() -> Any:
        manager = original()

        class Recorder:
            def __enter__(self) -> list[str]:
                dirs = manager.__enter__()
                seen.extend(dirs)
                return dirs

            def __exit__(self, *exc: Any) -> Any:
                return manager.__exit__(*exc)

        return Recorder()

    monkeypatch.setattr(_process, "_work_dirs", recording)
    yield seen


def test_resnet50_engine_and_timings_match_a_thread_build(
    tmp_path: Any, recorded_dirs: list[str], resnet50_bytes: bytes
) -> None:
    onnx = resnet50_bytes
    thread = Build(onnx, isolation="thread").start()
    assert thread.wait() == "succeeded", thread.error
    output = tmp_path / "resnet50.plan"
    process = Build(onnx, isolation="process", output=str(output)).start()
    assert process.wait() == "succeeded", process.error
    assert process.engine is not None and thread.engine is not None
    assert len(process.engine) > 50_000_000  # the ~100 MB engine crossed the process boundary
    assert hashlib.sha256(process.engine).digest() == hashlib.sha256(thread.engine).digest()
    assert output.read_bytes() == process.engine
    assert shape(process) == shape(thread)
    rows = {row["id"]: row for row in process.timings()}
    for row in rows.values():  # child timestamps land on the parent's time axis, children inside parents
        assert row["end_s"] is not None and 0 <= row["start_s"] <= row["end_s"] <= process.elapsed_s
        if row["parent"] is not None:
            parent = rows[row["parent"]]
            assert parent["end_s"] is not None  # closed, as every row is (checked in its own turn)
            assert parent["start_s"] <= row["start_s"] and row["end_s"] <= parent["end_s"]
    assert any("ONNX" in record["message"] for record in process.logs)
    assert_pooled(process.child_pid)
    assert recorded_dirs and not any(os.path.exists(d) for d in recorded_dirs)


def test_timing_cache_is_written_by_the_child(small: bytes, tmp_path: Any) -> None:
    """NVIDIA TensorRT: the builder process writes the file. TensorRT for RTX: it says it skips it (no file)."""
    from trt_widget._backend import select_backend
    from trt_widget._engine import uses_timing_cache
    from trt_widget._expected import RTX_TIMING_CACHE

    cache = tmp_path / "timing.cache"
    build = Build(small, isolation="process", timing_cache=str(cache)).start()
    assert build.wait() == "succeeded", build.error
    if uses_timing_cache(select_backend()[0]):
        assert cache.stat().st_size > 0
    else:
        assert not cache.exists() and any(r["message"].startswith(RTX_TIMING_CACHE) for r in build.logs)
    again = Build(small, isolation="process", timing_cache=str(cache)).start()
    assert again.wait() == "succeeded", again.error


def test_graceful_stop_cancels_at_a_step_boundary(small: bytes) -> None:
    build = Build(models.deep_residual(300), isolation="process", force_after=120).start()
    wait_until(lambda: build.model.innermost_running() is not None or build.done(), what="a running phase")
    assert build.stop() is True
    assert build.wait(120) == "cancelled"
    assert build.status_detail == "stopped by user"
    assert isinstance(build.error, BuildCancelled) and "terminated" not in str(build.error)
    assert_tree_closed(build)
    assert_pooled(build.child_pid)  # a graceful stop keeps the worker for the next build


@pytest.mark.rtx_long_step
def test_second_stop_terminates_a_long_step_at_once(long_build: bytes) -> None:
    build = start_and_reach(long_build, LONG_STEP, force_after=120)
    pid = build.child_pid
    assert build.stop() is True
    assert build.status == "cancelling"  # the graceful stop waits for the end of the long step...
    assert build.stop() is True  # ...the second one does not
    # not timed (a loaded 2-core runner stretches any bound): the step cut short and the process terminated say it
    assert build.wait(120) == "cancelled"
    assert build.status_detail.startswith("stopped by user; force stopped") and "terminated" in build.status_detail
    assert isinstance(build.error, BuildCancelled) and "terminated" in str(build.error)
    assert [r["status"] for r in build.timings() if r["name"] == LONG_STEP] == ["cancelled"]
    assert_tree_closed(build)
    assert_reaped(pid)


@pytest.mark.rtx_long_step
def test_budget_expiry_escalates_after_force_after(long_build: bytes) -> None:
    build = start_and_reach(long_build, LONG_STEP, budget=600, force_after=0.3)
    build._budget_expired()  # what the budget timer calls, here at a moment the test controls
    assert build.wait(30) == "cancelled"
    assert build.status_detail.startswith(
        "time budget of 600 s exceeded; the builder did not reach a step boundary within 0.3 s, so its process"
    )
    assert "terminated" in str(build.error)
    assert_tree_closed(build)
    assert_reaped(build.child_pid)


@pytest.mark.rtx_long_step
def test_child_killed_by_a_signal_fails_with_signal_and_phase(long_build: bytes) -> None:
    build = start_and_reach(long_build, LONG_STEP)
    assert build.child_pid is not None
    os.kill(build.child_pid, signal.SIGKILL)
    assert build.wait(30) == "failed"
    message = str(build.error)
    assert isinstance(build.error, BuildError) and not isinstance(build.error, BuildCancelled)
    assert "SIGKILL" in message and LONG_STEP in message
    assert_tree_closed(build)
    assert_reaped(build.child_pid)


def _abort(network: Any) -> None:
    os.abort()


def _segfault(network: Any) -> None:
    import ctypes

    ctypes.string_at(0)


def _exit3(network: Any) -> None:
    os._exit(3)


@pytest.mark.parametrize(
    "crash, expected", [(_abort, "SIGABRT"), (_segfault, "SIGSEGV"), (_exit3, "exited with code 3")]
)
def test_builder_crash_fails_the_build_and_the_next_build_runs(small: bytes, crash: Any, expected: str) -> None:
    build = Build(crash).start()
    assert build.wait(120) == "failed"
    error = str(build.error)
    # it died in the network function, before TensorRT built anything (whether the parent heard of the "Defining
    # the network" phase before the process died depends on how fast it died)
    assert expected in error and ("before any build phase started" in error or "'Defining the network'" in error)
    assert build.status_detail.startswith("the builder process")
    assert_tree_closed(build)
    assert_reaped(build.child_pid)
    after = Build(small).start()
    assert after.wait(120) == "succeeded", after.error


def test_errors_inside_the_child_come_back_as_build_errors() -> None:
    build = Build(b"garbage", isolation="process").start()
    assert build.wait(120) == "failed"
    assert "could not parse" in str(build.error)
    assert_pooled(build.child_pid)  # a bad model is no reason to throw the worker away


def test_importable_network_functions_cross_the_process_boundary() -> None:
    for model in (relu_network, functools.partial(relu_network, width=8)):
        build = Build(model, isolation="process").start()
        assert build.wait(120) == "succeeded", build.error
        assert build.engine


def test_lambdas_and_local_functions_cross_the_process_boundary() -> None:
    def local_network(network: Any) -> None:
        relu_network(network, width=3)

    for model in (lambda network: relu_network(network), local_network):
        build = Build(model).start()
        assert build.wait(120) == "succeeded", build.error
        assert build.engine


def test_what_cannot_cross_is_refused_with_a_message_naming_it() -> None:
    import threading

    lock = threading.Lock()

    def holds_a_lock(network: Any) -> None:
        with lock:
            relu_network(network)

    with pytest.raises(TypeError, match=r"holds_a_lock.*cannot be sent.*lock.*isolation='thread'"):
        Build(holds_a_lock)
    assert Build(holds_a_lock, isolation="thread").start().wait(120) == "succeeded"


def test_twenty_builds_leave_no_zombies_or_open_files(small: bytes) -> None:
    def fds() -> dict[str, str]:
        found = {}
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # the directory's own fd, or one closed meanwhile
                found[fd] = os.readlink(f"/proc/self/fd/{fd}")
        return found

    def settled(build: Build) -> None:
        """Ended, and its thread too (done callbacks such as history may still hold a file briefly)."""
        assert build.wait(120) == "succeeded", build.error
        assert build._thread is not None
        build._thread.join(60)

    me = psutil.Process()
    settled(Build(small, isolation="process").start())  # the first spawn starts multiprocessing's helpers
    children_before = {p.pid for p in me.children(recursive=True)}
    fds_before = fds()
    for _ in range(20):
        settled(Build(small, isolation="process").start())
    # only what these builds started counts: a process another test left (a Ray helper) is not this test's leak
    started = [p for p in me.children(recursive=True) if p.pid not in children_before]
    assert not [p for p in started if p.status() == psutil.STATUS_ZOMBIE]
    assert not started, [p.cmdline() for p in started]
    # other threads (resource samplers) open /proc files for a moment: wait for a quiet moment
    wait_until(lambda: len(fds()) <= len(fds_before), timeout=10, what="open files back to the count before")
    leaked = set(fds().values()) - set(fds_before.values())
    assert not [target for target in leaked if "trt_widget" in target or target.startswith(("pipe:", "socket:"))]


def test_outbox_coalesces_steps_and_never_blocks_the_builder_synthetic() -> None:
    """Synthetic callback driver (no TensorRT): a reader that does not read must not stall the producer."""
    import multiprocessing
    import threading

    from trt_widget.runners._messages import Events, Log, PhaseFinish, PhaseStart, Step
    from trt_widget.runners._worker import Outbox

    reader, writer = multiprocessing.get_context("spawn").Pipe(duplex=False)
    outbox = Outbox(writer)
    produced = threading.Event()

    def builder() -> None:
        for phase in range(50):
            outbox.structure(PhaseStart(f"p{phase}", None, 10_000, 0, 0.0))
            for step in range(10_000):
                outbox.step(f"p{phase}", step)
                if step % 500 == 0:
                    outbox.log(Log(3, "x" * 100, 0.0))
            outbox.structure(PhaseFinish(f"p{phase}", 0, 0.0))
        produced.set()

    thread = threading.Thread(target=builder, daemon=True)
    thread.start()
    assert produced.wait(120), "the producer blocked on a pipe nobody reads"
    events: list[Any] = []
    closer = threading.Thread(target=outbox.close, daemon=True)
    closer.start()
    while closer.is_alive() or reader.poll():
        if reader.poll(0.05):
            message = reader.recv()
            assert isinstance(message, Events)
            events.extend(message.batch)
    closer.join()
    reader.close()
    writer.close()
    steps = [e for e in events if isinstance(e, Step)]
    assert len(steps) < 50 * 10_000 / 10  # coalesced
    assert [e.name for e in events if isinstance(e, PhaseStart)] == [f"p{i}" for i in range(50)]
    last_step = {e.name: e.step for e in steps}
    assert last_step == {f"p{i}": 9_999 for i in range(50)}  # the last step of every phase arrives
    order = [(type(e).__name__, e.name) for e in events if not isinstance(e, Log)]
    for i in range(50):  # each phase's steps sit between its start and its finish
        assert (
            order.index(("PhaseStart", f"p{i}"))
            < order.index(("Step", f"p{i}"))
            < order.index(("PhaseFinish", f"p{i}"))
        )
    assert len([e for e in events if isinstance(e, Log)]) == 50 * 20
