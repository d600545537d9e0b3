"""Sixteenth adversarial re-run (issue 35): "No trt_widget process may import from the working directory ... in
every runner". ``trt-widget matrix --executor ray`` (and ``serve --executor ray``) starts a local Ray instance with
``ray.init()``, and Ray adds the driver's working directory to every worker's ``sys.path``, first
(``JobConfig._py_driver_sys_path``): a ``tensorrt_rtx_bindings.py`` planted in the folder the command runs from ran
inside the Ray worker that builds. Now Ray gets an empty folder of ours as the job's ``working_dir``. A real local
Ray instance and a real RTX build; the planted module only leaves a mark and refuses to load."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from user_scripts import CLI_MAIN, RAY_UNTRACED

from trt_widget.models import deep_residual, to_bytes

pytestmark = [pytest.mark.slow, pytest.mark.ray]

PLANTED = """
import os
open(os.path.join({folder!r}, "RAN-" + str(os.getpid())), "w").close()
raise ImportError("a module planted in the working directory")
"""

# the build server with the Ray executor, as ``trt-widget serve --executor ray`` runs it (Ray started off the main
# thread, by the server's warm-up), and one build sent to it
SERVE = (
    RAY_UNTRACED
    + """
import sys
from trt_widget.models import deep_residual
from trt_widget.serve import ServerThread
from trt_widget.serve._client import RemoteBuild

with ServerThread(data=sys.argv[1], executor="ray", max_concurrent=1) as server:
    build = RemoteBuild(server.url, server.token, deep_residual(2)).start()
    print("STATUS", build.wait(240), build.status_detail, flush=True)
"""
)


def _planted_folder(tmp_path: Path) -> Path:
    work = tmp_path / "project"
    work.mkdir()
    (work / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    (work / "tensorrt_rtx_bindings.py").write_text(PLANTED.format(folder=str(work)), encoding="utf-8")
    return work


def _run(args: list[str], work: Path) -> subprocess.CompletedProcess[str]:
    """``python -P`` (the command itself imports nothing from ``work``, as the ``trt-widget`` script) in ``work``,
    with a local Ray instance of its own; a start Ray's node did not make in its 30 s on a loaded machine is
    tried again (3 tries, then the test skips)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["TRT_WIDGET_HISTORY"] = "off"
    for _ in range(3):
        try:
            done = subprocess.run(
                [sys.executable, "-P", *args], cwd=work, env=env, capture_output=True, text=True, timeout=300,
                check=False,
            )  # fmt: skip
        finally:
            _end_left(work)
        if "timed out during startup" not in done.stdout + done.stderr:
            return done
    pytest.skip("Ray's node did not start on this (loaded) machine in 3 tries")


def _end_left(work: Path) -> None:
    """End what the command's Ray left running in ``work`` (the raylet's agents outlive it for up to a minute)."""
    import psutil

    left = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.cwd() == str(work):
                left.append(process)
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    _gone, alive = psutil.wait_procs(left, timeout=2)  # Ray's dashboard and runtime-env agents ignore SIGTERM
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()


def test_a_module_in_the_working_directory_never_runs_in_a_ray_worker(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    work = _planted_folder(tmp_path)
    done = _run(["-c", CLI_MAIN, "matrix", "m.onnx", "--executor", "ray", "--opt-level", "0", "--plain"], work)
    said = done.stdout + done.stderr
    ran = [name for name in os.listdir(work) if name.startswith("RAN-")]
    assert not ran, f"the planted module ran in process(es) {ran}: {said[-1000:]}"
    assert done.returncode == 0, said[-1500:]


def test_nor_in_the_ray_workers_of_serve(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    work = _planted_folder(tmp_path)
    done = _run(["-c", SERVE, str(tmp_path / "data")], work)
    said = done.stdout + done.stderr
    ran = [name for name in os.listdir(work) if name.startswith("RAN-")]
    assert not ran, f"the planted module ran in process(es) {ran}: {said[-1000:]}"
    assert "STATUS succeeded" in done.stdout, said[-1500:]
