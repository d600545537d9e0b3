"""``PerProcess`` (trt_widget/_fork.py), the one guard of state that belongs to the process that made it (the
builds inside TensorRT, ``trt-widget run``'s commands and launcher, the private directories' lock): a forked child
gets its own, whether the fork ran Python's at-fork hooks (``os.fork``, ``multiprocessing``) or not (a C library's
``fork()``), and the parent keeps its own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")

# in a fresh interpreter with one thread: a fork from pytest's own (threaded) process is what Python 3.12 deprecates
SCRIPT = r"""
import ctypes, os, threading
from trt_widget._fork import PerProcess

state = PerProcess(list)
state.get().append("the parent's")
lock = PerProcess(threading.Lock)
lock.get().acquire()  # held at the fork, as by a thread of the parent that a child does not have

def child(fork):
    pid = fork()
    if pid == 0:
        own = state.get() == [] and lock.get().acquire(timeout=10)
        state.get().append("the child's")
        os._exit(0 if own else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

hooks, no_hooks = child(os.fork), child(ctypes.PyDLL(None).fork)  # libc's fork runs no at-fork hook
print(hooks, no_hooks, state.get(), lock.get().locked())
"""


def test_a_forked_child_gets_its_own_state_with_or_without_fork_hooks() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[0] == '0 0 ["the parent\'s"] True', done.stdout
