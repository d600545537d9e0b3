"""Ctrl-C while ``trt-widget matrix --executor ray`` still starts Ray: exit 130, no segfault, no Ray process left.

A KeyboardInterrupt inside ``ray.init`` (after "Started a local Ray instance", while the driver connects) left a
half-connected core worker whose shutdown at the interpreter's exit crashed: "Segmentation fault", exit 139."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from fixture_types import WaitUntil
from user_scripts import CLI_MAIN, default_sigint

from trt_widget import models

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def _session_processes(sid: int) -> list[str]:
    """The live processes of session ``sid`` (zombies not counted: they are dead, awaiting their parent)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # state, ppid, pgrp, session, ...
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(stat[: stat.rindex(")") + 1])
    return found


def _interrupt_while_ray_starts(folder: Path, env: dict[str, str]) -> tuple[int, str, int] | None:
    """Run the matrix; send the Ctrl-C once Ray says it started (``ray.init`` then connects the driver). Its exit
    code, its stderr and its session id; None when Ray failed to start before that (a loaded machine)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI_MAIN, "matrix", "long.onnx", "a.onnx", "--executor", "ray", "--plain"],
        cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=default_sigint,
    )  # fmt: skip
    lines: list[str] = []
    started = threading.Event()

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "Started a local Ray instance" in line:  # ray.init says so before the driver connects
                started.set()
        started.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert started.wait(420), "".join(lines)
        if proc.poll() is not None and "trt-widget: error: Ray:" in "".join(lines):
            return None
        os.killpg(proc.pid, signal.SIGINT)  # a Ctrl-C in the terminal: the whole foreground group
        code = proc.wait(120)
        reader.join(30)
        said = "".join(lines)
        # Ray failed on its own between the poll above and the signal ("GCS overloaded" on a loaded machine): a
        # Ctrl-C that reached ray.init would have ended the process first (130, "interrupted"), so a try again
        if code == 1 and "trt-widget: error: Ray:" in said and "trt-widget: interrupted" not in said:
            return None
        return code, said, proc.pid
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        reader.join(30)
        assert proc.stderr is not None
        proc.stderr.close()


def test_ctrl_c_while_ray_starts_exits_130_without_a_crash(tmp_path: Path, wait_until: WaitUntil) -> None:
    pytest.importorskip("ray")
    (tmp_path / "long.onnx").write_bytes(models.to_bytes(models.deep_residual(400)))
    (tmp_path / "a.onnx").write_bytes(models.to_bytes(models.deep_residual(2)))
    ray_dir = tempfile.mkdtemp(prefix="rci", dir="/tmp")  # short: Ray's socket paths live under it
    # a local instance of its own; its raylet may take long to register on a loaded machine
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env |= {"TRT_WIDGET_HISTORY": "off", "RAY_TMPDIR": ray_dir, "RAY_raylet_start_wait_time_s": "180"}
    session: int | None = None
    try:
        for _attempt in range(3):  # and should Ray still fail to start, it is tried again
            result = _interrupt_while_ray_starts(tmp_path, env)
            if result is not None:
                break
        assert result is not None, "Ray did not start in 3 tries"
        code, said, sid = result
        session = sid
        # the same Ctrl-C reaches Ray's raylet (the terminal's whole group): where it ends first, Ray's core worker
        # in the driver exits the process itself (code 1, "Failed to read data from the socket") before trt_widget's
        # handler runs (ci29): Ray's own exit, no crash; the checks below hold for both
        ray_exit = code == 1 and "Failed to read data from the socket" in said
        assert code == 130 or ray_exit, (code, said[-3000:])
        assert "Segmentation fault" not in said and "Fatal Python error" not in said, said[-3000:]
        # Ray's processes (raylet, GCS, agents, workers) end with it: none of its session is left
        wait_until(lambda: not _session_processes(sid), timeout=60, what="Ray's processes to end")
    finally:
        for process in _session_processes(session) if session is not None else []:
            with contextlib.suppress(OSError):
                os.kill(int(process.split()[0]), signal.SIGKILL)
        shutil.rmtree(ray_dir, ignore_errors=True)
