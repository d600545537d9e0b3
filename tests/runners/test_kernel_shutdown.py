"""A Jupyter kernel that built in a worker process shuts down on its own: ipykernel's shutdown signals the
children in its process group until they are reaped, so a builder worker there kept the kernel alive until
Jupyter terminated it (its atexit handlers never ran; "Restart kernel" waited seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
from jupyter_client.manager import start_new_kernel

CODE = """
import atexit, json, os
from trt_widget import Build, models
from trt_widget.runners import pool
build = Build(models.to_bytes(models.deep_residual(4)), history=False).start()
build.wait(timeout=300)
atexit.register(lambda: open({marker!r}, "w").write("exited on its own"))
print(json.dumps({{"status": build.status, "workers": pool.idle_pids(), "kernel": os.getpid()}}))
"""


def test_a_kernel_with_a_warm_builder_exits_on_its_own(tmp_path: Path) -> None:
    marker = tmp_path / "atexit-ran"
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        outputs: list[str] = []
        client.execute_interactive(
            CODE.format(marker=str(marker)),
            timeout=300,
            output_hook=lambda msg: outputs.append(msg["content"].get("text", "")),
        )
        seen = json.loads("".join(outputs).strip().splitlines()[-1])
        assert seen["status"] == "succeeded" and seen["workers"], seen  # a warm worker is waiting for work
        manager.shutdown_kernel(now=False)  # what "Shut down" / "Restart" do: ask, then SIGTERM after a while
    finally:
        client.stop_channels()
        if manager.is_alive():
            manager.shutdown_kernel(now=True)
    assert marker.read_text() == "exited on its own"  # not terminated by Jupyter
    for pid in seen["workers"]:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
