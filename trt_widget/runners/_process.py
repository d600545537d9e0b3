"""The default runner: the builder lives in a warm worker process, so Stop always ends a build (by default within
a quarter second: docs/stop.md).

``ProcessRunner.run(ctx)`` takes an idle worker from the pool (or starts one), sends it the job, replays the
worker's phase and log events into ``ctx.model`` / ``ctx.logger`` and returns the engine (its bytes, copied out of
the worker; with ``output=`` an :class:`EngineFile` the worker wrote beside it; None when cancelled) or raises
:class:`BuildError`. Stop is graceful first (the worker's next ``step_complete`` returns
False); when the builder has not reached a step boundary ``ctx.graceful_s`` later (or on ``ctx.force``) the
worker is terminated (SIGTERM, then SIGKILL), which ends even a long TensorRT step, a hung network function or
a SIGSTOPped builder. A worker that finished its job goes back to the pool and exits after
``TRT_WIDGET_WORKER_IDLE_S`` seconds (default 300) without work, or when this process exits; workers never
outlive this process. One that ran a ``configure=`` hook, loaded ``plugins=``, or holds a CUDA context, exits after
its build.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from multiprocessing.connection import wait
from typing import TYPE_CHECKING

from .._backend import capabilities
from .._errors import BuildError
from .._files import part_path
from .._format import escape_controls
from .._gpu import oom_kill_count
from .._leftovers import private_dir, remove_private_dir
from .._pool import Worker, pool
from .._python import parent_path
from . import _memory
from ._base import EngineFile, RunContext
from ._messages import (
    Built,
    Cancelled,
    Cold,
    Engine,
    EngineAt,
    EngineTaken,
    Event,
    Events,
    Failed,
    Hello,
    Job,
    Log,
    ModelAt,
    ModelReady,
    PhaseFinish,
    PhaseStart,
    ReadFiles,
    Step,
    Stop,
)

if TYPE_CHECKING:
    from .._engine import ModelSource
    from .._options import ConfigureHook
    from ._messages import WorkerJob

POLL_S = 0.02  # how often the relay looks at stop requests while the worker is quiet


def check_transferable(source: ModelSource, configure: ConfigureHook | None = None) -> None:
    """Raise TypeError unless ``source`` (a ModelSource) and the ``configure=`` function can be sent to a builder
    process, naming what cannot."""
    if configure is not None:
        import cloudpickle

        try:
            cloudpickle.dumps(configure)
        except Exception as exc:
            raise TypeError(
                f"configure= {getattr(configure, '__qualname__', configure)!r} cannot be sent to the builder process: "
                f"{exc}. Everything it refers to must be picklable; or pass isolation='thread'"
            ) from None
    if source.kind != "callable":
        return
    import cloudpickle

    try:
        cloudpickle.dumps(source.value)
    except Exception as exc:
        raise TypeError(
            f"the network definition function {source.shown} cannot be sent to the builder process: {exc}. "
            "Everything it refers to must be picklable (no open files, locks, sockets or TensorRT objects "
            "created outside it); or pass isolation='thread' to build in this process."
        ) from None


START_PHASE = "Starting the builder process"  # a cold worker's start-up, before it can build
_job_ids = itertools.count(1)


WORK_PREFIX = "trt_widget-"  # a build's work directories: WORK_PREFIX<pid>-<random>, swept once their maker ended


@contextlib.contextmanager
def _work_dirs() -> Iterator[list[str]]:
    """Private temporary directories for the model and engine files, RAM-backed /dev/shm first if present; this
    process holds their locks while the build runs, so that what a SIGKILLed one left (a model copy in RAM) is
    removed by the next one, and a live build's are not (whatever PID namespace sweeps)."""
    dirs: list[str] = []
    try:
        if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
            with contextlib.suppress(OSError):
                dirs.append(private_dir(WORK_PREFIX, "/dev/shm"))
        dirs.append(private_dir(WORK_PREFIX))
        yield dirs
    finally:
        for directory in dirs:
            remove_private_dir(directory)


# the backends whose builder creates a CUDA context that stays until the process exits (TensorRT for RTX builds
# on the CPU here; on an RTX GPU it defers GPU work to the engine's load)
HOLDS_CUDA_CONTEXT = frozenset({"tensorrt"})


class ProcessRunner:
    """Runs the builder in a pooled worker process (the default ``isolation="process"``)."""

    name = "process"
    framed = True
    local = True

    def run(self, ctx: RunContext) -> bytes | EngineFile | None:
        try:
            check_transferable(ctx.source)
        except TypeError as exc:
            raise BuildError(str(exc)) from None
        with _work_dirs() as workdirs:
            return _Relay(ctx, workdirs).run()


class _Relay:
    """One job on one worker: send it, relay events and stop requests, collect the result."""

    def __init__(self, ctx: RunContext, workdirs: list[str]) -> None:
        self.ctx = ctx
        self.workdirs = workdirs
        self.job_id = next(_job_ids)
        self.worker: Worker | None = None
        self.answered = False  # the worker sent its final message for this job
        self.built = False  # TensorRT returned the engine: a stop now must not throw it away
        self.starting = False  # the START_PHASE of a cold worker is open
        self.oom_kills_before: int | None = None  # the kernel's OOM-kill count when the job was sent
        self.model_bytes: bytes | None = None  # a bytes model, copied into the worker when it asks (ModelAt)
        self.engine_bytes: bytes | None = None  # the engine, once copied out of the worker (EngineAt)
        self.engine_part: str | None = None  # where the worker writes the engine beside output=, if it can
        self.handed_over = False  # ... and the build took that file

    def run(self) -> bytes | EngineFile | None:
        try:
            return self._run()
        finally:
            if self.engine_part is not None and not self.handed_over:
                with contextlib.suppress(OSError):
                    os.unlink(self.engine_part)

    def _run(self) -> bytes | EngineFile | None:
        job = self._job()
        if self.ctx.cancel.is_set():
            return None  # stopped before a worker was even asked
        from .._backend import select_backend

        worker = self.worker = pool.acquire(select_backend()[0])
        self.ctx.on_pid(worker.pid)
        self.starting = not worker.hello  # a cold worker: its start-up is a phase of this build, until its hello
        if self.starting:
            self.ctx.model.phase_start(START_PHASE, None, 0)
        self.oom_kills_before = oom_kill_count()
        try:
            with contextlib.suppress(OSError, ValueError):  # the worker died just now: the relay loop reports how
                worker.control.send(Job(self.job_id, job))
            return self._supervise(worker)
        finally:
            retire = self._retire(worker)
            if self.answered and worker.alive() and not retire:  # it sent its final message: ready for the next job
                pool.release(worker)
            elif retire and self.answered and worker.alive():
                pool.retire(worker)  # a fresh worker starts for the next build (none for a command line's one)
            else:
                if worker.alive():
                    worker.terminate()
                else:
                    worker.close()
                if self.ctx.cancel.is_set():  # a forced stop: the next build's worker starts in the background
                    pool.prewarm()

    def _retire(self, worker: Worker) -> str:
        """Why this worker must not serve another build ("" when it may): a ``configure=`` hook ran in it (it may
        have changed its environment, working directory or TensorRT's classes), it loaded ``plugins=`` libraries,
        or it built on a GPU with NVIDIA
        TensorRT and holds a CUDA context (hundreds of MiB of GPU memory the notebook's PyTorch may need) that only
        its exit gives back. Its successor has imported TensorRT and has no CUDA context yet."""
        if self.ctx.options.configure is not None:
            return "configure"
        if self.ctx.options.plugins:  # its code ran here and its creators stay registered for the process's life
            return "plugins"
        if worker.backend in HOLDS_CUDA_CONTEXT:
            return "cuda context"
        return ""

    def _job(self) -> WorkerJob:
        from ._worker import write_first

        source = self.ctx.source
        job: WorkerJob = {
            "kind": source.kind,
            "label": source.label,
            "path": None,
            "callable": None,
            "options": self.ctx.options,
            "configure": None,
            "workdirs": self.workdirs,
            "sys_path": parent_path(),  # appended there: the user's modules, never shadowing the standard library
            "directory": source.directory if source.kind == "path" else None,  # where external data may lie
            "hint": source.hint,
            "engine_part": None,
            "engine_by_copy": _memory.available(),
        }
        if self.ctx.options.output:  # the engine goes straight beside its file, renamed into place by the build
            with contextlib.suppress(OSError, ValueError):
                self.engine_part = job["engine_part"] = str(part_path(self.ctx.options.output))
        if self.ctx.options.configure is not None:  # a function, often a lambda: cloudpickle sends it
            import dataclasses

            import cloudpickle

            job["options"] = dataclasses.replace(self.ctx.options, configure=None)
            job["configure"] = cloudpickle.dumps(self.ctx.options.configure)
        if source.kind == "path":
            job["path"] = os.path.abspath(source.value)
        elif source.kind == "bytes":
            if not source.value:
                raise BuildError("the ONNX bytes are empty")
            # copied into the worker when it asks (else written to a file then); not where the parser reads
            # bytes without the GIL (NVIDIA 10.0-10.12): there it must parse a file anyway
            if _memory.available() and not capabilities()["gil_unsafe_parse"]:
                self.model_bytes = source.value
                job["model_size"] = len(source.value)
                return job
            try:
                job["path"] = write_first(self.workdirs, "model.onnx", source.value)
            except OSError as exc:
                raise BuildError(f"could not hand the ONNX bytes to the builder process: {exc}") from exc
        else:
            import cloudpickle

            job["callable"] = cloudpickle.dumps(source.value)
        return job

    def _supervise(self, worker: Worker) -> bytes | EngineFile | None:
        ctx = self.ctx
        force_at: float | None = None
        while True:
            if ctx.cancel.is_set() and force_at is None:
                force_at = time.monotonic() + ctx.graceful_s
                with contextlib.suppress(OSError, ValueError):
                    worker.control.send(Stop(self.job_id))
            due = force_at is not None and time.monotonic() >= force_at and not self._serializing()
            if not self.built and (ctx.force.is_set() or due):
                self._force_stop(worker, automatic=not ctx.force.is_set())
                return None
            left = POLL_S if force_at is None else force_at - time.monotonic()
            timeout = min(POLL_S, left) if left > 0 else POLL_S  # past the deadline only while serializing
            if not wait([worker.events], timeout=timeout):
                continue
            try:
                message = worker.events.recv()
            except (EOFError, OSError):
                self._died(worker)
            if isinstance(message, Hello):
                worker.hello = True
                if self.starting:
                    self.starting = False
                    ctx.model.phase_finish(START_PHASE)
            elif isinstance(message, Cold):  # its memory is fresh: this build pays one-time costs (it knows)
                ctx.on_cold_builder()
            elif isinstance(message, Events):
                self._replay(message.batch)
            elif isinstance(message, ModelAt):
                self._send_model(worker, message.address)
            elif isinstance(message, EngineAt):
                self._take_engine(worker, message)
            elif isinstance(message, ReadFiles):
                ctx.on_read_files(message.keys)
            else:
                return self._final(message)

    def _send_model(self, worker: Worker, address: int) -> None:
        """Copy the model bytes to where the worker set memory aside for them, or else write them to a file."""
        from ._worker import write_first

        data = self.model_bytes
        if data is None:
            raise BuildError("the builder process asked for model bytes this build does not have")
        path = ""
        if not _memory.write_to(worker.pid, address, data):
            try:
                path = write_first(self.workdirs, "model.onnx", data)
            except OSError as exc:
                raise BuildError(f"could not hand the ONNX bytes to the builder process: {exc}") from exc
        with contextlib.suppress(OSError, ValueError):  # the worker died just now: the relay loop reports how
            worker.control.send(ModelReady(self.job_id, path))

    def _take_engine(self, worker: Worker, offer: EngineAt) -> None:
        """Copy the engine out of the worker's memory; where that fails, the worker writes it to a file."""
        self.engine_bytes = _memory.read_from(worker.pid, offer.address, offer.size)
        with contextlib.suppress(OSError, ValueError):
            worker.control.send(EngineTaken(self.job_id, self.engine_bytes is not None))

    def _serializing(self) -> bool:
        """Every phase TensorRT started has ended: it is serializing the engine, which no cancel can interrupt
        and which ends on its own; the grace period does not end it (a second Stop still does)."""
        model = self.ctx.model
        running = model.innermost_running()
        # trt_widget's own "after" row opens when TensorRT's last phase ends: it runs while TensorRT serializes
        after = model.framing.after if model.framing is not None else None
        return model.structure_version > 0 and (running is None or running.name == after)

    def _force_stop(self, worker: Worker, automatic: bool) -> None:
        """Terminate the worker now; the build ends cancelled with a detail that says so."""
        how = worker.terminate() if worker.alive() else "it had already exited"
        if automatic:
            self.ctx.note(
                f"the builder did not reach a step boundary within {self.ctx.graceful_s:g} s, so its "
                f"process (pid {worker.pid}) was terminated ({how})"
            )
        else:
            self.ctx.note(f"force stopped: the builder process (pid {worker.pid}) was terminated ({how})")
        return None

    def _died(self, worker: Worker) -> None:
        """Raise the BuildError for a worker that ended without a result."""
        try:
            code = worker.process.wait(1.0)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            how = "closed its pipe without a result"
        elif code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            how = f"was killed by {name}"
            if name == "SIGBUS":
                how += " (the model file shrank while it was read: was it being rewritten? Build it again once saved)"
            if name == "SIGKILL":
                now, before = oom_kill_count(), self.oom_kills_before
                if now is not None and before is not None and now > before:
                    how = (
                        "was killed by the kernel's out-of-memory killer (SIGKILL; its OOM-kill count rose during "
                        "the build): the host ran out of memory. Build fewer engines at once, or give the machine "
                        "more memory"
                    )
                else:
                    how += " (when nobody killed it on purpose, that is the system's out-of-memory killer)"
        else:
            how = f"exited with code {code} without a result"
        if not worker.hello:
            raise BuildError(
                f"the builder process (pid {worker.pid}) {how} while starting, before it could "
                "build; its error output (stderr) says why"
            )
        phase = self.ctx.model.innermost_running()
        where = f" during phase {phase.name!r}" if phase else " before any build phase started"
        raise BuildError(
            f"the builder process (pid {worker.pid}) {how}{where}; no engine was built. "
            "This Python process is unaffected and the next build can run."
        )

    def _replay(self, batch: list[Event]) -> None:
        model, logger = self.ctx.model, self.ctx.logger
        shared = self.ctx.shared_clock
        for event in batch:
            at = event.at if shared else None
            if isinstance(event, Step):
                model.step_complete(event.name, event.step, thread=event.thread)
            elif isinstance(event, PhaseStart):
                model.phase_start(event.name, event.parent, event.num_steps, at=at, thread=event.thread)
            elif isinstance(event, PhaseFinish):
                model.phase_finish(event.name, at=at, thread=event.thread)
            elif isinstance(event, Log):
                logger.log(event.level, event.message, at=at)
            elif isinstance(event, Built):
                self.built = True

    def _final(self, message: object) -> bytes | EngineFile | None:
        self.answered = True
        if isinstance(message, Engine):
            return self._receive_engine(message.path, message.size)
        if isinstance(message, Cancelled):
            if message.detail:
                self.ctx.note(message.detail)
            return None
        if isinstance(message, Failed):
            raise BuildError(message.message)
        raise BuildError(f"unexpected message from the builder: {message!r}")

    def _receive_engine(self, path: str, size: int) -> bytes | EngineFile:
        if not path:  # copied out of the worker's memory already (EngineAt)
            if self.engine_bytes is None or len(self.engine_bytes) != size:
                raise BuildError("the builder process said the engine was handed over, but it was not")
            return self.engine_bytes
        if self.engine_part is not None and path == self.engine_part:
            written = os.lstat(path)
            if not stat.S_ISREG(written.st_mode) or written.st_size != size:
                raise BuildError(
                    f"the engine from the builder process is damaged: expected {size:,} B, got {written.st_size:,} B"
                )
            self.handed_over = True
            return EngineFile(path, size)
        if os.path.dirname(os.path.realpath(path)) not in [os.path.realpath(d) for d in self.workdirs]:
            raise BuildError(
                f"the builder process announced an engine outside its work directory: {escape_controls(path)}"
            )
        with open(path, "rb") as handle:
            data = handle.read()
        os.unlink(path)
        if len(data) != size:
            raise BuildError(
                f"the engine from the builder process is damaged: expected {size:,} B, got {len(data):,} B"
            )
        return data
