"""The pool never drops a builder process that still runs: a worker slow to read its pipe's EOF (a new one still
warming up, which reads the pipe only after its first build) stays listed until reaped. Dropped, its ``Popen``
was collected while the process ran: "ResourceWarning: subprocess N is still running" in a later test."""

from __future__ import annotations

import gc
import os
import signal
import warnings

import psutil
import pytest
from fixture_types import WaitUntil

from trt_widget import _pool
from trt_widget._backend import likely_backend

pytestmark = pytest.mark.slow


def test_a_worker_still_running_at_shutdown_is_kept_until_reaped(wait_until: WaitUntil) -> None:
    pool = _pool.WorkerPool()
    worker = _pool._spawn(likely_backend())
    pid = worker.pid
    pool.release(worker, used=False)  # idle, as a prewarmed worker
    os.kill(pid, signal.SIGSTOP)  # a real worker that does not read its pipe's EOF within shutdown's second
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            pool.shutdown()
            del worker
            gc.collect()
        assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]
        assert [w.pid for w in pool._ending] == [pid]
    finally:
        os.kill(pid, signal.SIGCONT)
    # it exits on its pipe's EOF; the next shutdown reaps it: no zombie, nothing listed
    wait_until(lambda: psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, timeout=120, what="the worker to exit")
    pool.shutdown()
    assert pool._ending == [] and not psutil.pid_exists(pid)
