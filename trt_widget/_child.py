"""The child side of process isolation: build one engine and stream progress to the parent over a pipe.

Started by :mod:`trt_widget._process` with the ``spawn`` start method (``main(job, events, control)``).
The builder thread only appends to an in-memory outbox; a sender thread ships it over the ``events`` pipe,
at once after a phase starts or finishes and otherwise at most every ~20 ms (runs of step events of one
phase are coalesced to the latest), so a slow reader can never throttle or block the builder. A reader
thread waits on the ``control`` pipe: ``("stop",)`` (or the parent going away) makes the next
``step_complete`` return False.

Messages to the parent: ``("hello", pid)`` first; then ``("events", [event, ...])`` with events
``("start", name, parent, num_steps, t)``, ``("step", name, step, t)``, ``("finish", name, t)`` and
``("log", level, message, t)`` (``t`` is ``time.perf_counter()`` in the child); then one final message:
``("engine", path, size, sha256)``, ``("cancelled",)`` or ``("error", message)``. The engine file lies in one
of the parent's private work directories (RAM-backed ``/dev/shm`` when it has room, else the temp directory).

TEST HOOK (for tests only, never set it in real use): the environment variable
``TRT_WIDGET_TEST_CRASH="<how>:<phase name>"`` makes the child die as soon as the named phase starts, after
flushing the events so far. ``<how>`` is ``abort`` (``os.abort()``, SIGABRT), ``kill`` (SIGKILL to itself),
``segv`` (a real segmentation fault) or ``exit`` (``os._exit(3)``).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import signal
import threading
import time
import traceback
from typing import Any

from ._errors import BuildError

TEST_CRASH_ENV = "TRT_WIDGET_TEST_CRASH"
SEND_INTERVAL_S = 0.02


class Outbox:
    """Events from the builder thread, shipped by a sender thread; ``put*`` never blocks on the pipe."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()  # one writer on the connection at a time
        self._events: list[tuple[Any, ...]] = []
        self._step_index: dict[str, int] = {}  # phase name -> index of its pending step event
        self._wake = threading.Event()
        self._closed = False
        self.broken = False  # the parent stopped reading (gone)
        self._thread = threading.Thread(target=self._run, name="trt_widget-child-sender", daemon=True)
        self._thread.start()

    def step(self, name: str, step: int) -> None:
        event = ("step", name, step, time.perf_counter())
        with self._lock:
            index = self._step_index.get(name)
            if index is not None:
                self._events[index] = event
            else:
                self._step_index[name] = len(self._events)
                self._events.append(event)

    def structure(self, event: tuple[Any, ...]) -> None:
        """A phase start/finish: ordering matters from here on, and the parent wants it at once."""
        with self._lock:
            self._events.append(event)
            self._step_index.clear()
        self._wake.set()

    def log(self, event: tuple[Any, ...]) -> None:
        with self._lock:
            self._events.append(event)

    def flush(self) -> None:
        """Send everything pending now, from the calling thread."""
        with self._send_lock:  # held while taking the batch too, so batches leave in order
            with self._lock:
                batch, self._events = self._events, []
                self._step_index.clear()
            if batch and not self.broken:
                try:
                    self._conn.send(("events", batch))
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


def _crash_hook() -> tuple[str, str] | None:
    """TEST HOOK: parse ``TRT_WIDGET_TEST_CRASH``; see the module docstring."""
    value = os.environ.get(TEST_CRASH_ENV, "")
    how, _, phase = value.partition(":")
    if how in ("abort", "kill", "segv", "exit") and phase:
        return how, phase
    return None


def _crash(how: str) -> None:
    """TEST HOOK: die the way the test asked."""
    if how == "abort":
        os.abort()
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "segv":
        import ctypes

        ctypes.string_at(0)
    os._exit(3)


def _make_monitor(outbox: Outbox, cancel: threading.Event) -> Any:
    """A progress monitor that streams raw callbacks (replayed verbatim into the parent's PhaseModel)."""
    from ._backend import trt

    base: Any = trt().IProgressMonitor
    crash = _crash_hook()

    class StreamingMonitor(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            base.__init__(self)
            self.cancel_event = cancel

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            try:
                outbox.structure(("start", phase_name, parent_phase, num_steps, time.perf_counter()))
                if crash is not None and crash[1] == phase_name:
                    outbox.flush()
                    _crash(crash[0])
            except Exception:
                pass

        def step_complete(self, phase_name: str, step: int) -> bool:
            try:
                outbox.step(phase_name, step)
            except Exception:
                pass
            return not cancel.is_set()

        def phase_finish(self, phase_name: str) -> None:
            try:
                outbox.structure(("finish", phase_name, time.perf_counter()))
            except Exception:
                pass

    return StreamingMonitor()


def _listen(control: Any, cancel: threading.Event) -> None:
    """Set ``cancel`` on a stop message, or when the parent closes the pipe (it went away)."""
    while True:
        try:
            message = control.recv()
        except (EOFError, OSError):
            cancel.set()
            return
        if message and message[0] == "stop":
            cancel.set()


def _load_source(job: dict[str, Any]) -> Any:
    from ._engine import ModelSource

    kind, label = job["kind"], job["label"]
    if kind == "path":
        return ModelSource("path", job["path"], label)
    if kind == "bytes":
        with open(job["path"], "rb") as handle:
            return ModelSource("bytes", handle.read(), label)
    try:
        function = pickle.loads(job["callable"])
    except Exception as exc:
        raise BuildError(
            f"the build process could not load the network definition function {label}: {exc!r}. With "
            "isolation='process' pass a function defined at module level in an importable .py module, "
            "or an ONNX model"
        ) from exc
    return ModelSource("callable", function, label)


def write_first(dirs: list[str], name: str, data: bytes) -> str:
    """Write ``data`` as ``name`` in the first directory with room (a RAM-backed one may be small)."""
    for index, directory in enumerate(dirs):
        path = os.path.join(directory, name)
        try:
            with open(path, "wb") as handle:
                handle.write(data)
            return path
        except OSError:
            try:
                os.unlink(path)
            except OSError:
                pass
            if index == len(dirs) - 1:
                raise
    raise OSError("no directory to write to")


def _write_engine(engine: bytes, dirs: list[str]) -> tuple[str, int, str]:
    digest: list[str] = []
    hasher = threading.Thread(target=lambda: digest.append(hashlib.sha256(engine).hexdigest()))
    hasher.start()  # hashing releases the GIL: it overlaps with writing
    try:
        path = write_first(dirs, "engine.plan", engine)
    finally:
        hasher.join()
    return path, len(engine), digest[0]


def main(job: dict[str, Any], events: Any, control: Any) -> None:
    """Child entry point: build with ``job`` (kind, label, path/callable, options, backend, workdirs)."""
    os.environ["TRT_WIDGET_BACKEND"] = job["backend"]
    events.send(("hello", os.getpid()))
    outbox = Outbox(events)
    cancel = threading.Event()
    threading.Thread(target=_listen, args=(control, cancel), name="trt_widget-child-control",
                     daemon=True).start()
    final: tuple[Any, ...]
    try:
        from ._engine import CaptureLogger, build_engine

        def on_record(record: dict[str, Any]) -> None:
            level = ("INTERNAL_ERROR", "ERROR", "WARNING", "INFO", "VERBOSE").index(record["severity"])
            outbox.log(("log", level, record["message"], time.perf_counter()))

        logger = CaptureLogger(job["options"].verbose, on_record=on_record)
        source = _load_source(job)
        monitor = _make_monitor(outbox, cancel)
        engine = build_engine(source, job["options"], monitor, logger)
        final = ("cancelled",) if engine is None else ("engine", *_write_engine(engine, job["workdirs"]))
    except BuildError as exc:
        final = ("error", str(exc))
    except Exception as exc:
        final = ("error", f"unexpected {type(exc).__name__} in the build process: {exc}\n{traceback.format_exc()}")
    outbox.close()
    try:
        events.send(final)
    except (OSError, ValueError):
        pass
    events.close()
