"""A warm builder process serves the next build only when its last one left nothing behind: one that ran a
``configure=`` hook (which may have changed its environment, working directory or TensorRT's classes), one that
loaded ``plugins=`` libraries and one that holds a CUDA context (NVIDIA TensorRT on a GPU) end after their build,
and a fresh worker is started in their place (issue 35). Real RTX builds in real worker processes."""

from __future__ import annotations

import types
from typing import Any

import psutil
import pytest
from fixture_types import WaitUntil

import trt_widget
from trt_widget import _pool, models
from trt_widget._build import Build
from trt_widget.runners import _process


@pytest.fixture(scope="module")
def small() -> bytes:
    return models.to_bytes(models.deep_residual(3))


# as a notebook cell defines them: in a __main__-like namespace no worker can import (cloudpickle sends them)
CELL = """
import os
import trt_widget

def leaky_configure(builder, network, config):
    # what a configure= hook may do besides configuring: change the process for whatever runs after it
    os.environ["TRT_WIDGET_TEST_LEAK"] = "from an earlier build's configure="

def probe_plugins(network):
    # fails when an earlier build's plugins= library is still registered in this process
    t = trt_widget.trt
    if t.get_plugin_registry().get_creator("TrtWidgetTiny", "1", "") is not None:
        raise RuntimeError("leaked: an earlier build's plugin library is registered here")
    x = network.add_input("x", t.float32, (1, 4))
    network.mark_output(network.add_activation(x, t.ActivationType.RELU).get_output(0))

def probe_network(network):
    # fails when an earlier build's configure= left its mark on this process
    leaked = os.environ.get("TRT_WIDGET_TEST_LEAK")
    if leaked:
        raise RuntimeError(f"leaked: {leaked}")
    t = trt_widget.trt
    x = network.add_input("x", t.float32, (1, 4))
    network.mark_output(network.add_activation(x, t.ActivationType.RELU).get_output(0))
"""


@pytest.fixture(scope="module")
def cell() -> dict[str, Any]:
    module = types.ModuleType("__main__")
    exec(compile(CELL, "<ipython-input-1>", "exec"), module.__dict__)
    return module.__dict__


def _ended(pid: int | None) -> bool:
    if pid is None or not psutil.pid_exists(pid):
        return True
    return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)


def _retired_then_a_new_worker(first: Build, probe: Any, wait_until: WaitUntil, what: str) -> None:
    """``first`` succeeds, its worker is not kept warm but ends (``what``), and a build of ``probe`` (a network
    callable that fails the build if it sees what ``first`` left) then succeeds in another process."""
    assert first.wait(180) == "succeeded", first.error
    assert first.child_pid not in _pool.pool.idle_pids()
    wait_until(lambda: _ended(first.child_pid), timeout=30, what=what)
    second = Build(probe, history=False).start()
    assert second.wait(180) == "succeeded", second.error
    assert second.child_pid != first.child_pid


def test_a_worker_that_ran_a_configure_hook_serves_no_later_build(
    small: bytes, cell: dict[str, Any], wait_until: WaitUntil
) -> None:
    first = Build(small, configure=cell["leaky_configure"], history=False).start()
    # before: the probe failed with "leaked: from an earlier build's configure="
    _retired_then_a_new_worker(first, cell["probe_network"], wait_until, "the worker that ran configure= to end")


def test_a_worker_without_configure_is_kept_warm(small: bytes) -> None:
    first = Build(small, history=False).start()
    assert first.wait(180) == "succeeded", first.error
    assert first.child_pid in _pool.pool.idle_pids()
    second = Build(small, history=False).start()
    assert second.wait(180) == "succeeded", second.error
    assert second.child_pid == first.child_pid


def test_a_worker_holding_a_cuda_context_ends_after_its_build(
    small: bytes, wait_until: WaitUntil, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one NVIDIA difference, reproduced: this backend's builder keeps a CUDA context (GPU memory) until its
    process exits. The worker ends after the build; its successor is started, warm for the next build."""
    monkeypatch.setattr(_process, "HOLDS_CUDA_CONTEXT", frozenset({trt_widget.select_backend()[0]}))
    first = Build(small, history=False).start()
    assert first.wait(180) == "succeeded", first.error
    wait_until(lambda: _ended(first.child_pid), timeout=30, what="the worker holding the context to end")
    wait_until(lambda: _pool.pool.idle_pids(), timeout=120, what="a fresh warm worker")
    assert first.child_pid not in _pool.pool.idle_pids()
    warm = set(_pool.pool.idle_pids())
    second = Build(small, history=False).start()
    assert second.wait(180) == "succeeded", second.error
    assert second.child_pid in warm  # warm: no cold start for the next build


FORKED = """
import os, signal, sys
from trt_widget import Build

def build():
    b = Build(sys.argv[1], isolation="process", history=False)
    b.start()
    b.wait()
    return b.status

print("parent", build(), flush=True)
pid = os.fork()  # multiprocessing's default on Linux: a Pool's workers
if pid == 0:
    signal.alarm(100)  # a child that waits forever ends (before the fix it did)
    print("child", build(), flush=True)
    os._exit(0)
print("forked", os.waitpid(pid, 0)[1], flush=True)
"""


def test_a_forked_process_builds_in_a_builder_process(onnx_path: Any) -> None:
    """Workers start on one spawner thread: in a process forked after a build (a multiprocessing Pool's worker),
    that thread is gone and its executor, which counted it idle, never started another: the build waited forever."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    done = subprocess.run(
        [sys.executable, "-c", FORKED, str(onnx_path)], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.stdout.split() == ["parent", "succeeded", "child", "succeeded", "forked", "0"], done.stderr[-2000:]


CLOSED_FDS = """
import os, sys, time
from trt_widget import Build

b = Build(sys.argv[1], isolation="process", history=False)
b.start()
stdout = []  # the builder process's fd 1, read while it builds (once idle, a loaded machine's CI saw it gone)
while not stdout and not b.done():
    if b.child_pid is not None:
        try:
            stdout = [os.readlink(f"/proc/{b.child_pid}/fd/1")]
        except OSError:
            pass
    time.sleep(0.005)
b.wait()
print(b.status, b.status_detail, stdout, file=sys.stderr, flush=True)
"""


@pytest.mark.parametrize("closed", ["0", "1"])
def test_a_process_started_with_a_standard_fd_closed_builds(onnx_path: Any, closed: str) -> None:
    """Started with stdin closed (cron, a daemon's ``<&-``), the worker's pipe took fd 0 and the worker's stdin
    (/dev/null) replaced it there: every process build failed ("exited with code 0 without a result"). With stdout
    closed, the worker's stdout was its own events pipe."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    command = [sys.executable, "-c", CLOSED_FDS, str(onnx_path)]
    done = subprocess.run(
        ["sh", "-c", f'exec {closed}>&- "$@"', "sh", *command], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.stderr.startswith("succeeded"), done.stderr[-2000:]
    if closed == "1":  # the worker writes nothing into a pipe of ours
        assert done.stderr.split()[-1] == "['/dev/null']", done.stderr[-2000:]


def test_a_worker_that_loaded_a_plugin_library_serves_no_later_build(
    small: bytes, cell: dict[str, Any], wait_until: WaitUntil, native_lib: Any, tmp_path: Any
) -> None:
    """Eighth re-run: a ``plugins=`` library stays loaded in its process (its code ran there, its creators stay
    registered): the next build without plugins ran in that warm worker, its manifest listing none."""
    import shutil

    lib = tmp_path / "libtrt_widget_tiny.so"
    shutil.copy(native_lib("tiny_plugin.cpp", "libtiny_plugin.so"), lib)
    first = Build(small, plugins=[lib], history=False).start()
    # before: the probe failed with "leaked: ... plugin library is registered here"
    _retired_then_a_new_worker(first, cell["probe_plugins"], wait_until, "the worker that loaded the plugin to end")


# The one NVIDIA difference, reproduced in every builder process started with it (a sitecustomize.py on PYTHONPATH):
# constructing a Builder creates a CUDA context (docs/gpu.md). Each construction is recorded with whether a job's
# build made it inside ``_on_device`` (on the job's device) or something else did (no job asked for a context).
FAKE_CONTEXT = """
import os, traceback

def _install():
    log = os.environ.get("TRT_WIDGET_TEST_CONTEXT_LOG")
    for name in ("tensorrt_rtx", "tensorrt_rtx_bindings"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        real = module.Builder

        def Builder(*args, _real=real, **kwargs):
            inside = "_build_on_device" in [frame.name for frame in traceback.extract_stack()]
            with open(log, "a") as handle:
                handle.write(f"{os.getpid()} {'job' if inside else 'outside-a-job'}\\n")
            return _real(*args, **kwargs)

        module.Builder = Builder

if os.environ.get("TRT_WIDGET_TEST_CONTEXT_LOG"):
    _install()
"""


def test_a_retired_workers_successor_creates_no_cuda_context_before_its_first_job(
    small: bytes, wait_until: WaitUntil, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Adversary 10 F8: a warm-up build before ``Hello`` made the successor of a worker retired for its CUDA context
    create one again at once (the notebook's PyTorch never got the memory back), on the current device rather than
    the job's. A successor constructs no Builder until a job does, inside ``_on_device``."""
    import os

    (tmp_path / "sitecustomize.py").write_text(FAKE_CONTEXT)
    log = tmp_path / "contexts.log"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("TRT_WIDGET_TEST_CONTEXT_LOG", str(log))
    monkeypatch.setattr(_process, "HOLDS_CUDA_CONTEXT", frozenset({trt_widget.select_backend()[0]}))
    _pool.shutdown_workers()  # the next builder processes start with the fake
    first = Build(small, history=False).start()
    assert first.wait(180) == "succeeded", first.error
    wait_until(lambda: _ended(first.child_pid), timeout=30, what="the worker holding the context to end")
    wait_until(lambda: _pool.pool.idle_pids(), timeout=120, what="its successor, started before any job")
    successor = _pool.pool.idle_pids()[0]
    second = Build(small, history=False).start()  # a warm-up before Hello would have run before this job
    assert second.wait(180) == "succeeded", second.error
    assert second.child_pid == successor
    lines = log.read_text().split()
    records = list(zip(lines[::2], lines[1::2], strict=True))
    assert (str(first.child_pid), "job") in records  # the fake is in force: a job's Builder is seen
    assert [kind for pid, kind in records if pid == str(successor)] == ["job"], records
    assert all(kind == "job" for _pid, kind in records), records
    # the second's successor started with the fake on its path: no later test may get it from the pool
    wait_until(lambda: _ended(second.child_pid), timeout=30, what="the second worker to end")
    wait_until(lambda: _pool.pool.idle_pids(), timeout=120, what="the second's successor")
    _pool.shutdown_workers()
