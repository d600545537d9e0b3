"""Stress (not a test): SIGKILL a watcher whose command started a ``sleep`` grandchild, many times, and count the
grandchildren that outlive it (issue 35, D7). The watcher is a ``watch_call(fn, isolation="process")`` caller or
``trt-widget run``; ``--fds K`` has it open K pipes first, so that its relay connection (a higher fd) is released
first on its death and the rest of its exit takes longer: the command ends itself on its connection's EOF while
the watcher is still exiting, before the supervisor gets its death signal.

    .venv/bin/python scripts/stress_grandchild.py --tries 100 --fds 9000

It watches with the trt_widget that Python imports from a neutral folder: set ``PYTHONPATH`` to try another copy.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

OPEN_FDS = textwrap.dedent(
    """
    import os, resource, sys
    _k = int(os.environ["STRESS_FDS"])
    _soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (_hard, _hard))
    _k = min(_k, (_hard - 1024) // 2)
    _pipes = [os.pipe() for _ in range(_k)]
    """
)

# a `watch_call(fn, isolation="process")` caller whose function starts a `sleep` and writes its pid to argv[1]
# (tests/watch/test_process_call_lifecycle.py runs it once, here it runs many times)
GRANDCHILD_CALLER = textwrap.dedent(
    """
    import sys, time
    import trt_widget

    def fn(pid_file):
        import os, subprocess, time
        sleep = subprocess.Popen(["sleep", "1000"])
        open(pid_file + ".part", "w").write(str(sleep.pid))
        os.rename(pid_file + ".part", pid_file)
        time.sleep(600)

    trt_widget.watch_call(fn, sys.argv[1], isolation="process")
    time.sleep(600)
    """
)

CALLER = OPEN_FDS + GRANDCHILD_CALLER

# the command of `trt-widget run`: a Python process (it connects to the relay) that starts sleep
COMMAND = textwrap.dedent(
    """
    import os, subprocess, sys, time
    sleep = subprocess.Popen(["sleep", "1000"])
    open(sys.argv[1] + ".part", "w").write(str(sleep.pid))
    os.rename(sys.argv[1] + ".part", sys.argv[1])
    time.sleep(600)
    """
)

RUN = OPEN_FDS + textwrap.dedent(
    """
    import runpy
    sys.argv = ["trt-widget", "run", "--plain", "--", sys.executable, "-c", sys.argv[2], sys.argv[1]]
    runpy.run_module("trt_widget", run_name="__main__")
    """
)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not); the tests' too (tests/user_scripts.py)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def one(mode: str, fds: int, folder: Path, settle: float) -> bool | None:
    """One try: True when the grandchild outlived the watcher, None when it never started."""
    pid_file = folder / "sleep.pid"
    env = {**os.environ, "TMPDIR": str(folder), "TRT_WIDGET_HISTORY": "off", "STRESS_FDS": str(fds)}
    argv = [sys.executable, "-c", CALLER, str(pid_file)]
    if mode == "run":
        argv = [sys.executable, "-c", RUN, str(pid_file), COMMAND]
    proc = subprocess.Popen(argv, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not pid_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            return None
        time.sleep(0.05)
    sleep = int(pid_file.read_text())
    time.sleep(settle)  # the command back asleep
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while alive(sleep) and time.monotonic() < deadline:
        time.sleep(0.05)
    survived = alive(sleep)
    if survived:
        os.kill(sleep, signal.SIGKILL)
    return survived


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=100)
    parser.add_argument("--fds", type=int, default=0, help="pipes the watcher opens first (widens the race)")
    parser.add_argument("--mode", choices=("call", "run"), default="call")
    parser.add_argument("--settle", type=float, default=0.2, help="seconds between the pid and the SIGKILL")
    args = parser.parse_args()
    survivors = failed = 0
    for n in range(args.tries):
        with tempfile.TemporaryDirectory(prefix="stress-d7-") as folder:
            result = one(args.mode, args.fds, Path(folder), args.settle)
        failed += result is None
        survivors += bool(result)
        print(f"try {n + 1}: {'no start' if result is None else 'SURVIVED' if result else 'ended'}", flush=True)
    print(
        f"{args.mode}, fds={args.fds}: {survivors} of {args.tries - failed} grandchildren survived ({failed} no start)"
    )


if __name__ == "__main__":
    main()
