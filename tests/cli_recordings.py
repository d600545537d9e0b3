"""Recordings made and replayed through the real CLI: ``trt-widget build --json`` and ``trt-widget view --report``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from trt_widget.models import to_bytes

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
