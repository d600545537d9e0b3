"""Ray started from a build's thread, as a notebook's BuildMatrix starts it: no "SIGTERM handler is not set"
warning reaches the cell (issue 39); the build still runs on Ray."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.ray]

SCRIPT = """
import threading
from trt_widget import Build, RayRunner, models

runner = RayRunner(init_kwargs={"num_cpus": 1, "include_dashboard": False})
build = Build(models.deep_residual(2), runner=runner).start()  # ray.init runs off the main thread
print("STATUS", build.wait(240), build.status_detail, flush=True)
"""


def test_ray_started_off_the_main_thread_prints_no_sigterm_warning(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # a local instance of its own
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert "STATUS succeeded" in done.stdout, said[-3000:]
    assert "SIGTERM handler" not in said, said[-3000:]
