"""Eleventh re-run (adversary, N6): the exit hooks registered with ``threading._register_atexit`` act on the parent's
state in a forked child. ``multiprocessing``'s fork children (Linux's default start method before 3.14) run them
when they end (``Process._bootstrap`` calls ``threading._shutdown()``), as does an ``os.fork()`` child that exits
normally: the child SIGTERMs the parent's watched command and removes its run directory, and while the parent runs
a thread build the child waits 60 s at its exit for threads it does not have."""

from __future__ import annotations

import inspect
import multiprocessing
import os
import subprocess
import sys
import threading
import time

import pytest
from forking import start_forked

from trt_widget.watch._run import run_command

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork start method")


def _nothing() -> None:
    """A forked child's whole work."""


def test_a_forked_child_ending_leaves_the_parents_watched_command_running() -> None:
    run = run_command([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        child = multiprocessing.get_context("fork").Process(target=_nothing)
        start_forked(child)
        child.join(60)
        assert child.exitcode == 0
        assert os.path.isdir(run._dir), "the child removed the parent's run directory"
        assert not run.future.done(), f"the child ended the parent's command (exit {run.future.result()})"
    finally:
        run.terminate()
        run.future.result(timeout=60)


def test_a_forked_child_does_not_wait_at_its_exit_for_the_parents_thread_builds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trt_widget.runners import _inprocess
    from trt_widget.runners._inprocess import tensorrt_call

    # 60 s by default; longer than the join below, so a child that waits is seen as one that never ended
    monkeypatch.setattr(_inprocess.wait_for_builds_at_exit, "__defaults__", (600.0,))
    assert inspect.signature(_inprocess.wait_for_builds_at_exit).parameters["timeout"].default == 600.0  # it took

    inside, done = threading.Event(), threading.Event()

    def build() -> None:  # a thread inside TensorRT, as a thread build is (its cancel ends it)
        with tensorrt_call(done.set):
            inside.set()
            done.wait(120)

    thread = threading.Thread(target=build, daemon=True)
    thread.start()
    try:
        assert inside.wait(60)
        child = multiprocessing.get_context("fork").Process(target=_nothing)
        started = time.monotonic()
        start_forked(child)
        child.join(120)
        took = time.monotonic() - started
        assert child.exitcode == 0, f"the forked child had not ended after {took:.0f} s"  # it waited: None
        assert took < 100, f"the forked child took {took:.0f} s to exit"  # well under 1 s on a quiet machine
    finally:
        done.set()
        thread.join(60)


FORK_AND_EXIT = """
import os, sys
from trt_widget.watch._run import run_command

run = run_command([sys.executable, "-c", "import time; time.sleep(60)"])
pid = os.fork()
if pid == 0:
    sys.exit(0)  # a normal end: threading's exit hooks, atexit, weakref finalizers (the run directory's)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), os.path.isdir(run._dir), run.future.done(), flush=True)
run.terminate()
run.future.result(timeout=60)
print(os.path.isdir(run._dir))
"""


def test_an_os_fork_child_that_exits_normally_leaves_the_parents_command_and_directory() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORK_AND_EXIT], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    # the child exited 0; the parent's run directory is there and its command runs; the parent's own end of the
    # command removes the directory, as before
    assert done.stdout.split() == ["0", "True", "False", "False"], done.stdout + done.stderr
