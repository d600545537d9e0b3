"""Thirteenth adversarial re-run (issue 35): a model path that is not a regular file (a FIFO, a link to
``/dev/zero``) given to the Python API. The CLI, MCP and LSP refuse it at once ("not an ONNX file"); ``Build()``
itself opens and reads it before any check (the output-path policy's ``model_inputs`` looks for external data),
so a FIFO holds the constructor for ever and ``/dev/zero`` is read until memory runs out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = r"""
import resource, sys
limit = 3 << 30  # an address-space cap, so that reading /dev/zero ends in this child, not the OOM killer
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from trt_widget import Build
try:
    build = Build(sys.argv[1], isolation="thread", history=False, resources=False)
    build.start()
    build.wait(120)
    print("status", build.status, str(build.error)[:200], flush=True)
except (OSError, ValueError) as exc:
    print("refused", exc, flush=True)
print("maxrss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, flush=True)
"""


def _build(path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], cwd=path.parent, capture_output=True, text=True, timeout=timeout
    )


def test_a_fifo_as_the_model_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    try:
        done = _build(fifo, timeout=60)  # a refusal takes a second or two; the defect waits for a writer for ever
    except subprocess.TimeoutExpired:
        pytest.fail("Build() of a FIFO never returned (blocked opening it)")
    assert "status failed" in done.stdout or "refused" in done.stdout, done.stdout + done.stderr
    assert "not a regular file" in done.stdout and "directory" not in done.stdout, done.stdout  # said what it is


def _peak_mb(done: subprocess.CompletedProcess[str]) -> int:
    return int(done.stdout.split("maxrss_mb", 1)[1].split()[0])


def test_a_link_to_dev_zero_as_the_model_is_not_read_into_memory(tmp_path: Path) -> None:
    link = tmp_path / "model.onnx"
    link.symlink_to("/dev/zero")
    done = _build(link, timeout=300)
    assert "status failed" in done.stdout or "refused" in done.stdout, done.stdout + done.stderr
    assert "not a regular file" in done.stdout, done.stdout  # for what it is, not for any other cause
    # against a build that fails on a small text model in the same way (TensorRT loaded: ~1 GB on some machines)
    text = tmp_path / "text.onnx"
    text.write_text("not a model\n")
    baseline = _build(text, timeout=300)
    assert "status failed" in baseline.stdout, baseline.stdout + baseline.stderr
    assert _peak_mb(done) < _peak_mb(baseline) + 256, f"{_peak_mb(done)} MB vs {_peak_mb(baseline)} MB: /dev/zero read"
