"""Stop means stop, with the default settings and real TensorRT-for-RTX builds.

The long step "Determining refit engines" of deep_residual(1000) lasts seconds: a stop inside it can only end
the build at once by terminating the builder process. Subprocess tests run scripts the way users do (no main
guard, ``python -c``, ``python -``) and kill a parent to look for orphans.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from fixture_types import WaitUntil

from trt_widget import _pool, models
from trt_widget._build import Build
from trt_widget._errors import BuildCancelled
from trt_widget._phases import CANCELLED
from trt_widget._widget import BuildWidget

LONG_STEP = "Determining refit engines"


@pytest.fixture(scope="module")
def long_build() -> bytes:
    return models.to_bytes(models.deep_residual(1000))


def reach(build: Build, phase: str, wait_until: WaitUntil) -> None:
    def reached() -> bool:
        running = build.model.innermost_running()
        assert not build.done(), f"the build ended ({build.status}: {build.status_detail}) before {phase!r}"
        return running is not None and running.name == phase

    wait_until(reached, what=f"phase {phase!r}")


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


@pytest.mark.rtx_long_step
def test_default_stop_inside_a_long_step_terminates_the_builder(long_build: bytes, wait_until: WaitUntil) -> None:
    build = Build(long_build, history=False).start()
    reach(build, LONG_STEP, wait_until)
    pid = build.child_pid
    assert build.stop() is True
    assert build.wait(30) == "cancelled"
    assert isinstance(build.error, BuildCancelled)
    assert "did not reach a step boundary within 0.1 s" in build.status_detail
    assert [r["status"] for r in build.timings() if r["name"] == LONG_STEP] == ["cancelled"]
    assert pid is not None and gone(pid)
    wait_until(lambda: _pool.pool.idle_pids(), what="the next worker, started in the background")
    ready = set(_pool.pool.idle_pids())
    after = Build(models.deep_residual(4), history=False).start()  # a fresh worker takes over
    wait_until(lambda: after.child_pid, what="the next build's worker")
    assert after.child_pid in ready
    assert after.wait(120) == "succeeded", after.error


@pytest.mark.rtx_long_step
def test_budget_is_a_hard_limit(long_build: bytes, wait_until: WaitUntil) -> None:
    build = Build(long_build, history=False, budget=600).start()
    reach(build, LONG_STEP, wait_until)
    build._budget_expired()  # what the budget timer calls, at a moment inside the long step
    assert build.wait(30) == "cancelled"
    assert build.status_detail.startswith("time budget of 600 s exceeded; the builder did not reach")
    assert [r["status"] for r in build.timings() if r["name"] == LONG_STEP] == ["cancelled"]


def test_a_real_budget_timer_ends_the_build(long_build: bytes) -> None:
    build = Build(long_build, history=False, budget=1.5).start()
    assert build.wait(60) == "cancelled"
    assert build.status_detail.startswith("time budget of 1.5 s exceeded")
    assert (
        build.options.budget is not None and build.elapsed_s < build.options.budget + 10
    )  # not at the end of the seconds-long build step


@pytest.mark.rtx_long_step
def test_a_stopped_builder_ends_on_stop(long_build: bytes, wait_until: WaitUntil) -> None:
    build = Build(long_build, history=False).start()
    reach(build, LONG_STEP, wait_until)
    assert build.child_pid is not None
    os.kill(build.child_pid, signal.SIGSTOP)
    build.stop()
    assert build.wait(30) == "cancelled"
    assert "SIGKILL" in build.status_detail  # a stopped process ignores SIGTERM until continued


def _hangs(network: Any) -> None:
    time.sleep(3600)


def test_a_hung_network_function_ends_on_stop(wait_until: WaitUntil) -> None:
    build = Build(_hangs, history=False).start()
    wait_until(lambda: build.child_pid is not None, what="a builder process")
    time.sleep(0.3)  # let the worker enter the function (either way the build must end cancelled)
    build.stop()
    assert build.wait(30) == "cancelled"


def test_stop_while_the_worker_is_still_starting() -> None:
    _pool.shutdown_workers()
    build = Build(models.deep_residual(4), history=False)
    _pool.shutdown_workers()  # drop the prewarmed worker: start() must spawn a cold one
    build.start()
    build.stop()
    assert build.wait(30) == "cancelled"
    assert isinstance(build.error, BuildCancelled)
    assert Build(models.deep_residual(4), history=False).start().wait(120) == "succeeded"


def test_status_is_running_as_soon_as_start_returns() -> None:
    build = Build(models.deep_residual(4), history=False)
    assert build.start().status == "running"
    build.wait(120)
    widget = BuildWidget(models.deep_residual(4), history=False)
    widget.start()
    assert widget.status == "running"  # the synced trait too: the browser's first state says running
    widget.wait(120)
    assert widget.status == "succeeded"


def test_sequential_builds_reuse_one_warm_worker() -> None:
    first = Build(models.deep_residual(4), history=False).start()
    assert first.wait(120) == "succeeded"
    second = Build(models.deep_residual(4), history=False).start()
    assert second.wait(120) == "succeeded"
    assert first.child_pid == second.child_pid
    assert second.child_pid in _pool.pool.idle_pids()


def test_an_idle_worker_exits_after_the_idle_timeout(monkeypatch: pytest.MonkeyPatch, wait_until: WaitUntil) -> None:
    monkeypatch.setenv("TRT_WIDGET_WORKER_IDLE_S", "0.5")
    _pool.shutdown_workers()
    build = Build(models.deep_residual(4), history=False).start()
    assert build.wait(120) == "succeeded"
    pid = build.child_pid
    assert pid is not None
    wait_until(lambda: gone(pid), timeout=30, what="the idle worker to exit")
    assert pid not in _pool.pool.idle_pids()


def test_force_after_with_a_thread_is_refused() -> None:
    with pytest.raises(ValueError, match="force_after needs isolation='process'"):
        Build(models.deep_residual(4), isolation="thread", force_after=1)


# -- from anywhere: scripts without a main guard, python -c, python - ---------------------------------------

SCRIPT = textwrap.dedent("""
    import trt_widget
    from trt_widget import Build

    print("top level ran", flush=True)  # a spawn-based child would print this a second time

    def network(net):
        t = trt_widget.trt
        x = net.add_input("x", t.float32, (1, 4))
        net.mark_output(net.add_activation(x, t.ActivationType.RELU).get_output(0))

    b = Build(lambda net: network(net), history=False).start()
    print("status", b.wait(120), b.status_detail, flush=True)
""")


def _run_python(args: list[str], stdin: str | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.mark.parametrize("how", ["script", "stdin", "-c"])
def test_builds_run_from_scripts_without_a_main_guard(how: str, tmp_path: Path) -> None:
    script = tmp_path / "build_it.py"
    script.write_text(SCRIPT)
    if how == "script":
        done = _run_python([str(script)], None, tmp_path)
    elif how == "stdin":
        done = _run_python(["-"], SCRIPT, tmp_path)
    else:
        done = _run_python(["-c", SCRIPT], None, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("top level ran") == 1, done.stdout
    assert "status succeeded" in done.stdout, done.stdout + done.stderr


def test_a_killed_parent_leaves_no_worker_behind(tmp_path: Path, wait_until: WaitUntil) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent("""
        import time
        from trt_widget import Build, models
        b = Build(models.deep_residual(1000), history=False).start()
        while b.child_pid is None or b.model.innermost_running() is None:
            time.sleep(0.01)
        print(b.child_pid, flush=True)
        time.sleep(3600)
    """)
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = parent.stdout.readline() if parent.stdout else ""
        worker = int(line)
        assert psutil.pid_exists(worker) and not gone(worker)
        parent.kill()
        parent.wait(30)
        wait_until(lambda: gone(worker), timeout=10, what=f"worker {worker} to end with its parent")
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.wait(30)
        for pipe in (parent.stdin, parent.stdout):  # closed now, not by the garbage collector (ResourceWarning)
            if pipe is not None:
                pipe.close()


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_stop_after_the_engine_was_made_leaves_the_build_succeeded(isolation: str) -> None:
    build = Build(models.deep_residual(4), history=False, isolation=isolation)
    asked: list[bool] = []

    def stop_when_the_root_ends(event: str, phase: Any) -> None:
        if event == "phase_finish" and phase.name == "Building engine" and not asked:
            asked.append(build.stop("late stop"))  # TensorRT has no step left to cancel at

    build.model.subscribe(stop_when_the_root_ends)
    build.start()
    assert build.wait(120) == "succeeded", build.status_detail
    assert asked == [True]  # the stop really was asked for while the build was running
    assert build.engine and build.error is None
    assert not build.model.cancelling
    assert not [r for r in build.timings() if r["status"] == CANCELLED]
