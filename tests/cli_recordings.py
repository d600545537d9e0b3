"""Recordings made and replayed through the real CLI: ``trt-widget build --json`` and ``trt-widget view --report``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from trt_widget.models import deep_residual, to_bytes

if TYPE_CHECKING:
    from onnx import ModelProto


def record_build(folder: Path, model: ModelProto, recording: str, timeout: float) -> Path:
    """``trt-widget build deep.onnx -o deep.engine --json > RECORDING`` in ``folder`` (a real RTX build in a builder
    process, history off), with ``model`` as deep.onnx; the build must succeed. Returns the recording's path."""
    (folder / "deep.onnx").write_bytes(to_bytes(model))
    environ = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    with (folder / recording).open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "trt_widget", "build", "deep.onnx", "-o", "deep.engine", "--json"],
            cwd=folder,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            env=environ,
            timeout=timeout,
        )
    assert done.returncode == 0, done.stderr
    return folder / recording


def recorded_events(folder: Path) -> list[str]:
    """The ``events=`` lines of a real build of ``deep_residual(2)`` in ``folder`` (through the Python API, the
    writer thread joined, so ``build_end`` is the last line): what the adversary tests make hostile recordings of."""
    from trt_widget import Build

    model = folder / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    events = folder / "real.jsonl"
    build = Build(str(model), output=str(folder / "m.engine"), events=str(events))
    build.start().result(timeout=300)
    assert build.status == "succeeded", build.error
    assert build.events is not None and build.events.join(60)  # the writer thread has written build_end
    return events.read_text().splitlines()


def view_with_report(recording: Path, report: Path) -> str:
    """``trt-widget view RECORDING --plain --report REPORT``, which must succeed: what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(recording), "--plain", "--report", str(report)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
