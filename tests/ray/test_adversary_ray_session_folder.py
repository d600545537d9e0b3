"""Twenty-first re-run, second half (issue 35): another local user runs code in the Ray workers of a local instance
that trt_widget starts (``matrix --executor ray``, ``serve --executor ray``, ``RayRunner``). ``ray.init()`` keeps its
session in ``/tmp/ray/session_*`` and makes that folder, its ``runtime_resources`` and ``working_dir_files`` mode
0777 without the sticky bit (Ray's ``try_to_create_directory``); the job's ``working_dir`` (trt_widget's empty
folder, so always the same package name) is unpacked there and every worker starts in it, first on ``sys.path``.
``nobody`` moves the unpacked folder aside and puts one of its own in its place: a ``tensorrt_rtx_bindings.py`` there
runs as the command's user (root here) in the worker that builds. Where trt_widget starts the instance it could
give Ray a private ``_temp_dir`` (a 0700 folder of its own). A real local Ray instance, a real RTX build, a real
second user (reproduction: /srv/adv21b/ray_session_plant.sh)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from other_user import NOBODY, can_act_as_nobody
from user_scripts import CLI_MAIN

from trt_widget.models import deep_residual, to_bytes

pytestmark = [pytest.mark.slow, pytest.mark.ray]

PLANTED = 'import os\nopen("{mark}", "w").close()\nraise ImportError("planted by another user")\n'

# nobody's loop: every unpacked working_dir of the command's Ray session (named after the driver's pid) that is not
# its own is moved aside and replaced by a folder holding the planted module; in Ray's shared /tmp/ray and in the
# private folder of trt_widget's (whose Ray folder inside, "r", Ray makes 0777: only the folder above keeps it)
ATTACK = r"""
planted=$1; pid=$2
while :; do
  for t in /tmp/ray/session_*_"$pid"/runtime_resources/working_dir_files/_ray_pkg_* \
           /tmp/trt_widget-ray-"$pid"-*/r/session_*_"$pid"/runtime_resources/working_dir_files/_ray_pkg_*; do
    case $t in *.aside|*.lock|*.zip) continue;; esac
    if [ -d "$t" ] && [ ! -O "$t" ]; then
      mv "$t" "$t.aside" && mkdir "$t" && printf '%s' "$planted" > "$t/tensorrt_rtx_bindings.py"
    fi
  done
  sleep 0.005
done
"""


def test_another_user_cannot_swap_the_working_dir_of_the_local_ray_instance(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    if not can_act_as_nobody():
        pytest.skip("needs root and setpriv, to act as another user")
    work = tmp_path / "project"
    work.mkdir()
    (work / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    mark = tmp_path / "RAN-as-the-command's-user"
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_TMPDIR")}
    env |= {"TRT_WIDGET_HISTORY": "off", "TMPDIR": "/tmp"}  # Ray's default place, and the one the checks look in
    env["RAY_raylet_start_wait_time_s"] = "180"  # its raylet may take long to register on a loaded machine
    for _ in range(3):  # a start Ray's node did not make in its 30 s on a loaded machine is tried again
        command = subprocess.Popen(
            [sys.executable, "-P", "-c", CLI_MAIN, "matrix", "m.onnx", "--executor", "ray", "--opt-level", "0", "1",
             "--plain"],
            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        attacker = subprocess.Popen(
            [*NOBODY, "sh", "-c", ATTACK, "sh", PLANTED.format(mark=str(mark)), str(command.pid)],
            start_new_session=True,
        )
        try:
            said, _ = command.communicate(timeout=300)
        finally:
            os.killpg(attacker.pid, signal.SIGKILL)
            attacker.wait()
            if command.poll() is None:
                command.kill()
                command.wait()
        if "timed out during startup" not in said:
            break
    else:
        pytest.skip("Ray's node did not start on this (loaded) machine in 3 tries")
    # the other user's loop ran all along: it ends only when killed (else it never ran)
    assert attacker.returncode == -signal.SIGKILL, f"the other user's loop had ended (exit {attacker.returncode})"
    assert not mark.exists(), f"another user's module ran in the command's Ray worker: {said[-800:]}"
    assert command.returncode == 0, said[-1500:]
    # the session was the command's own, in its private folder, and went with the instance
    assert not list(Path("/tmp/ray").glob(f"session_*_{command.pid}")), "the session was made in the shared /tmp/ray"
    assert not list(Path("/tmp").glob(f"trt_widget-ray-{command.pid}-*")), "the private folder outlived the command"
