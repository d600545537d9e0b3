"""The builder process: a warm worker that builds engines one job at a time and streams progress to its parent.

Started by ``_pool.py`` as ``main([CONTROL_FD, EVENTS_FD, PARENT_PID])`` of this module, never importing from
the working directory (``_python.py``); no ``multiprocessing``: the parent's main script is never re-imported, so
scripts need no main guard and ``python -c`` / ``python -`` work. It imports TensorRT, then says ``Hello``: a cold
worker's import is part of the build's "Starting the builder process" phase.

The worker dies with its parent: the control pipe reaching EOF ends it at once, and on Linux the kernel also
sends it SIGKILL when the parent exits (``PR_SET_PDEATHSIG``), even while it is stopped or inside a long TensorRT
call. The messages are in ``_messages.py``. The engine file is the temporary file the job names beside its
output file, or lies in one of the job's work directories (RAM-backed ``/dev/shm`` when it has room, else the
temp directory); none: the parent copied the engine out of this process's memory (``EngineAt``)."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING

from .._errors import BuildError
from ._memory import new_bytes, pinned
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
    Final,
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
    from multiprocessing.connection import Connection

    from .._engine import ModelSource
    from .._monitor import BuildMonitor
    from .._options import BuildOptions
    from .._tensorrt_log import LogRecord
    from ._messages import WorkerJob

SEND_INTERVAL_S = 0.02


class Outbox:
    """Events from the builder thread, shipped by a sender thread; ``put*`` never blocks on the pipe."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()  # one writer on the connection at a time
        self._events: list[Event] = []
        self._step_index: dict[tuple[str, int | None], int] = {}  # (phase, thread) -> its pending step event
        self._wake = threading.Event()
        self._closed = False
        self.broken = False  # the parent stopped reading (gone)
        self._thread = threading.Thread(target=self._run, name="trt_widget-child-sender", daemon=True)
        self._thread.start()

    def step(self, name: str, step: int, thread: int | None = None) -> None:
        event = Step(name, step, thread, time.perf_counter())
        key = (name, thread)
        with self._lock:
            index = self._step_index.get(key)
            if index is not None:
                self._events[index] = event
            else:
                self._step_index[key] = len(self._events)
                self._events.append(event)

    def structure(self, event: Event) -> None:
        """A phase start/finish: ordering matters from here on, and the parent wants it at once."""
        with self._lock:
            self._events.append(event)
            self._step_index.clear()
        self._wake.set()

    def log(self, event: Event) -> None:
        with self._lock:
            self._events.append(event)

    def send_now(self, message: ModelAt | EngineAt | ReadFiles | Final) -> None:
        """Send everything pending, then ``message``, from the calling thread; OSError when the parent is gone."""
        self.flush()
        with self._send_lock:
            self._conn.send(message)

    def flush(self) -> None:
        """Send everything pending now, from the calling thread."""
        with self._send_lock:  # held while taking the batch too, so batches leave in order
            with self._lock:
                batch, self._events = self._events, []
                self._step_index.clear()
            if batch and not self.broken:
                try:
                    self._conn.send(Events(batch))
                except (OSError, ValueError):
                    self.broken = True

    def close(self) -> None:
        """Stop the sender thread after it has sent everything pending."""
        self._closed = True
        self._wake.set()
        self._thread.join()
        self.flush()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(SEND_INTERVAL_S)
            self._wake.clear()
            self.flush()


class _Streamed:
    """TensorRT's callbacks as this process's events, replayed verbatim into the parent's phase model (the
    :class:`~trt_widget._monitor.Progress` the shared TensorRT adapter feeds here)."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox

    def phase_start(self, name: str, parent_name: str | None, num_steps: int, *, thread: int) -> None:
        self._outbox.structure(PhaseStart(name, parent_name, num_steps, thread, time.perf_counter()))

    def step_complete(self, name: str, step: int, *, thread: int) -> None:
        self._outbox.step(name, step, thread)

    def phase_finish(self, name: str, *, thread: int) -> None:
        self._outbox.structure(PhaseFinish(name, thread, time.perf_counter()))


def _make_monitor(outbox: Outbox, cancel: threading.Event) -> BuildMonitor:
    """The TensorRT adapter, streaming the callbacks to the parent."""
    from .._monitor import BuildMonitor

    return BuildMonitor(cancel_event=cancel, progress=_Streamed(outbox))


class _Jobs:
    """Jobs from the control pipe, each with its own cancel event; reads the pipe on its own thread."""

    def __init__(self, control: Connection) -> None:
        self._control = control
        self._queue: queue.Queue[tuple[int, WorkerJob, threading.Event]] = queue.Queue()
        self.replies: queue.Queue[ModelReady | EngineTaken] = queue.Queue()  # answers to ModelAt / EngineAt
        self._cancels: dict[int, threading.Event] = {}
        threading.Thread(target=self._listen, name="trt_widget-worker-control", daemon=True).start()

    def next(self, timeout: float | None = None) -> tuple[int, WorkerJob, threading.Event]:
        """The next job; queue.Empty when none came within ``timeout`` s."""
        return self._queue.get(timeout=timeout)

    def done(self, job_id: int) -> None:
        self._cancels.pop(job_id, None)

    def _listen(self) -> None:
        while True:
            try:
                message = self._control.recv()
            except (EOFError, OSError):
                os._exit(0)  # the parent closed the pipe or died: never outlive it, even mid-build
            if isinstance(message, Job):
                cancel = threading.Event()
                self._cancels[message.job_id] = cancel
                self._queue.put((message.job_id, message.job, cancel))
            elif isinstance(message, (ModelReady, EngineTaken)):
                self.replies.put(message)
            elif isinstance(message, Stop):
                event = self._cancels.get(message.job_id)
                if event is not None:
                    event.set()


def _load_source(job: WorkerJob, outbox: Outbox, replies: queue.Queue[ModelReady | EngineTaken]) -> ModelSource:
    from .._engine import ModelSource

    kind, label = job["kind"], job["label"]
    if kind == "bytes" and job.get("model_size"):  # the parent copies the bytes here, or writes them to a file
        data = new_bytes(job["model_size"])
        with pinned(data) as (address, _):
            outbox.send_now(ModelAt(address))
            ready = replies.get()
        if not isinstance(ready, ModelReady):
            raise BuildError(f"the parent answered {ready!r} to ModelAt")
        if not ready.path:
            return ModelSource("bytes", data, label, None, job.get("hint", ""))
        return ModelSource("path", ready.path, label, None, job.get("hint", ""))
    if kind in ("path", "bytes"):  # bytes: the parent wrote them to a private file, which the parser reads
        return ModelSource("path", job["path"], label, job.get("directory"), job.get("hint", ""))
    sys.path.extend(p for p in job.get("sys_path", []) if p and p not in sys.path)  # after ours: see _python.py
    try:
        import cloudpickle

        function = cloudpickle.loads(job["callable"])
    except Exception as exc:
        raise BuildError(
            f"the build process could not load the network definition function {label}: {exc!r}. It may use "
            "a module the build process cannot import; pass an ONNX model or use isolation='thread'"
        ) from exc
    return ModelSource("callable", function, label)


def _load_options(job: WorkerJob) -> BuildOptions:
    """The job's BuildOptions, with its configure= function (sent with cloudpickle) restored."""
    options = job["options"]
    if job.get("configure") is None:
        return options
    import dataclasses

    import cloudpickle

    try:
        configure = cloudpickle.loads(job["configure"])
    except Exception as exc:
        raise BuildError(
            f"the build process could not load the configure= function: {exc!r}. It may use a module the build "
            "process cannot import; use isolation='thread'"
        ) from exc
    return dataclasses.replace(options, configure=configure)


def write_first(dirs: list[str], name: str, data: bytes | memoryview) -> str:
    """Write ``data`` as ``name`` in the first directory with room (a RAM-backed one may be small)."""
    for index, directory in enumerate(dirs):
        path = os.path.join(directory, name)
        try:
            with open(path, "wb") as handle:
                handle.write(data)
            return path
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(path)
            if index == len(dirs) - 1:
                raise
    raise OSError("no directory to write to")


def _hand_over(
    engine: memoryview, job: WorkerJob, outbox: Outbox, replies: queue.Queue[ModelReady | EngineTaken]
) -> Engine:
    """Give the parent the engine straight from TensorRT's buffer: as a file beside the build's output when the
    parent named one there (it renames it into place), else copied by the parent out of this process's memory
    (``Engine`` with no path), else as a file in the parent's work directory."""
    if job.get("engine_part") or not job.get("engine_by_copy"):
        return Engine(*_write_engine(engine, job))
    with pinned(engine) as (address, size):
        outbox.send_now(EngineAt(address, size))
        reply = replies.get()
        if not isinstance(reply, EngineTaken):
            raise BuildError(f"the parent answered {reply!r} to EngineAt")
        taken = reply.taken
    return Engine("", size) if taken else Engine(*_write_engine(engine, job))


def _write_engine(engine: memoryview, job: WorkerJob) -> tuple[str, int]:
    """Write the engine straight from TensorRT's buffer: beside the build's output file when the parent named a
    temporary file there (the parent renames it into place), else into the parent's work directory."""
    part = job.get("engine_part")
    if part:
        from .._files import write_part

        try:
            write_part(part, engine)
            return part, engine.nbytes
        except OSError:
            pass  # not writable there now, or full: the work directory takes it, the write to the output says why
    return write_first(job["workdirs"], "engine.plan", engine), engine.nbytes


def run_job(
    job: WorkerJob, cancel: threading.Event, events: Connection, replies: queue.Queue[ModelReady | EngineTaken]
) -> None:
    """Build one job, streaming its events, and send its final message."""
    outbox = Outbox(events)
    final: Final
    try:
        from .._engine import BEFORE_PHASES, CaptureLogger, build_engine
        from .._external_data import recording_reads

        def on_record(record: LogRecord) -> None:
            level = ("INTERNAL_ERROR", "ERROR", "WARNING", "INFO", "VERBOSE").index(record["severity"])
            outbox.log(Log(level, record["message"], time.perf_counter()))

        every = job["options"].verbose or bool(job["options"].log_file)  # log_file=: the parent writes every line
        if every:  # each line whole: a kept record is cut at MAX_MESSAGE, and the layer record is one long line
            logger = CaptureLogger(every)
            logger.on_line = lambda level, message, _t: outbox.log(Log(level, message, time.perf_counter()))
        else:  # the warnings and errors; the autotuner's lines (and the layer record) still reach the parent
            logger = CaptureLogger(every, on_record=on_record)
            logger.on_tactic_line = lambda message: outbox.log(Log(4, message, time.perf_counter()))
        if job["options"].engine_report:
            from ..engine import EngineLog

            logger.engine_log = EngineLog()
        monitor = _make_monitor(outbox, cancel)
        # the model's bytes are copied in (or its function unpickled) inside the build's first row: the top-level
        # rows add up to the build's time (issue 39: a 100 MB ModelProto left ~0.05-0.3 s between two rows)
        monitor.phase_start(BEFORE_PHASES["callable" if job["kind"] == "callable" else "model"], None, 0)
        source = _load_source(job, outbox, replies)
        with recording_reads() as reads:
            engine = build_engine(source, _load_options(job), monitor, logger, opened=True)
        if engine is not None:
            outbox.structure(Built(time.perf_counter()))  # from now on a stop must not discard it
            outbox.send_now(ReadFiles(reads))
        final = Cancelled("") if engine is None else _hand_over(engine, job, outbox, replies)
    except BuildError as exc:
        final = Failed(str(exc))
    except KeyboardInterrupt:
        final = Cancelled("the network definition function raised KeyboardInterrupt")
    except BaseException as exc:  # even SystemExit from user code: report it, keep serving
        final = Failed(f"unexpected {type(exc).__name__} in the build process: {exc}\n{traceback.format_exc()}")
    outbox.close()
    try:
        events.send(final)
    except (OSError, ValueError):
        os._exit(0)  # the parent is gone


def _give_back_memory() -> None:
    """Return the heap the builds freed to the system (this worker's malloc keeps large blocks on the heap:
    WORKER_MALLOC in trt_widget/_pool.py). Once idle for TRIM_IDLE_S there: builds in quick succession keep a warm
    heap."""
    with contextlib.suppress(Exception):  # not glibc: nothing to do
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this process when its parent exits; exit now if the parent is already gone."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except Exception:
            pass  # the control pipe's EOF still ends this process
    if os.getppid() != parent_pid:
        os._exit(0)


def main(argv: list[str]) -> None:
    """Worker entry point: serve jobs until the parent closes the control pipe or dies. ``argv``: the control and
    events pipes' fds, the parent's pid, the seconds idle after which it gives its heap back."""
    from multiprocessing.connection import Connection

    control = Connection(int(argv[0]), writable=False)
    events = Connection(int(argv[1]), readable=False)
    _die_with_parent(int(argv[2]))
    # a SIGINT sent to this process (it has its own session) is not a Stop: only the parent decides that
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(Exception):  # TensorRT's import is part of starting (a failure: the job reports it)
        from .. import _engine, _external_data  # noqa: F401

        _external_data.MAP_FILES = True  # a model file that shrinks while mapped ends this process, reported
    try:
        events.send(Hello(os.getpid()))  # ready to build: a build's START_PHASE ends here, not before the import
    except OSError:  # the parent ended while this (pre-started) worker was starting: nobody to serve or tell
        os._exit(0)
    trim_idle_s = float(argv[3])  # _pool.TRIM_IDLE_S
    jobs = _Jobs(control)
    cold = "first"  # a fresh heap: the next build faults it in (it tells the parent, which marks the build)
    while True:
        try:
            job_id, job, cancel = jobs.next(timeout=trim_idle_s)
        except queue.Empty:
            _give_back_memory()
            cold = cold or "idle"
            job_id, job, cancel = jobs.next()
        if cold:
            with contextlib.suppress(OSError, ValueError):  # the parent is gone: run_job ends this process
                events.send(Cold(cold))
            cold = ""
        run_job(job, cancel, events, jobs.replies)
        jobs.done(job_id)


if __name__ == "__main__":
    main(sys.argv[1:])
