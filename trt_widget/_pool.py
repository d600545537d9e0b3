"""The warm builder processes: started ahead of need (on their own thread), kept idle for the next build.

Here, not in ``runners/``, so that ``trt-widget build`` can start one before it imports anything heavy (TensorRT,
the build options): the builder process's own start then overlaps this one's. Nothing here imports TensorRT.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path

from ._python import hold_standard_fds, module_command, python_path

TERM_GRACE_S = 0.2  # SIGTERM, then SIGKILL after this long
DEFAULT_IDLE_S = 300.0
MAX_IDLE_WORKERS = 2


MAX_IDLE_S = 30 * 24 * 3600.0  # a timer's wait must stay finite (inf or 1e300 overflowed in every idle timer)
_warned: set[str] = set()


def idle_timeout_s() -> float:
    """Seconds an idle worker waits for the next build before it exits (``TRT_WIDGET_WORKER_IDLE_S``, 0 to
    ``MAX_IDLE_S``); anything else gets one warning line and the default."""
    text = os.environ.get("TRT_WIDGET_WORKER_IDLE_S")
    if text is None or not text.strip():
        return DEFAULT_IDLE_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if 0 <= value <= MAX_IDLE_S:
        return value
    if text not in _warned:
        _warned.add(text)
        with contextlib.suppress(Exception):
            sys.stderr.write(
                f"trt_widget: TRT_WIDGET_WORKER_IDLE_S={text[:40]!r} is not a number of seconds from 0 to "
                f"{MAX_IDLE_S:.0f}; idle builder processes exit after the default {DEFAULT_IDLE_S:g} s\n"
            )
    return DEFAULT_IDLE_S


class Worker:
    """One builder process and the two pipes to it."""

    def __init__(self, process: subprocess.Popen[bytes], control: Connection, events: Connection, backend: str) -> None:
        self.process = process
        self.backend = backend  # the TensorRT module it imports ("tensorrt" or "rtx")
        self.control = control
        self.events = events
        self.pid = process.pid
        self.hello = False  # the worker got as far as its entry point
        self.idle_timer: threading.Timer | None = None

    def alive(self) -> bool:
        return self.process.poll() is None

    def terminate(self) -> str:
        """SIGTERM, then SIGKILL after a short grace (a stopped process ignores SIGTERM); returns the signal."""
        how = "SIGTERM"
        with contextlib.suppress(ProcessLookupError):
            self.process.terminate()
        try:
            self.process.wait(TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            how = "SIGKILL"
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait()
        self.close()
        return how

    def close(self, wait: bool = True) -> None:
        """Close the pipes (a live worker exits on the control pipe's EOF) and reap the process when it ended
        (``wait``: give it up to a second to end now)."""
        if self.idle_timer is not None:
            self.idle_timer.cancel()
        for conn in (self.control, self.events):
            with contextlib.suppress(OSError):
                conn.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(1.0 if wait else 0.0)


class WorkerPool:
    """Idle workers kept warm for the next build; every spawn happens on one long-lived thread.

    Linux ties a worker's death signal to the thread that started it, so that thread must live as long as
    this process: a single-thread executor's thread does.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[Worker] = []
        self._ending: list[Worker] = []  # told to end, not yet reaped
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="trt_widget-spawn")
        self.one_build = False  # a command line's single build: its worker ends as soon as it is released

    def acquire(self, backend: str) -> Worker:
        """An idle live worker of ``backend``, or a new one (after any prewarm in flight, so it is not started
        twice)."""
        return self._spawner.submit(self._take_or_spawn, backend).result()

    def prewarm(self, backend: str | None = None) -> None:
        """Start a worker in the background when none is idle, so the next build need not wait for one;
        ``backend``: the TensorRT module it imports (default: the one this process uses or will likely use)."""
        from ._backend import likely_backend

        self._spawner.submit(self._warm, backend or likely_backend())

    def start_here(self) -> None:
        """Start a worker now, on the calling thread, and keep it idle: for a command line's main thread, which
        lives as long as the process (a background start would wait for the GIL while this thread imports)."""
        from ._backend import likely_backend

        with contextlib.suppress(Exception):  # the build that needs a worker reports it
            self.release(_spawn(likely_backend()), used=False)

    def release(self, worker: Worker, used: bool = True) -> None:
        """Keep a worker that finished its job cleanly (``used``) or has just started for the next build (until
        the idle timeout)."""
        timeout = 0.0 if self.one_build and used else idle_timeout_s()
        with self._lock:
            if worker.alive() and timeout > 0 and len(self._idle) < MAX_IDLE_WORKERS:
                worker.idle_timer = threading.Timer(timeout, self._expire, (worker,))
                worker.idle_timer.daemon = True
                worker.idle_timer.start()
                self._idle.append(worker)
                return
        self._end(worker, wait=False)  # it ends while this process goes on

    def retire(self, worker: Worker) -> None:
        """End a worker that must not serve another build (it exits on its control pipe's EOF), and start its
        successor in the background, unless this process is a command line's single build."""
        self._end(worker, wait=False)
        if not self.one_build:
            self.prewarm(worker.backend)

    def _take_or_spawn(self, backend: str) -> Worker:
        with self._lock:  # a build's backend is this process's choice: workers started for another go
            strangers = [worker for worker in self._idle if worker.backend != backend]
            self._idle = [worker for worker in self._idle if worker.backend == backend]
        for worker in strangers:
            self._end(worker)
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.idle_timer is not None:
                    worker.idle_timer.cancel()
                if worker.alive():
                    return worker
                worker.close()
        return _spawn(backend)

    def _warm(self, backend: str) -> None:
        with self._lock:
            if any(worker.backend == backend for worker in self._idle):
                return
        try:
            worker = _spawn(backend)
        except Exception:
            return  # the build that needs a worker reports it
        self.release(worker, used=False)

    def _expire(self, worker: Worker) -> None:
        with self._lock:
            if worker not in self._idle:
                return
            self._idle.remove(worker)
        self._end(worker)

    def shutdown(self) -> None:
        """End every idle worker now (running builds keep theirs); one still running a second later (a builder
        still warming up reads its pipe's EOF only then) stays listed until reaped."""
        with self._lock:
            idle, self._idle = self._idle, []
            ending, self._ending = self._ending, []
        for worker in idle + ending:
            self._end(worker)

    def _end(self, worker: Worker, wait: bool = True) -> None:
        """Close a worker's pipes (it exits on their EOF) and keep it in ``_ending`` until it is reaped: a Popen
        dropped while its process runs is a ResourceWarning (and the process a zombie once it ends)."""
        worker.close(wait)
        with self._lock:
            self._ending = [w for w in self._ending if w.alive()]  # reaps those that ended
            if worker.alive():
                self._ending.append(worker)

    def idle_pids(self) -> list[int]:
        with self._lock:
            return [w.pid for w in self._idle]

    def after_fork(self) -> None:
        """In a forked child (a ``multiprocessing`` worker): the spawner thread is not there (its executor, which
        counts it idle, would never start one: every build waited forever), and the workers are the parent's
        (this copy of their pipes is closed; they go on serving the parent)."""
        self._lock = threading.Lock()
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="trt_widget-spawn")
        workers, self._idle, self._ending = self._idle + self._ending, [], []
        for worker in workers:
            for conn in (worker.control, worker.events):
                with contextlib.suppress(OSError):
                    conn.close()


# glibc's malloc serves large blocks with fresh mmap()s and gives the heap's free top back at once: TensorRT's many
# large, short-lived buffers (and the next job's model and engine) then cost a page fault per page on every build.
# Served from a heap that is kept (re-used; the idle worker gives it back after TRIM_IDLE_S), a resnet50
# build with TensorRT for RTX takes ~0.2 s less of its ~0.7 s here, at the same peak memory. Only the builder
# process is tuned, never the user's.
WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
# an idle worker gives its freed heap back after this long without a job (its next build is then cold: it says so)
TRIM_IDLE_S = 5.0


def _spawn(backend: str) -> Worker:
    """Start ``trt_widget.runners._worker`` with its two pipes (never re-imports the caller's main script, never imports
    from the working directory: ``_python.py``)."""
    hold_standard_fds()
    control_r, control_w = os.pipe()
    events_r, events_w = os.pipe()
    package_root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, TRT_WIDGET_BACKEND=backend)
    for name, value in WORKER_MALLOC.items():  # what the user set for the builder's malloc wins
        env.setdefault(name, value)
    env["PYTHONPATH"] = python_path(env, package_root)
    try:
        process = subprocess.Popen(
            module_command(
                "trt_widget.runners._worker", str(control_r), str(events_w), str(os.getpid()), repr(TRIM_IDLE_S)
            ),
            pass_fds=(control_r, events_w),
            stdin=subprocess.DEVNULL,
            env=env,
            close_fds=True,
            # its own process group: a terminal's Ctrl-C reaches the parent only (which makes it a Stop), and
            # ipykernel's shutdown, which signals its group's children until they are reaped, skips it
            start_new_session=True,
        )
    except BaseException:
        for fd in (control_r, control_w, events_r, events_w):
            os.close(fd)
        raise
    os.close(control_r)
    os.close(events_w)
    os.set_inheritable(control_w, False)
    os.set_inheritable(events_r, False)
    return Worker(process, Connection(control_w, readable=False), Connection(events_r, writable=False), backend)


pool = WorkerPool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=pool.after_fork)


def shutdown_workers() -> None:
    """End the idle builder processes now (they also end by themselves after the idle timeout, and at this
    process's exit, where each gets its pipe closed and a moment to exit on its own before the kernel kills it)."""
    pool.shutdown()


# Before the interpreter joins threads (the spawn thread's end SIGKILLs the workers): idle ones exit on their own,
# so a coverage run keeps their data. Registered after concurrent.futures' own joins, so it runs before them.
getattr(threading, "_register_atexit", lambda fn: None)(shutdown_workers)
