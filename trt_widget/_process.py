"""Process isolation, parent side: run one build in a spawned child so a crash in TensorRT spares the kernel.

``execute_in_process(build)`` starts :func:`trt_widget._child.main` with the ``spawn`` start method, replays
the child's phase and log events into ``build.model`` / ``build.logger`` (so every front end looks the same
as with a thread), and returns the engine bytes (None when cancelled) or raises :class:`BuildError`.

Stopping has two stages: ``build.stop()`` asks the child to cancel at its next step boundary; a second
``stop()`` (``build._force``) or ``force_after`` seconds later terminates the child (SIGTERM, then SIGKILL).
A child that dies on its own makes the build fail with the exit code or signal and the last running phase.
Every run joins the child and closes both pipes and the private work directory, whatever happens.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import threading
import time
from multiprocessing.connection import wait
from typing import Any, Callable, Iterator

from . import _child
from ._errors import BuildError

POLL_S = 0.05  # how often the parent looks at stop requests while the child is quiet
TERM_GRACE_S = 0.3  # SIGTERM, then SIGKILL after this long
EXIT_WAIT_S = 10.0  # after its final message the child should exit by itself within this long

_HINT = ("With isolation='process' the network definition function must be importable by the build "
         "process: define it at module level in a .py module, or pass an ONNX model (path, bytes or "
         "ModelProto), or use isolation='thread'.")


def check_transferable(source: Any) -> None:
    """Raise TypeError unless ``source`` (a ModelSource) can be sent to a spawned build process."""
    if source.kind != "callable":
        return
    function = source.value
    main = sys.modules.get("__main__")
    if getattr(function, "__module__", None) == "__main__" and not getattr(main, "__file__", None):
        raise TypeError(f"the network definition function {source.label} is defined in an interactive "
                        f"session (notebook or REPL), which a separate process cannot import. {_HINT}")
    try:
        pickle.dumps(function)
    except Exception as exc:
        raise TypeError(f"the network definition function {source.label} cannot be sent to the build "
                        f"process ({exc}). Lambdas and functions defined inside other functions cannot be "
                        f"sent. {_HINT}") from None


def execute_in_process(build: Any) -> bytes | None:
    """Build ``build.source`` with ``build.options`` in a child process; None when cancelled."""
    try:
        check_transferable(build.source)
    except TypeError as exc:
        raise BuildError(str(exc)) from None
    with _work_dirs() as workdirs:
        return _ChildBuild(build, workdirs).run()


@contextlib.contextmanager
def _work_dirs() -> Iterator[list[str]]:
    """Private temporary directories for the model and engine files, RAM-backed /dev/shm first if present."""
    with contextlib.ExitStack() as stack:
        dirs: list[str] = []
        if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
            try:
                dirs.append(stack.enter_context(tempfile.TemporaryDirectory(prefix="trt_widget-", dir="/dev/shm")))
            except OSError:
                pass
        dirs.append(stack.enter_context(tempfile.TemporaryDirectory(prefix="trt_widget-")))
        yield dirs


class _ReplayClock:
    """The build's clock, except that the replaying thread reads the time the child stamped on an event.

    Only installed when the build uses ``time.perf_counter``, a system-wide monotonic clock that parent
    and child share, so replayed phase times are as exact as in a thread build.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.at: float | None = None
        self._owner = threading.get_ident()

    def __call__(self) -> float:
        now = self.clock()
        at = self.at
        if at is not None and threading.get_ident() == self._owner:
            return min(at, now)
        return now


class _ChildBuild:
    """One child process: start it, relay its events and stop requests, collect its result, reap it."""

    def __init__(self, build: Any, workdirs: list[str]) -> None:
        self.build = build
        self.workdirs = workdirs
        self.process: Any = None
        self.events: Any = None  # parent end of the child -> parent pipe
        self.control: Any = None  # parent end of the parent -> child pipe
        self.replay_clock: _ReplayClock | None = None
        self.hello = False  # the child got as far as its entry point
        self.answered = False  # the child sent its final message (it exits by itself next)

    # -- life cycle ----------------------------------------------------------------------------------
    def run(self) -> bytes | None:
        ctx = multiprocessing.get_context("spawn")
        job = self._job()
        self.events, child_events = ctx.Pipe(duplex=False)
        child_control, self.control = ctx.Pipe(duplex=False)
        try:
            self.process = ctx.Process(target=_child.main, args=(job, child_events, child_control),
                                       name="trt_widget-build", daemon=True)
            self.process.start()
            self.build.child_pid = self.process.pid
        except BaseException:
            self.events.close()
            self.control.close()
            raise
        finally:
            child_events.close()
            child_control.close()
        self._install_clock()
        try:
            return self._supervise()
        finally:
            self._restore_clock()
            self._reap()
            self.events.close()
            self.control.close()

    def _job(self) -> dict[str, Any]:
        from ._backend import select_backend

        source = self.build.source
        job: dict[str, Any] = {"kind": source.kind, "label": source.label, "path": None, "callable": None,
                               "options": self.build.options, "backend": select_backend()[0],
                               "workdirs": self.workdirs}
        if source.kind == "path":
            job["path"] = source.value
        elif source.kind == "bytes":
            try:
                job["path"] = _child.write_first(self.workdirs, "model.onnx", source.value)
            except OSError as exc:
                raise BuildError(f"could not hand the ONNX bytes to the build process: {exc}") from exc
        else:
            job["callable"] = pickle.dumps(source.value)
        return job

    def _reap(self) -> None:
        """Join the child; one that has not answered (the parent failed or gave up) is terminated now."""
        process = self.process
        if process.is_alive() and self.answered:
            process.join(EXIT_WAIT_S)
        if process.is_alive():
            self._terminate()
        process.join()
        process.close()

    def _terminate(self) -> str:
        """SIGTERM, then SIGKILL after a short grace; returns the signal that ended the child."""
        process = self.process
        process.terminate()
        process.join(TERM_GRACE_S)
        if process.exitcode is None:
            process.kill()
            process.join()
            return "SIGKILL"
        return "SIGTERM"

    # -- the relay loop -------------------------------------------------------------------------------
    def _supervise(self) -> bytes | None:
        build, options = self.build, self.build.options
        stop_sent = False
        force_at: float | None = None
        while True:
            if build._cancel.is_set() and not stop_sent:
                stop_sent = True
                self._send_stop()
                if options.force_after is not None:
                    force_at = time.monotonic() + options.force_after
            if build._force.is_set() or (force_at is not None and time.monotonic() >= force_at):
                return self._force_stop(automatic=not build._force.is_set())
            ready = wait([self.events, self.process.sentinel], timeout=POLL_S)
            if self.events in ready:
                try:
                    message = self.events.recv()
                except EOFError:  # the child closed its end: it exited (or is exiting) without a result
                    self.process.join(EXIT_WAIT_S)
                    self._died()
                if message[0] == "hello":
                    self.hello = True
                elif message[0] == "events":
                    self._replay(message[1])
                else:
                    return self._final(message)
            elif self.process.sentinel in ready:
                final = self._drain()
                if final is not None:
                    return self._final(final)
                self._died()

    def _send_stop(self) -> None:
        try:
            self.control.send(("stop",))
        except (OSError, ValueError):
            pass  # the child is gone; the sentinel tells the rest

    def _force_stop(self, automatic: bool) -> None:
        """Terminate the child now; the build ends cancelled with a detail that says so."""
        build = self.build
        pid = self.process.pid
        how = self._terminate() if self.process.exitcode is None else "it had already exited"
        what = f"force stopped: the build process (pid {pid}) was terminated ({how})"
        with build._lock:
            if automatic:
                build._force.set()
                what = what.replace("force stopped", f"force stopped {build.options.force_after:g} s later", 1)
                build.status_detail = f"{build.status_detail}; {what}"
            else:
                build.status_detail = what
        return None

    def _drain(self) -> tuple[Any, ...] | None:
        """The child exited: replay what it sent before exiting and return its final message, if any."""
        while True:
            try:
                if not self.events.poll():
                    return None
                message = self.events.recv()
            except (EOFError, OSError):
                return None
            if message[0] == "hello":
                self.hello = True
            elif message[0] == "events":
                self._replay(message[1])
            else:
                return message

    def _died(self) -> None:
        """Raise the BuildError for a child that ended without a result."""
        self.process.join(TERM_GRACE_S)
        code = self.process.exitcode
        if code is None:
            how = "closed its pipe without a result"
        elif code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            how = f"was killed by {name}"
            if name == "SIGKILL":
                how += " (without a kill by someone, that is the system's out-of-memory killer)"
        else:
            how = f"exited with code {code} without a result"
        phase = self.build.model.innermost_running()
        where = f" during phase {phase.name!r}" if phase else " before any build phase started"
        if not self.hello:
            raise BuildError(
                f"the build process (pid {self.process.pid}) {how} while starting, before it could build; see "
                "its error output. A common cause: the spawn start method re-imports the main script, so a "
                "script that builds with isolation='process' must put its top-level code under "
                "`if __name__ == '__main__':`."
            )
        raise BuildError(f"the build process (pid {self.process.pid}) {how}{where}; no engine was built. "
                         "This Python process is unaffected and the next build can run.")

    # -- messages -------------------------------------------------------------------------------------
    def _replay(self, batch: list[tuple[Any, ...]]) -> None:
        model, logger, clock = self.build.model, self.build.logger, self.replay_clock
        try:
            for event in batch:
                if clock is not None:
                    clock.at = event[-1]
                kind = event[0]
                if kind == "step":
                    model.step_complete(event[1], event[2])
                elif kind == "start":
                    model.phase_start(event[1], event[2], event[3])
                elif kind == "finish":
                    model.phase_finish(event[1])
                elif kind == "log":
                    logger.log(event[1], event[2])
        finally:
            if clock is not None:
                clock.at = None

    def _final(self, message: tuple[Any, ...]) -> bytes | None:
        self.answered = True
        kind = message[0]
        if kind == "engine":
            return self._receive_engine(*message[1:])
        if kind == "cancelled":
            return None
        raise BuildError(message[1] if kind == "error" else f"unexpected message from the build process: "
                                                             f"{message!r}")

    def _receive_engine(self, path: str, size: int, digest: str) -> bytes:
        if os.path.dirname(os.path.realpath(path)) not in [os.path.realpath(d) for d in self.workdirs]:
            raise BuildError(f"the build process announced an engine outside its work directory: {path}")
        with open(path, "rb") as handle:
            data = handle.read()
        os.unlink(path)
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            raise BuildError(f"the engine from the build process is damaged: expected {size:,} B with sha256 "
                             f"{digest[:16]}…, got {len(data):,} B with sha256 "
                             f"{hashlib.sha256(data).hexdigest()[:16]}…")
        return data

    # -- time axis ------------------------------------------------------------------------------------
    def _install_clock(self) -> None:
        build = self.build
        if build._clock is time.perf_counter:
            self.replay_clock = _ReplayClock(build._clock)
            build.model._clock = self.replay_clock
            build.logger._clock = self.replay_clock

    def _restore_clock(self) -> None:
        if self.replay_clock is not None:
            self.build.model._clock = self.build._clock
            self.build.logger._clock = self.build._clock

