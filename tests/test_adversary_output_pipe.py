"""Sixteenth adversarial re-run (issue 35): ``-o /dev/stdout`` (a trtexec habit: ``--saveEngine=/dev/stdout``) when
the standard output is a pipe. The path resolves to ``/proc/<pid>/fd/pipe:[N]``, which ``check_writable`` takes for
a new file in a writable folder (``/proc/<pid>/fd`` passes ``os.access`` for its own process), so the whole build
runs and then fails: "the engine was built but could not be written to /dev/stdout: [Errno 2] No such file or
directory ... make room there". A pipe is no regular file: it should be refused before the build's time is spent
(as a FIFO or a character device already is), or written. A real RTX build. The same rule holds for every file a
build writes (engine, --report, --trace, --log-file, timing cache, events=) on every surface (the CLI's commands, the
Python API, the agents' BuildRegistry), and for a folder where no file can be created (``/proc/self/fd/N``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget import Build
from trt_widget.mcp import BadInput, BuildRegistry
from trt_widget.models import deep_residual, to_bytes


def test_an_output_that_is_a_pipe_is_refused_before_the_build_or_written(tmp_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    done = subprocess.run(  # stdout is a pipe here, as in `trt-widget build ... -o /dev/stdout | consumer`
        [sys.executable, "-m", "trt_widget", "build", "m.onnx", "-o", "/dev/stdout", "--plain"],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    said = (done.stdout + done.stderr).decode("utf-8", "replace")
    assert "the engine was built but could not be written" not in said, said[-1500:]
    if done.returncode == 0:  # written into the pipe: the engine's bytes came out
        assert b"Building" not in done.stdout[:64], said[-1500:]
    else:  # refused up front, as a pipe: no build ran
        assert "Building engine" not in said, said[-1500:]
        assert NAMELESS in said and "Traceback" not in said, said[-1500:]


NAMELESS = "a process's open file with no name on disk"

# every CLI surface, each file the build writes: stdout (or fd 1) a pipe, refused in one line before any build
SURFACES = {
    "trtexec --saveEngine": ["trtexec", "--onnx=m.onnx", "--saveEngine=/dev/stdout"],
    "build -o /dev/fd/1": ["build", "m.onnx", "-o", "/dev/fd/1", "--plain"],
    "build --report": ["build", "m.onnx", "-o", "m.engine", "--report", "/dev/stdout", "--plain"],
    "build --trace": ["build", "m.onnx", "-o", "m.engine", "--trace", "/proc/self/fd/1", "--plain"],
    "build --timing-cache": ["build", "m.onnx", "-o", "m.engine", "--timing-cache", "/dev/stdout", "--plain"],
    "build --log-file": ["build", "m.onnx", "-o", "m.engine", "--log-file", "/dev/stdout", "--plain"],
    "demo -o": ["demo", "-o", "/dev/stdout", "--plain"],
    "bundle -o": ["bundle", "m.onnx", "-o", "/dev/stdout"],
    "matrix -o": ["matrix", "m.onnx", "-o", "/dev/fd", "--plain"],
}


@pytest.mark.parametrize("argv", list(SURFACES.values()), ids=list(SURFACES))
def test_every_cli_output_into_a_pipe_is_refused_before_the_build(tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    done = subprocess.run([sys.executable, "-m", "trt_widget", *argv], cwd=tmp_path, capture_output=True, timeout=300)
    said = (done.stdout + done.stderr).decode("utf-8", "replace")
    assert done.returncode != 0, said[-1500:]
    assert "Traceback" not in said, said[-1500:]
    assert NAMELESS in said or "no file can be created in the folder /proc/" in said, said[-1500:]
    assert "could not be written" not in said and "Succeeded" not in said, said[-1500:]
    assert not (tmp_path / "m.engine").exists()  # refused before the build: nothing was built


def test_runs_report_into_a_pipe_is_refused_before_the_command_runs(tmp_path: Path) -> None:
    """``trt-widget run --report`` writes after the command's builds: the same rule, checked before it starts."""
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "run", "--report", "/dev/stdout", "--", "touch", "ran"],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    said = (done.stdout + done.stderr).decode("utf-8", "replace")
    assert done.returncode == 1, said[-1500:]
    assert NAMELESS in said, said[-1500:]
    assert not (tmp_path / "ran").exists()


def _pipe_path() -> tuple[str, int, int]:
    """A path that reaches an anonymous pipe, as /dev/stdout does when stdout is one (pytest's is a file)."""
    read, write = os.pipe()
    return f"/proc/self/fd/{write}", read, write


def test_the_python_api_refuses_a_pipe_for_each_file_a_build_writes(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    path, read, write = _pipe_path()
    try:
        for name in ("output", "timing_cache", "log_file", "events"):
            with pytest.raises((OSError, ValueError), match=re.escape(NAMELESS)):  # as for a FIFO or a device
                Build(str(model), **{name: path})  # type: ignore[arg-type]
        with pytest.raises(OSError, match="no file can be created in the folder /proc/"):
            Build(str(model), output=f"/proc/self/fd/{max(read, write) + 100}")  # no such descriptor
        build = Build(str(model))
        build.start().result(timeout=300)
        for method in (build.to_html, build.to_trace):
            with pytest.raises(OSError, match=re.escape(NAMELESS)):
                method(path)
    finally:
        os.close(read)
        os.close(write)


def test_an_agents_output_into_a_pipe_is_refused(tmp_path: Path) -> None:
    """The MCP and LSP servers share ``BuildRegistry.create``."""
    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    path, read, write = _pipe_path()
    registry = BuildRegistry()
    try:
        with pytest.raises(BadInput, match=re.escape(NAMELESS)):
            registry.create(str(model), output=path)
    finally:
        os.close(read)
        os.close(write)
    assert registry.entries() == []
