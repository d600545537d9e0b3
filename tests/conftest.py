"""Shared fixtures: small generated ONNX models (nothing downloaded) and a wait-on-state helper."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import gc
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from fixture_types import RunAsync, WaitUntil
from onnx import TensorProto, helper
from other_user import can_act_as_nobody

from trt_widget.models import deep_residual, resnet50, to_bytes

T = TypeVar("T")

E2E = Path(__file__).resolve().parent / "e2e"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the xdist_group marks set here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Real-browser tests run last: their session-wide Playwright (sync API) keeps an event loop running on the
    main thread, which breaks every later test that calls asyncio.run() or starts Playwright itself. Tests that
    wait inside RTX's long step skip with NVIDIA TensorRT (it has no such step; the contract suite covers it).

    Tests that stop a real build inside its long step race that step, and Ray's start gives its node 30 s: both
    are marked ``deadline`` here, so scripts/test.sh runs them alone, after the parallel pass."""
    items.sort(key=lambda item: E2E in Path(str(item.path)).resolve().parents)
    for item in items:
        if "ray_session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)
        if item.get_closest_marker("ray") or item.get_closest_marker("rtx_long_step"):
            item.add_marker(pytest.mark.deadline)
        item.add_marker(pytest.mark.xdist_group(_xdist_group(item)))
    _share_xdist_groups(config, items)
    long_step = [item for item in items if item.get_closest_marker("rtx_long_step")]
    if long_step and _backend_kind() != "rtx":
        skip = pytest.mark.skip(
            reason="waits inside TensorRT for RTX's long 'Determining refit engines' step, a phase NVIDIA TensorRT "
            "does not have (tests/test_gpu_contract.py checks stopping on every backend)"
        )
        for item in long_step:
            item.add_marker(skip)


def _xdist_group(item: pytest.Item) -> str:
    """Which pytest-xdist worker group a test runs in (``-n N --dist loadgroup``, scripts/test.sh): each module's
    tests together, so a module-scoped fixture (a server, a warm builder) starts once and a module's leak check
    sees only that module's processes; every Ray test together, so one worker starts the one Ray instance; the
    e2e tests together, on the one JupyterLab server and Chromium of their session."""
    if item.get_closest_marker("ray"):
        return "ray"
    if E2E in Path(str(item.path)).resolve().parents:
        return "e2e"
    return Path(str(item.path)).resolve().as_posix()


# pytest-xdist's own --dist loadgroup reads these marks by rewriting each test's node id, which pytest 9.2's
# structured node ids ignore (pytest-dev/pytest-xdist#1386): every test was spread on its own. So each worker
# writes the groups it collected to a folder the controller named, and the controller's scheduler reads them.
_GROUPS_DIR = "TRT_WIDGET_XDIST_GROUPS"
# the longest groups start first, so that none of them starts last and ends the run alone
_FIRST = ("ray", "tests/test_bench_smoke.py", "tests/test_install.py", "tests/test_docs_blocks.py")


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):
        import tempfile

        os.environ[_GROUPS_DIR] = tempfile.mkdtemp(prefix="trtw-xdist-")  # the workers inherit it


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and (where := os.environ.pop(_GROUPS_DIR, None)):
        import shutil

        shutil.rmtree(where, ignore_errors=True)


def _share_xdist_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: the longest groups first, then each test's group, written for the controller."""
    workerinput = getattr(config, "workerinput", None)
    where = os.environ.get(_GROUPS_DIR)
    if workerinput is None or not where:
        return
    import json

    root = Path(__file__).resolve().parent.parent

    def group(item: pytest.Item) -> str:
        mark = item.get_closest_marker("xdist_group")
        name = str(mark.args[0]) if mark else item.nodeid
        return Path(name).relative_to(root).as_posix() if name.startswith("/") else name

    first = {name: i for i, name in enumerate(_FIRST)}
    sizes = collections.Counter(group(item) for item in items)
    items.sort(key=lambda item: (first.get(group(item), len(first)), -sizes[group(item)]))  # then the biggest
    groups = {item.nodeid: f"group:{group(item)}" for item in items}
    target = Path(where) / f"{workerinput['workerid']}.json"
    target.with_suffix(".part").write_text(json.dumps(groups))
    target.with_suffix(".part").replace(target)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which the fast tier's environments lack
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` by the groups the workers wrote (above); other ``--dist`` modes as pytest-xdist has them."""
    if config.getvalue("dist") != "loadgroup":
        return None
    import json

    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]  # pytest-xdist ships no type hints
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # called once every worker has sent its collection, so has written its file
                self.groups = {}
                for path in sorted(Path(os.environ[_GROUPS_DIR]).glob("*.json")):
                    self.groups.update(json.loads(path.read_text()))
            return self.groups.get(nodeid, nodeid)

    config.option.loadscopereorder = False  # the order the workers sent (above), not by the number of tests alone
    return GroupScheduling(config, log)


def _backend_kind() -> str | None:
    try:
        from trt_widget._backend import select_backend

        return select_backend()[0]
    except ImportError:
        return None


# Generous: other builds share the two cores while the suite runs.
DEADLINE_S = 180.0


def _wait_until(predicate: Callable[[], T | None], timeout: float = DEADLINE_S, what: str = "condition") -> T:
    """Poll ``predicate`` until it returns something truthy (and return that), or fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)


@pytest.fixture(scope="session")
def native_lib(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Path]:
    """Compile ``tests/native/<source>`` (C or C++) into a shared library named ``soname`` (cached per session);
    skips the test where no compiler is installed."""
    import shutil
    import subprocess

    built: dict[tuple[str, str], Path] = {}

    def compile_lib(source: str, soname: str) -> Path:
        if (source, soname) not in built:
            cpp = source.endswith(".cpp")
            compiler = shutil.which("c++") or shutil.which("g++") if cpp else shutil.which("cc") or shutil.which("gcc")
            if compiler is None:
                pytest.skip(f"no {'C++' if cpp else 'C'} compiler to build the test's native library")
            out = tmp_path_factory.mktemp(Path(source).stem) / soname
            src = Path(__file__).resolve().parent / "native" / source
            flags = ["-std=c++17"] if cpp else []
            subprocess.run([compiler, "-shared", "-fPIC", *flags, "-o", str(out), str(src)], check=True, timeout=120)
            built[(source, soname)] = out
        return built[(source, soname)]

    return compile_lib


@pytest.fixture(autouse=True, scope="session")
def _history_in_a_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Builds record timing history; keep the suite's records out of the user's cache dir (unless set)."""
    if os.environ.get("TRT_WIDGET_HISTORY"):
        yield
        return
    os.environ["TRT_WIDGET_HISTORY"] = str(tmp_path_factory.mktemp("history") / "history.sqlite")
    try:
        yield
    finally:
        os.environ.pop("TRT_WIDGET_HISTORY", None)


@pytest.fixture(autouse=True, scope="module")
def _idle_builders_exit_between_modules_under_coverage() -> Iterator[None]:
    """Under coverage, end the idle builder processes after each test module: a worker saves its coverage data
    only when it exits on its own, and a later test that force-stops a build would SIGKILL the warm worker that
    served many earlier tests, losing what it measured."""
    yield
    if os.environ.get("COVERAGE_PROCESS_CONFIG") or os.environ.get("COVERAGE_PROCESS_START"):
        import trt_widget

        trt_widget.shutdown_workers()


@pytest.fixture
def wait_until() -> WaitUntil:
    """``wait_until(predicate, timeout=..., what=...)``: wait on state with a deadline, never a fixed sleep."""
    return _wait_until


def _run_async(coro: Coroutine[Any, Any, T], timeout: float = DEADLINE_S) -> T:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result(timeout)


@pytest.fixture
def nvidia_timing_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds in this process read and write ``timing_cache=`` as with NVIDIA TensorRT, whatever the backend: the
    one difference faked (TensorRT for RTX builds skip the file; its timing-cache calls, no-ops, stand in for
    NVIDIA's, whose merging tests/test_timing_cache_shared.py shows with a fake of ITimingCache)."""
    from trt_widget import _engine

    monkeypatch.setattr(_engine, "uses_timing_cache", lambda backend: True)


@pytest.fixture
def run_async() -> RunAsync:
    """``run_async(coro)``: ``asyncio.run`` on a fresh thread (the e2e session may keep a loop on this one)."""
    return _run_async


@pytest.fixture
def shared() -> Iterator[Path]:
    """A sticky folder everyone may write to, as /tmp is, that ``nobody`` can reach (pytest's tmp_path is 0700):
    for tests of what another user plants there (tests/other_user.py); skipped where no test can act as one."""
    if not can_act_as_nobody():
        pytest.skip("needs root and setpriv to act as another user")
    folder = Path(tempfile.mkdtemp(prefix="trt-widget-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def small_model() -> Any:
    """A tiny static-shape ``onnx.ModelProto`` (4 residual blocks, input "input" 1x8x8x8): builds in ~0.1 s."""
    return deep_residual(4)


@pytest.fixture
def onnx_path(tmp_path: Path, small_model: Any) -> Path:
    """The small model written to ``tmp_path / "small.onnx"``."""
    path = tmp_path / "small.onnx"
    path.write_bytes(to_bytes(small_model))
    return path


@pytest.fixture
def dynamic_model() -> Any:
    """The small model with a dynamic batch dimension ("N" x 8 x 8 x 8): needs a profile for "input"."""
    return deep_residual(4, batch="N")


@pytest.fixture(scope="session")
def resnet50_bytes() -> bytes:
    """ResNet-50-shaped ONNX bytes (~100 MB of random weights, builds in a few seconds)."""
    return to_bytes(resnet50())


@pytest.fixture(scope="session")
def long_model_bytes() -> bytes:
    """``deep_residual(400)`` ONNX bytes: a build of a few seconds, long enough to stop in the middle."""
    return to_bytes(deep_residual(400))


_COVERAGE_ENV = ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")


@pytest.fixture(scope="session")
def ray_session() -> Iterator[Any]:
    """One local Ray instance for the whole session (2 CPUs, no dashboard), shut down at its end; the ray module.

    Started on first use only. Without Ray installed the tests that use it skip, unless CI is set (then fail)."""
    if os.environ.get("CI"):
        import ray
    else:
        ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        # a failed start's process handles are Ray's, dropped while its processes still end: their "subprocess
        # ... is still running" ResourceWarnings say nothing about this suite's code
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", r"subprocess \d+ is still running", ResourceWarning)
            for attempt in range(3):  # Ray gives its raylet 30 s to register: a loaded machine may need more tries
                try:
                    # Ray's own processes (its node's Python agents, then its workers) start untraced: under coverage
                    # they did not register within the 30 s Ray allows, and the code they run is Ray's, not ours
                    untraced = {k: os.environ.pop(k) for k in _COVERAGE_ENV if k in os.environ}
                    try:
                        ray.init(num_cpus=2, include_dashboard=False)
                    finally:
                        os.environ.update(untraced)
                    break
                except Exception as exc:
                    ray.shutdown()
                    _reap_dead_children()
                    gc.collect()  # the failed start's process handles, here, under the filter below
                    if attempt == 2:
                        # pytest keeps a session fixture's error: every Ray test fails with it, no other test sees it
                        raise RuntimeError(f"Ray did not start (3 tries): {exc}") from exc
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _reap_dead_children() -> None:
    """Collect the exit status of processes a failed Ray start left dead, so no zombie outlives it."""
    import psutil

    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if child.status() == psutil.STATUS_ZOMBIE:
                child.wait(0)


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt here even when the suite was started with SIGINT ignored (``cmd &`` in a
    script, nohup): Python then leaves SIGINT ignored, and ``_thread.interrupt_main()`` does nothing."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def agent_models(tmp_path_factory: pytest.TempPathFactory, long_model_bytes: bytes) -> dict[str, Path]:
    """ONNX files for the MCP and LSP tests: small (builds in ~0.3 s), medium (~1 s), long (a few seconds), text
    (not ONNX), refused (an op the parser has no importer for, on node 'frob_1')."""
    where = tmp_path_factory.mktemp("models")
    paths = {name: where / f"{name}.onnx" for name in ("small", "medium", "long", "text", "refused")}
    paths["small"].write_bytes(to_bytes(deep_residual(4)))
    paths["medium"].write_bytes(to_bytes(deep_residual(100)))
    paths["long"].write_bytes(long_model_bytes)
    paths["text"].write_text("hello, this is not an ONNX model\n")
    node = helper.make_node("Frobnicate", ["x"], ["y"], name="frob_1")
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("x", "y")]
    graph = helper.make_graph([node], "refused", [io[0]], [io[1]])
    paths["refused"].write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    return paths
