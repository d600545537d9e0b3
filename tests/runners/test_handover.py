"""How the model and the engine cross between a build and its builder process, with real builds.

One copy through the kernel (``process_vm_writev`` / ``process_vm_readv``) where it allows; files in the build's
work directory where it refuses. A refusing kernel (another OS, a seccomp filter, Yama's ``ptrace_scope`` 3)
cannot be had here: it is faked by the copy functions answering exactly as they do when the kernel refuses.
With ``output=`` the builder process writes the engine beside it, and the build renames it into place.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from fixture_types import WaitUntil

from trt_widget import models
from trt_widget._build import Build
from trt_widget._errors import BuildError
from trt_widget._pool import pool, shutdown_workers
from trt_widget.runners import _memory, _process, _worker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def small() -> bytes:
    return models.to_bytes(models.deep_residual(20))


@pytest.fixture(scope="module")
def reference(small: bytes) -> bytes:
    """The engine TensorRT makes of ``small`` in this process (engines of one model are identical here)."""
    return Build(small, isolation="thread", history=False).start().result(120)


def spy(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[tuple[Any, Any]]:
    """Record every call of ``owner.name`` as (arguments, result); the original still runs."""
    calls: list[tuple[Any, Any]] = []
    original = getattr(owner, name)

    def recording(*args: Any) -> Any:
        result = original(*args)
        calls.append((args, result))
        return result

    monkeypatch.setattr(owner, name, recording)
    return calls


def test_bytes_model_and_engine_cross_in_one_copy_each(
    monkeypatch: pytest.MonkeyPatch, small: bytes, reference: bytes
) -> None:
    written = spy(monkeypatch, _worker, "write_first")  # the parent's file fallback for the model
    copied_in = spy(monkeypatch, _memory, "write_to")
    copied_out = spy(monkeypatch, _memory, "read_from")
    engine = Build(small, history=False).start().result(120)
    assert engine == reference
    assert [result for _, result in copied_in] == [True]
    assert copied_in[0][0][2] == small  # the model bytes went straight into the builder process
    assert [result == reference for _, result in copied_out] == [True]
    assert written == []  # no model file was written


@pytest.mark.parametrize("refusal", ["kernel refuses the copy", "no such system call"])
def test_where_the_copy_is_refused_files_carry_model_and_engine(
    monkeypatch: pytest.MonkeyPatch, small: bytes, reference: bytes, refusal: str
) -> None:
    if refusal == "kernel refuses the copy":  # what write_to / read_from answer when the call fails (EPERM)
        monkeypatch.setattr(_memory, "write_to", lambda pid, address, data: False)
        monkeypatch.setattr(_memory, "read_from", lambda pid, address, size: None)
    else:  # not Linux: available() is False and nothing is tried
        monkeypatch.setattr(_memory, "available", lambda: False)
    written = spy(monkeypatch, _worker, "write_first")
    received = spy(monkeypatch, _process._Relay, "_receive_engine")
    build = Build(small, history=False).start()
    assert build.result(120) == reference
    assert [Path(args[1]).name for args, _ in written] == ["model.onnx"]
    ((args, _),) = received
    assert Path(args[1]).name == "engine.plan"  # the worker wrote it to the work directory
    assert not os.path.exists(args[1])  # ... which is gone with the build
    assert build.child_pid in pool.idle_pids()  # and the worker serves the next build


def started_with_output(folder: Path, model: bytes) -> tuple[Build, Path]:
    """A build of ``folder/m.onnx`` writing ``folder/m.engine`` (``output=``), started; and that output path."""
    (folder / "m.onnx").write_bytes(model)
    output = folder / "m.engine"
    return Build(str(folder / "m.onnx"), output=str(output), history=False).start(), output


def test_with_output_the_engine_is_renamed_into_place_and_read_on_first_use(
    tmp_path: Path, small: bytes, reference: bytes
) -> None:
    build, output = started_with_output(tmp_path, small)
    assert build.wait(120) == "succeeded", build.status_detail
    assert output.read_bytes() == reference
    assert build.engine_size == len(reference)  # known without reading the file
    # no temporary file left: the engine, its manifest and the model
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.engine", "m.engine.manifest.json", "m.onnx"]
    assert build.engine == reference
    output.unlink()  # read once, the engine stays with the build
    assert build.result() == reference


def test_an_output_replaced_before_first_use_is_not_taken_for_the_engine(tmp_path: Path, small: bytes) -> None:
    build, output = started_with_output(tmp_path, small)
    assert build.wait(120) == "succeeded", build.status_detail
    replacement = tmp_path / "other"
    replacement.write_bytes(b"not this build's engine")
    os.replace(replacement, output)
    with pytest.raises(BuildError, match="replaced or changed after this build wrote it"):
        build.engine  # noqa: B018
    assert build.engine_size is not None and build.status == "succeeded"


def test_a_worker_started_for_another_backend_is_not_used(small: bytes, wait_until: WaitUntil) -> None:
    shutdown_workers()  # an empty pool: the pre-started worker is kept, whatever others the suite left
    before = set(pool.idle_pids())
    pool.prewarm("tensorrt")  # as likely_backend() guesses on a machine with both modules and a GPU
    wait_until(lambda: set(pool.idle_pids()) - before, what="the pre-started worker")
    (stranger,) = set(pool.idle_pids()) - before
    build = Build(small, history=False).start()
    assert build.wait(120) == "succeeded", build.status_detail
    assert build.child_pid != stranger
    wait_until(lambda: not psutil.pid_exists(stranger), what="the other backend's worker to end")


def _early_start(*argv: str) -> str:
    code = (
        "import sys, time\n"
        "from trt_widget.__main__ import _start_builder_early\n"
        f"_start_builder_early({list(argv)!r}, True)\n"
        "from trt_widget._pool import pool\n"
        "print(len(pool.idle_pids()), sorted(m for m in sys.modules if m.startswith('tensorrt')), pool.one_build)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60).stdout


def test_the_command_line_starts_its_builder_before_importing_tensorrt() -> None:
    started = time.monotonic()
    assert _early_start("build", "m.onnx", "-o", "m.engine").strip() == "1 [] True"  # one build, then it ends
    assert time.monotonic() - started < 60
    assert _early_start("build", "m.onnx", "--isolation", "thread").strip() == "0 [] False"
    assert _early_start("build", "m.onnx", "--isolation=thread").strip() == "0 [] False"
    assert _early_start("build", "--help").strip() == "0 [] False"
    assert _early_start("view", "recording.jsonl").strip() == "0 [] False"


def test_a_command_lines_worker_ends_with_its_one_build(monkeypatch: pytest.MonkeyPatch, small: bytes) -> None:
    monkeypatch.setattr(pool, "one_build", True)  # what `trt-widget build` sets for its process
    released: list[Any] = []
    release = pool.release

    def keep(worker: Any, used: bool = True) -> None:
        if used:
            released.append(worker)
        release(worker, used)

    monkeypatch.setattr(pool, "release", keep)
    build = Build(small, history=False).start()
    assert build.wait(120) == "succeeded", build.status_detail
    pid = build.child_pid
    assert pid is not None and pid not in pool.idle_pids()
    (worker,) = [w for w in released if w.pid == pid]
    # its own Popen: the pool may already have reaped it (a poll), where psutil would find no such process
    assert worker.process.wait(10) == 0  # it ended on its own (its pipe closed), not killed
    shutdown_workers()  # nothing of it is left to reap
