"""Sixteenth adversarial re-run (issue 35): "No trt_widget process may import from the working directory ... in
every runner". ``trt-widget matrix --executor ray`` (and ``serve --executor ray``) starts a local Ray instance with
``ray.init()``, and Ray adds the driver's working directory to every worker's ``sys.path``, first
(``JobConfig._py_driver_sys_path``): a ``tensorrt_rtx_bindings.py`` planted in the folder the command runs from runs
inside the Ray worker that builds. A real local Ray instance and a real RTX build; the planted module only leaves a
mark and refuses to load."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget.models import deep_residual, to_bytes

pytestmark = [pytest.mark.slow, pytest.mark.ray]

PLANTED = """
import os
open(os.path.join({folder!r}, "RAN-" + str(os.getpid())), "w").close()
raise ImportError("a module planted in the working directory")
"""


@pytest.mark.xfail(
    strict=True,
    reason="issue 35, 16th re-run W5: Ray workers of matrix --executor ray put the command's working directory "
    "first on sys.path; a tensorrt_rtx_bindings.py there runs in the worker",
)
def test_a_module_in_the_working_directory_never_runs_in_a_ray_worker(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    work = tmp_path / "project"
    work.mkdir()
    (work / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    (work / "tensorrt_rtx_bindings.py").write_text(PLANTED.format(folder=str(work)), encoding="utf-8")
    # -P: the command itself imports nothing from there (as the `trt-widget` script); a local Ray instance of its own
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["TRT_WIDGET_HISTORY"] = "off"
    done = subprocess.run(
        [sys.executable, "-P", "-m", "trt_widget", "matrix", "m.onnx", "--executor", "ray", "--opt-level", "0",
         "--plain"],
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    said = done.stdout + done.stderr
    ran = [name for name in os.listdir(work) if name.startswith("RAN-")]
    assert not ran, f"the planted module ran in process(es) {ran}: {said[-1000:]}"
    assert done.returncode == 0, said[-1500:]
