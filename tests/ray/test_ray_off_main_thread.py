"""Ray started from a build's thread, as a notebook's BuildMatrix starts it: no "SIGTERM handler is not set"
warning reaches the cell, and the queued row says Ray is starting (issue 39); the build still runs on Ray."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from user_scripts import RAY_UNTRACED

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.ray]

SCRIPT = (
    RAY_UNTRACED
    + """
import time
from trt_widget import RayRunner, models
from trt_widget.matrix import BuildMatrix
from trt_widget.matrix._widget import build_row

runner = RayRunner(init_kwargs={"num_cpus": 1, "include_dashboard": False})
matrix = BuildMatrix(models.deep_residual(2), executor=runner).start()  # ray.init runs on a build's thread
cell, waits = matrix.cells[0], []
while not cell.build.done():
    row = build_row(cell)
    if row["status"] == "queued" and row["detail"] not in waits:
        waits.append(row["detail"])
    time.sleep(0.02)
print("WAITED", waits, flush=True)
print("STATUS", cell.build.status, cell.build.status_detail, flush=True)
"""
)


def test_ray_started_by_a_matrix_build_says_so_and_prints_no_sigterm_warning(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # a local instance of its own
    for _ in range(3):  # Ray gives its node 30 s (fixed in Ray): on a loaded machine a start may need more tries
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
            check=False,
        )  # fmt: skip
        said = done.stdout + done.stderr
        if not ("STATUS failed" in done.stdout and "timed out during startup" in said):
            break
    else:
        pytest.skip("Ray's node did not start on this (loaded) machine in 3 tries")
    assert "STATUS succeeded" in done.stdout, said[-3000:]
    assert "SIGTERM handler" not in said, said[-3000:]
    # the row says why the first build waits: Ray is starting (then: for a worker)
    waited = next(line for line in done.stdout.splitlines() if line.startswith("WAITED"))
    assert "'starting a local Ray instance …'" in waited, said[-3000:]
