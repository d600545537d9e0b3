"""``Build``: one TensorRT engine build, observable and cancelable, driven from a background thread.

``start()`` returns at once; a runner (:mod:`trt_widget.runners`: a warm builder process by default, or this
process's thread) fills the phase model as TensorRT calls back; ``stop()`` sets the one cancel event, which the
runner honours at the next step boundary, and, in a builder process, by terminating it when that takes longer
than ``force_after`` seconds (0.1 by default; docs/stop.md).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

from ._backend import check_options, select_backend
from ._engine import BEFORE_PHASES, CaptureLogger, ModelLike, ModelSource
from ._errors import BuildCancelled, BuildError
from ._event_sinks import Sink
from ._expected import parse_row, unexpected_errors
from ._external_data import read_matches
from ._files import (
    ENGINES_SYNCED,
    ForeignFile,
    WrittenFile,
    atomic_write,
    check_output,
    claim_targets,
    expand_user,
    refuse_foreign_folder,
    refuse_inputs,
    refuse_taken,
    release_targets,
    resolve,
    write_output,
)
from ._format import escape_controls
from ._gpu import memory_skip_note
from ._leftovers import UnsafeTempDir
from ._options import BuildOptions, BuildOptionsDict
from ._phases import CANCELLED, FINISHED_EARLY, Framing, PhaseModel, Timings
from ._phases import DONE as PHASE_DONE
from ._phases import FAILED as PHASE_FAILED
from ._status import (
    BUILD_STATUSES,
    CANCELLING,
    FAILED,
    FINAL,
    IDLE,
    LIVE,
    QUEUED,
    RUNNING,
    SUCCEEDED,
    BuildStatus,
    log,
)
from ._subscribe import BuildEvent, subscribe
from ._tensorrt_log import LogFile
from ._waiting import Waiting
from .engine import EngineLog, EngineReport, report_of
from .runners import START_PHASE, EngineFile, Recording, RunContext, Runner, runner_for

if TYPE_CHECKING:
    import pandas
    from typing_extensions import Self, Unpack  # typing.Self, typing.Unpack from Python 3.11

    from ._events import EventStream
    from ._json import JSONObject
    from ._resources import ResourceSampler
    from ._status import CancelInfo
    from ._tensorrt_log import LogRecord
    from .history import HistoryLink, HistoryStore
    from .provenance import HashCache

__all__ = ["BUILD_STATUSES", "FINAL", "Build", "BuildArgs", "HistorySetting"]

# history=: True (the default location), False / None (off), a path or off word, or a HistoryStore
HistorySetting = Union[bool, None, str, "os.PathLike[str]", "HistoryStore"]


def history_file(history: HistorySetting) -> str | None:
    """The file a ``history=`` path or store names (checked against the model before it is written), or None."""
    if isinstance(history, (str, os.PathLike)):
        from .history import history_path

        try:
            path = history_path(history)
        except Exception:  # attach_history says why and runs the build without history
            return None
        return None if path is None else str(path)
    path = getattr(history, "path", None)
    return None if path is None else str(path)


class BuildArgs(BuildOptionsDict, total=False):
    """Build's keyword arguments that front ends (BuildWidget) pass through: the options, events, history,
    resources."""

    events: Sink | None
    history: HistorySetting
    resources: bool


# What a build does outside TensorRT's progress callbacks, shown as top-level phases so that the rows add up to
# the build's time: before TensorRT's first phase (reading and parsing the ONNX model, or the user's network
# function: reported by the builder, _engine.py) and after its last (serializing, handing the engine back,
# writing output=: added here).
AFTER_PHASE = "Serializing and saving the engine"
REUSED_PHASE = "Reused engine"  # the one row of a build that found its engine (reuse=True)
# the longest a finished build waits for the model's hash (read while it built, a bounded read of a regular file):
# past it, on a stuck file system, the engine is kept and its manifest not written (a warning says so)
HASHING_WAIT_S = 600.0
FRAME_PHASES = frozenset([*BEFORE_PHASES.values(), START_PHASE, AFTER_PHASE, REUSED_PHASE])
FRAMING = Framing(AFTER_PHASE, FRAME_PHASES)  # for a runner whose events TensorRT makes here (``Runner.framed``)
TIMING_COLUMNS = [
    *("id", "name", "parent", "depth", "step", "num_steps", "start_s", "end_s", "duration_s", "status", "ended_early")
]


# output= of the builds running in this process, by real path: a second build started onto one is refused


@dataclass(frozen=True)
class _Ended:
    """A succeeded build as the engine report reads it (before the build's own status says so)."""

    engine_size: int
    status: str = "succeeded"


class Build(Waiting):
    """Build an engine from ``model`` (ONNX path / bytes / ModelProto, or a network-defining callable).

    Options: the fields of :class:`~trt_widget.BuildOptions` (:class:`BuildOptionsDict`; docs/options.md), e.g.
    optimization_level, workspace, profiles, output, budget, isolation ("process", the default: a warm builder
    process that Stop can always end; or "thread"), configure. Unknown options raise TypeError at once.
    ``runner=`` runs the builder elsewhere (a :class:`~trt_widget.runners.Runner`, e.g.
    ``trt_widget.RayRunner()``) instead of where isolation says.

    Life cycle: ``start()`` once (a second call raises RuntimeError); ``stop()`` before start or after the
    end does nothing and returns False; a build that stops before producing an engine ends "cancelled".
    """

    def __init__(
        self,
        model: ModelLike | ModelSource,
        *,
        events: Sink | None = None,
        history: HistorySetting = True,
        resources: bool = True,
        clock: Callable[[], float] = time.perf_counter,
        runner: Runner | None = None,
        **options: Unpack[BuildOptionsDict],
    ) -> None:
        """The one constructor of every kind of build: ``runner`` (a recording's, a server's, the user's code...)
        says where the engine comes from; ``model`` may be a :class:`ModelSource` that runner reads."""
        super().__init__()
        self.options = BuildOptions.from_kwargs(**options)  # unknown names: TypeError with "did you mean"
        self.source = ModelSource.of(model)
        sink_path = events if isinstance(events, (str, os.PathLike)) else None
        self._hashes: HashCache | None = None  # reuse=True: file hashes remembered in the engine cache
        known_model = False  # reuse=True of a model whose hash is remembered: most likely found, nothing to build
        if self.options.reuse and self.source.kind == "path" and isinstance(self.source.value, str):
            real = os.path.realpath(expand_user(self.source.value))
            known_model = self._hash_cache().recall(real) is not None  # (and spares the checks below a read)
        self._events_path = sink_path
        refuse_inputs(  # the model, its external data (or a recording): never written
            self,
            output=self.options.output,
            timing_cache=self.options.timing_cache,
            events=sink_path,
            history=history_file(history),
        )
        if sink_path is not None:
            for name, other in (("output", self.options.output), ("timing_cache", self.options.timing_cache)):
                if other is not None and os.path.realpath(expand_user(other)) == os.path.realpath(
                    expand_user(sink_path)
                ):
                    raise ValueError(f"events= and {name}= are the same file ({other}): choose another events file")
        if runner is None or runner.local:  # this process's TensorRT builds: its API checks the options now
            check_options(self.options)
        if self.options.log_file:
            log_real = os.path.realpath(self.options.log_file)
            named: tuple[tuple[str, str | os.PathLike[str] | None], ...] = (
                ("output", self.options.output),
                ("timing_cache", self.options.timing_cache),
                ("events", sink_path),
            )
            for name, taken in named:
                if taken is not None and os.path.realpath(expand_user(taken)) == log_real:
                    raise ValueError(f"log_file= and {name}= are the same file ({taken}): choose another log file")
        refuse_taken(
            self, {"events=": sink_path}
        )  # opened below: not another running build's file (start() checks all)
        if self.options.output:  # found now, not after the build: OSError naming the path and the reason
            check_output(self.options.output, "output=", self, now=False)
        if self.options.isolation == "process" or runner is not None:
            from .runners import check_transferable, pool

            check_transferable(self.source, self.options.configure)  # what cannot reach a builder fails here
            if runner is None and not known_model:
                pool.prewarm()
        self.runner: Runner = runner if runner is not None else runner_for(self.options)
        self.model = PhaseModel(clock, FRAMING if self.runner.framed else None)
        self._clock = clock
        self._cancel = threading.Event()
        self._status = IDLE
        self.status_detail = ""
        self._notes: list[str] = []  # what the runner said about the build (kept on success; stop reasons are not)
        self.cancel_info: CancelInfo | None = None  # {"phase": name, "requested_at_s": t} once stopped
        self._engine: bytes | None = None
        self._written: WrittenFile | None = None  # output= holds the engine, not yet read into this process
        self._reported_engine_size: int | None = None  # the runner's, for an engine it does not hand over
        self.error: BuildError | None = None
        self.logger = CaptureLogger(self.options.verbose, clock)
        # what a build whose output= could not be written says of its engine (the command line, whose process
        # ends with the build, says the engine is not saved)
        self._unsaved_note = "It is kept in memory: build.engine holds it and build.save(path) writes it elsewhere"
        if self.source.kind != "recording":  # a replay's lines were sent to logging when they were built
            self.logger.label = self.source.label
            self.logger.cancel = self._cancel
            self.logger.parse_status = self._parse_status  # asked, not told: a build subscribes to nothing of its own
        self._log_file: LogFile | None = None
        if self.options.log_file:  # checked now by the output-path policy; written from start()
            self._log_file = LogFile(self.options.log_file, self)
            self.logger.full = True
            self.logger.on_line = self._log_file.write
        if self.options.engine_report:
            self.logger.engine_log = EngineLog()
        self._engine_report: tuple[EngineReport | None, str] | None = None
        self._model_identity: JSONObject | None = None  # the model's content hash, once computed
        self._hashed_keys: dict[str, str | None] = {}  # the stat key of each model file hashed (model_identity)
        self._read_keys: dict[str, str | None] | None = None  # the stat key of each model file the builder read
        self._identity: JSONObject | None = None  # what determines the engine (provenance), once computed
        self.recorded_options: JSONObject | None = None  # a replay: the options the recorded build ran with
        self.reused_from: str | None = None  # reuse=True: the engine file this build's engine was taken from
        self._engine_digest: tuple[str, int] | None = None  # the engine's sha256 and size, where already known
        self._hashing: threading.Thread | None = None  # hashing the model while it builds (output=)
        self.manifest_path: str | None = None  # the manifest written beside output=, once written
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._ended_s: float | None = None
        self._building = False  # a builder has the build (False while it waits in a queue, and before start)
        self.waiting_for = ""  # while queued: what the build waits for, as its runner says ("" : a builder)
        self._on_start: list[Callable[[Build], None]] = []
        self._force = threading.Event()  # process isolation: terminate the builder process now
        self.child_pid: int | None = None  # process isolation: the builder process, once known
        # process isolation: the builder process had built nothing yet or had given its memory back while idle, so
        # this build paid one-time costs inside TensorRT's phases (fresh memory: ~0.1-0.3 s for a ResNet-50 here)
        self.cold_builder = False
        self.history: HistoryLink | None = None  # ETA and deltas when history is on
        self.resources: ResourceSampler | None = None  # when resources is on
        self.events: EventStream | None = None  # the events= stream, when given
        if events is not None:
            from ._events import attach_events

            attach_events(self, events)
        if history:
            from .history import attach_history

            attach_history(self, history)
        if resources:
            from ._resources import attach_resources

            attach_resources(self)

    @classmethod
    def from_events(cls, recording: Recording, *, speed: float | None = None) -> Build:
        """A Build that replays a recording of ``events=`` / ``--json`` (a path, or an iterable of JSON lines or
        event dicts): instantly, or at the recorded pace times ``speed`` (0.001 to 1e6; a pause between two events
        lasts at most a minute). ``start()`` it like any build; it has no engine bytes. A bad line raises
        ``trt_widget.runners.RecordingError`` naming the line."""
        from .runners import check_speed, load_events

        check_speed(speed)  # ValueError before reading the recording
        where = str(recording) if isinstance(recording, (str, os.PathLike)) else "a recording"
        return cls.from_loaded_events(load_events(recording), where, speed=speed)

    @classmethod
    def from_loaded_events(cls, events: list[JSONObject], where: str, *, speed: float | None = None) -> Build:
        """A Build that replays events ``load_events`` checked (the first build among them: ``split_builds``
        gives each build of a recording that holds several)."""
        from .runners import ReplayClock, ReplayRunner

        clock = ReplayClock()
        first = next((e for e in events if e["event"] == "build_start"), {})
        build = Build(
            ModelSource("recording", where, f"replay of {first.get('model') or where}"),
            runner=ReplayRunner(events, clock, speed),
            clock=clock,
            history=False,
            resources=False,
            isolation="thread",
        )
        recorded = first.get("options")
        build.recorded_options = recorded if isinstance(recorded, dict) else None
        return build

    # -- state ---------------------------------------------------------------------------------------
    @property
    def engine(self) -> bytes | None:
        """The serialized engine once the build succeeded, else None. Where the builder process wrote it straight
        to ``output=``, it is read from that file on first use (BuildError if the file changed since)."""
        written = self._written
        if written is not None:
            with self._condition:
                if self._written is not None:
                    try:
                        self._engine = self._written.read()
                    except OSError as exc:
                        raise BuildError(
                            escape_controls(f"the engine is in {self._written.path} only, and {exc}")
                        ) from None
                    self._written = None
        return self._engine

    @engine.setter
    def engine(self, value: bytes | None) -> None:
        self._engine, self._written = value, None

    @property
    def engine_size(self) -> int | None:
        """The engine's size in bytes (for a replay, a watched or relayed build: the size its runner reported); None
        when there is none."""
        if self._written is not None:
            return self._written.size
        return len(self._engine) if self._engine else self._reported_engine_size

    @property
    def engine_report(self) -> EngineReport | None:
        """What the engine holds: its layers, precisions, tactics, fused ONNX nodes and memory, read from TensorRT's
        log (:class:`trt_widget.EngineReport`); None where TensorRT gave none (:attr:`engine_report_reason` says
        why). Read once, on first use after the build ended."""
        return self._read_engine_report()[0]

    @property
    def engine_report_reason(self) -> str:
        """Why :attr:`engine_report` is None ("" where there is one)."""
        return self._read_engine_report()[1]

    def _read_engine_report(self) -> tuple[EngineReport | None, str]:
        if not self.done():
            return None, "the build has not ended"
        if self._engine_report is None:
            self._engine_report = report_of(self, self.logger.engine_log, self.options, self.source.label)
        return self._engine_report

    @property
    def status(self) -> BuildStatus:
        """One of idle, queued (waiting for a builder slot or worker), running, cancelling, succeeded, cancelled,
        failed."""
        return self._status

    @property
    def future(self) -> Future[bytes]:
        """The build as a ``concurrent.futures.Future`` of its engine bytes: the build itself (``future`` is the
        same word on a widget, a watched call and a command run)."""
        return self

    def running(self) -> bool:
        """True while the builder runs (status running or cancelling), as ``Future.running()``."""
        return self._status in LIVE

    def cancelled(self) -> bool:
        """True when the build ended cancelled, as ``Future.cancelled()``."""
        return self._status == CANCELLED

    @property
    def elapsed_s(self) -> float:
        """Seconds since start (the final duration once the build ended; 0 before start)."""
        if self._status == IDLE:
            return 0.0
        return self._ended_s if self._ended_s is not None else self.model.now()

    @property
    def started_building(self) -> bool:
        """True once a builder has the build; False before start, while it waits for a slot or worker (status
        queued) and for a build that ended there (stopped while queued: it never started)."""
        return self._building

    @property
    def tensorrt_started(self) -> bool:
        """True once TensorRT's builder reported a phase of its own; False for a build that ended before (a missing
        or unparsable model, a refused option): its process's memory says nothing about the build."""
        return any(row["name"] not in FRAME_PHASES for row in self.model.rows())

    @property
    def logs(self) -> list[LogRecord]:
        """Captured TensorRT log lines: ``{"severity", "message", "t"}`` (INFO and worse; VERBOSE if verbose)."""
        return list(self.logger.records)

    @property
    def problems(self) -> list[LogRecord]:
        """TensorRT warnings and errors only."""
        return list(self.logger.problems)

    def timings(self) -> Timings:
        """Per phase instance: id, name, parent (id or None), depth, start_s, end_s, duration_s, step, ...,
        status and ``ended_early``, as a :class:`Timings` list (compact in a notebook: top-level phases and a count
        of nested rows). A phase TensorRT closed before the last step it announced (as it closes its
        root in every build) reads ``done`` with ``ended_early`` True, as in :meth:`timings_df`."""
        rows = Timings()
        for row in self.model.timings():
            early = row["status"] == FINISHED_EARLY
            status = PHASE_DONE if early else row["status"]
            rows.append({**row, "status": status, "ended_early": early})
        return rows

    def timings_df(self) -> pandas.DataFrame:
        """The timings as a pandas DataFrame indexed by phase id (needs pandas). A phase TensorRT closed before
        the last step it announced (as it closes its root in every build) reads ``done`` with ``ended_early``
        True, so ``status != "done"`` finds only the phases a stop or a failure cut short."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("timings_df() needs pandas: pip install pandas (or use timings())") from exc
        rows = self.timings()
        frame = pd.DataFrame(rows, columns=TIMING_COLUMNS)
        frame = frame.astype(
            {
                "id": "int64",
                "parent": "Int64",
                "depth": "int64",
                "step": "int64",
                "num_steps": "int64",
                "start_s": "float64",
                "end_s": "float64",
                "duration_s": "float64",
                "name": "object",
                "status": "object",
                "ended_early": "bool",
            }
        )
        return frame.set_index("id")

    def subscribe(self, fn: Callable[[BuildEvent], None], *, steps: bool = True) -> Callable[[], None]:
        """Call ``fn(event)`` for every start, phase start/step/finish, captured log line and end of this build
        (no steps with ``steps=False``); returns a function that unsubscribes. ``fn`` runs on the thread of the
        event: keep it quick."""
        return subscribe(self, fn, steps=steps)

    def on_start(self, callback: Callable[[Build], None]) -> None:
        """Call ``callback(build)`` in ``start()``, after the clock restarts and before the builder runs."""
        self._on_start.append(callback)

    shared_roles: frozenset[str] = frozenset({"timing_cache="})  # files other running builds may write too

    def _targets(self) -> dict[str, str | os.PathLike[str] | None]:
        """The files this build writes while it runs, by role: held from ``start()`` to its end."""
        from .provenance import manifest_path

        output = self.options.output
        return {
            "output=": output,
            "manifest (beside output=)": manifest_path(output) if output else None,
            "events=": self._events_path,
            "timing_cache=": self.options.timing_cache,
            "log_file=": self.options.log_file,
        }

    def _claim_output(self) -> None:
        """Refuse to start while another build of this process writes one of this build's files (the engine, its
        manifest, the events, the timing cache as anything but a timing cache, the log): the last one to write
        would replace or interleave with the other's without a word."""
        claim_targets(self, self._targets())

    def _release_output(self) -> None:
        release_targets(self)

    # -- control -------------------------------------------------------------------------------------
    def start(self) -> Self:
        """Start building on a background thread and return at once."""
        with self._condition:
            if self._status != IDLE:
                raise RuntimeError(f"this build already started (status {self._status}); a Build runs once")
            self._claim_output()
            self._status = RUNNING
            self._building = True
            self.set_running_or_notify_cancel()
        self.model.restart_clock()
        self.logger.restart_clock()
        if self._log_file is not None:
            try:
                self._log_file.open()
            except OSError as exc:
                self._log_file = None
                self._log_file_lost(str(exc))
        for callback in self._on_start:  # before any builder event, so readers see the start first
            try:
                callback(self)
            except Exception:
                log.exception("an on_start callback of %r failed", self)
        if self.options.budget is not None:
            self._timer = threading.Timer(self.options.budget, self._budget_expired)
            self._timer.daemon = True
            self._timer.start()
        self._thread = threading.Thread(target=self._run, name="trt_widget-build", daemon=True)
        self._thread.start()
        return self

    def stop(self, reason: str = "stopped by user") -> bool:
        """Ask the builder to cancel at its next step boundary; True if a running build was asked.

        In a builder process (the default) the process is terminated when no step boundary comes within
        ``force_after`` s (0.1 by default); a second ``stop()`` while cancelling terminates it at once.
        """
        with self._condition:
            if self._status == CANCELLING and self.options.isolation == "process":
                self._force.set()
                return True
            if self._status not in (RUNNING, QUEUED):
                return False
            self._status = CANCELLING
            self.status_detail = reason
            phase = self.model.innermost_running()
            self.cancel_info = {"phase": phase.name if phase else "", "requested_at_s": self.model.now()}
            self.model.request_cancel()
        self._cancel.set()
        return True

    def cancel(self) -> bool:
        """``stop()``, in ``concurrent.futures.Future``'s words: True when a queued or running build was asked to
        stop (it ends ``cancelled`` unless TensorRT finished first), False when it has ended or never started."""
        return self.stop("cancelled")

    def _budget_expired(self) -> None:
        self.stop(f"time budget of {self.options.budget:g} s exceeded")

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the engine to ``path`` atomically (never a partial file); returns the path.

        Only regular files are written (a symlink's target is replaced, the link kept); the model file is refused.
        Built with TensorRT for RTX (``backend_info()["backend"] == "rtx"``), the engine is an RTX engine, finished
        on the GPU when loaded: NVIDIA TensorRT and Triton's TensorRT backend cannot load it.
        """
        if not self.engine:  # say why where the user looks: the build's own error, not only its status
            cause = f": {self.error}" if self._status == "failed" and self.error is not None else ""
            waiting = (
                " — call start() first"
                if self._status == IDLE
                else " — wait for it first (await it, or .wait())"
                if self._status not in FINAL
                else ""
            )
            raise BuildError(
                f"no engine to save: the build is {self._status}{cause}{waiting}"
                + (" (a replayed recording holds no engine)" if self.engine == b"" else "")
            )
        from .provenance import manifest_path

        refuse_taken(self, {"path=": path, "manifest (beside path=)": manifest_path(path)})  # a running build's files
        write_output(path, self.engine, "path", self, sync=ENGINES_SYNCED)  # the one output-path policy
        try:
            from .provenance import write_manifest

            write_manifest(path, self.manifest(path), self)
        except Exception as exc:  # the engine is written: a missing manifest is a warning, never an error
            with contextlib.suppress(OSError):  # an older one beside it describes the engine just replaced
                os.unlink(manifest_path(path))
            log.warning("the manifest of %s could not be written: %s", path, exc)
            warnings.warn(f"the manifest of {path} could not be written: {exc}", stacklevel=2)
        return str(path)

    def bundle(self, path: str | os.PathLike[str], *, include_model: bool = False, redact: bool = False) -> str:
        """Write a bug-report zip of this ended build to ``path``: its log, events, options, manifest, engine
        report, versions and GPU, with a README.txt listing them; the model and engine only with
        ``include_model``; the user's folders replaced with ``redact`` (docs/reuse.md)."""
        from .provenance import write_bundle

        if not self.done():
            raise BuildError(f"the build is {self._status}: bundle it once it has ended (build.wait())")
        return str(write_bundle(self, path, include_model=include_model, redact=redact))

    # -- the builder thread --------------------------------------------------------------------------
    def _context(self) -> RunContext:
        return RunContext(
            source=self.source,
            options=self.options,
            model=self.model,
            logger=self.logger,
            cancel=self._cancel,
            force=self._force,
            shared_clock=self._clock is time.perf_counter,
            note=self._note,
            on_pid=self._on_pid,
            on_queued=self._on_queued,
            on_waiting=self._on_waiting,
            on_engine_size=self._on_engine_size,
            on_cold_builder=self._on_cold_builder,
            on_read_files=self._on_read_files,
        )

    def _on_read_files(self, keys: dict[str, str | None]) -> None:
        self._read_keys = dict(keys)

    def _log_file_lost(self, problem: str) -> None:
        """Say that ``log_file=`` could not be written: in the build's log too, which a terminal shows (the
        status detail only when the build fails)."""
        sentence = f"log_file={self.options.log_file} could not be written ({problem})"
        self.logger.log(2, sentence)
        self._note(f"warning: {sentence}")

    def _note(self, sentence: str) -> None:
        """Add a sentence to the status detail, once (a relayed stop's reason comes back from the command too)."""
        with self._condition:
            if sentence in self._notes or sentence in self.status_detail.split("; "):
                return
            self._notes.append(sentence)
            self.status_detail = f"{self.status_detail}; {sentence}" if self.status_detail else sentence

    def _on_engine_size(self, size: int) -> None:
        self._reported_engine_size = size

    def _on_pid(self, pid: int | None) -> None:
        self.child_pid = pid

    def _on_cold_builder(self) -> None:
        self.cold_builder = True

    def _on_queued(self, queued: bool) -> None:
        """The runner waits for a slot or worker (status queued), or builds now: then the clock (and the budget)
        restart, so elapsed time and phase times count building, not waiting."""
        with self._condition:
            if queued:
                if self._status == RUNNING:
                    self._status = QUEUED
                    self._building = False
                return
            if self._status == CANCELLING:  # stopped while queued, and a builder took it all the same
                self._building = True
            if self._status != QUEUED:
                return
            self._status = RUNNING
            self._building = True
            self.waiting_for = ""
            self.model.restart_clock()
            self.logger.restart_clock()
            if self._timer is not None and self.options.budget is not None:
                self._timer.cancel()
                self._timer = threading.Timer(self.options.budget, self._budget_expired)
                self._timer.daemon = True
                self._timer.start()

    def _on_waiting(self, what: str) -> None:
        self.waiting_for = what

    def _execute(self) -> bytes | EngineFile | None:
        return self.runner.run(self._context())

    def _run(self) -> None:
        engine: bytes | WrittenFile | None = None
        error: BuildError | None = None
        try:
            if self.options.output and not self.options.reuse:  # the model as built: hashed beside the build
                self._hashing = threading.Thread(
                    target=self._provenance_identity, name="trt_widget-provenance", daemon=True
                )
                self._hashing.start()
            found = self._find_reusable() if self.options.reuse else None
            if found is not None:
                engine = found
            else:
                result = self._execute()
                engine = self._place(result) if isinstance(result, EngineFile) else result
            if isinstance(engine, bytes) and self.options.output:
                try:
                    atomic_write(self.options.output, engine, sync=ENGINES_SYNCED)
                except OSError as exc:
                    raise BuildError(
                        f"the engine was built but could not be written to {self.options.output}: "
                        f"{exc}. {self._unsaved_note}"
                    ) from exc
            if engine is not None:  # the manifest is part of saving: its time is inside the after row
                self._record_provenance(engine)
                self.model.end_after()
        except BuildError as exc:
            error = exc
        except UnsafeTempDir as exc:  # a refused TMPDIR: the user's setting, explained, not an internal error
            error = BuildError(str(exc))
            error.__cause__ = exc
        except KeyboardInterrupt:  # Ctrl-C in a network function running on this thread: a cancel, not a failure
            self._note("the network definition function raised KeyboardInterrupt")
        except BaseException as exc:  # an unexpected failure (even SystemExit in user code) still ends the build
            error = BuildError(f"unexpected {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            error.__cause__ = exc
        self._finish(engine, error)

    # -- provenance: the manifest beside the engine, reuse ------------------------------------------------------
    def _provenance_identity(self) -> JSONObject:
        """What determines this build's engine (hashing the model and its external data once; with reuse=True,
        hashes remembered in the engine cache spare reading unchanged files)."""
        if self._identity is None:
            from .provenance import identity_of, model_identity

            hashes = self._hash_cache() if self.options.reuse else None
            self._model_identity = model_identity(self.source, hashes, self._hashed_keys)
            self._identity = identity_of(self, self._model_identity, hashes)
        return self._identity

    def _hash_cache(self) -> HashCache:
        """The file hashes remembered in the engine cache directory (loaded once; reuse=True only)."""
        if self._hashes is None:
            from .provenance import HashCache, reuse_dir_of

            self._hashes = HashCache(reuse_dir_of(self.options.reuse_dir))
        return self._hashes

    def _find_reusable(self) -> bytes | WrittenFile | None:
        """reuse=True: the engine of an earlier build whose manifest matches this one's identity (at output=, else
        in the engine cache), put at output=; None (and a note saying why) when this build must build."""
        from .provenance import ManifestError, read_manifest, trusted_owners

        began = self._clock()
        output = Path(self.options.output) if self.options.output else None
        hashes = self._hash_cache()
        if hashes.ignored:
            self._note(f"reuse: ignored the hash cache: {hashes.ignored}")
        ahead = None
        try:
            size = read_manifest(output, owners=trusted_owners()).engine_size if output is not None else None
        except (ManifestError, OSError):
            size = None  # find_reusable says why
        if output is not None and size is not None:
            # check the engine there (by its remembered hash, or read) while the model is hashed; a file of
            # another size than its manifest's is not it: never read
            read = functools.partial(hashes.file, owners=trusted_owners(), size=size)
            ahead = threading.Thread(target=_quietly, args=(read, output), name="trt_widget-reuse", daemon=True)
            ahead.start()
        identity = self._provenance_identity()
        if ahead is not None:
            ahead.join()
        try:
            return self._reuse_found(identity, output, began)
        finally:
            hashes.save()

    def _reuse_found(self, identity: JSONObject, output: Path | None, began: float) -> bytes | WrittenFile | None:
        from .provenance import cache_entry, copy_into_place, find_reusable, key_of, reuse_dir_of

        if identity["model"] is None:
            self._note("reuse: built anew: a network function's code (or an unreadable model) has no content hash")
            return None
        if self.options.configure is not None:
            self._note("reuse: built anew: configure= runs code whose effect on the engine cannot be compared")
            return None
        key = key_of(identity)
        directory = reuse_dir_of(self.options.reuse_dir)
        candidates = [*([output] if output else []), cache_entry(directory, key)]
        found = find_reusable(candidates, key, identity, self._hash_cache())
        for warning in found.warnings:
            log.warning("reuse: %s", warning)
            self._note(f"reuse: {warning}")
        if found.path is None or found.engine is None:
            reason = "; ".join(found.misses) or f"no engine of this build in {directory} yet"
            self._note(f"reuse: built anew: {reason}")
            return None
        engine: bytes | WrittenFile = found.engine
        if output is None:
            try:
                engine = found.engine.read()
            except OSError as exc:
                self._note(f"reuse: built anew: {found.path} changed while it was read ({exc})")
                return None
        elif found.path != output:
            try:
                engine = copy_into_place(found.engine, output)
            except OSError as exc:
                raise BuildError(f"reuse: found {found.path} but could not copy it to {output}: {exc}") from exc
        self._engine_digest = (found.sha256, found.engine.size)
        self.model.phase_start(REUSED_PHASE, None, 0, at=began)
        self.model.phase_finish(REUSED_PHASE)
        self.reused_from = str(found.path)
        self._note(f"reused the engine in {found.path} (its manifest matches this build's model, options, TensorRT)")
        return engine

    def _changed_files(self, identity: JSONObject) -> str:
        """Why this build's engine may not be built from the bytes its model ``identity`` hashed ("" where it is: the
        builder read each file with the very stat key the hash was taken of, where that key stands for the bytes,
        else bytes of that very hash: ``_external_data.vouching_key``, ``read_matches``). A model given as bytes:
        hashed from those very bytes; a reused engine or an unhashed model: no claim to check."""
        if self.source.kind == "bytes" or self.reused_from is not None or identity["model"] is None:
            return ""
        read, hashed = self._read_keys, self._hashed_keys
        if read is None:
            return "the builder did not say which files it read"
        for name in sorted(set(read) | set(hashed)):
            what = "the model file" if not name else f"its external data {name[:200]!r}"
            if name not in read or name not in hashed:
                return f"{what} was not both hashed and read"
            if hashed[name] is None:
                return f"{what} could not be tied to the bytes hashed"
            if not read_matches(read[name], hashed[name]):
                return f"{what} changed between its hash and the build"
        return ""

    def _record_provenance(self, engine: bytes | WrittenFile) -> None:
        """Write the manifest beside output= and, with reuse=True, keep the engine in the engine cache; a manifest
        that cannot be written never costs the engine (a warning in the status detail)."""
        if not (self.options.output or self.options.reuse):
            return
        try:
            from .engine import report_of as _report
            from .provenance import (
                cache_entry,
                copy_into_place,
                file_sha256,
                key_of,
                make_manifest,
                manifest_path,
                reuse_dir_of,
                write_manifest,
            )

            if self._hashing is not None:
                self._hashing.join(HASHING_WAIT_S)
                if self._hashing.is_alive():  # a model on a stuck file system: the engine is kept, unrecorded
                    raise OSError(f"hashing the model took more than {HASHING_WAIT_S:.0f} s")
            identity = self._provenance_identity()
            if self._engine_digest is not None:  # a reused engine, checked against its manifest
                digest, size = self._engine_digest
            elif isinstance(engine, WrittenFile):
                if self.options.reuse:  # remembered: the next reuse=True build need not read it again
                    hashed = self._hash_cache().file(engine.path)[0]
                    digest, size = hashed.sha256, hashed.size
                else:
                    digest, size = file_sha256(engine.path)
                if size != engine.size:
                    raise OSError(f"{engine.path} changed after this build wrote it")
            else:
                digest, size = hashlib.sha256(engine).hexdigest(), len(engine)
            if self.reused_from is not None:
                self._engine_report = (
                    None,
                    f"the engine was reused from {self.reused_from}: TensorRT did not run (its manifest holds the "
                    "report's summary: trt_widget.read_manifest(path).engine_report)",
                )
            else:
                self._engine_report = _report(_Ended(size), self.logger.engine_log, self.options, self.source.label)
            output = self.options.output
            changed = self._changed_files(identity)
            if changed:  # no manifest claims bytes the engine was not built from; none keeps it for reuse
                said = ["the engine is not kept for reuse"] if self.options.reuse else []
                said += ["no manifest is written beside it"] if output else []
                problem = f"the model's files changed during the build; {' and '.join(said)} ({changed})"
                self.logger.log(2, problem)
                self._note(f"warning: {problem}")
                if output:  # an older build's manifest beside it would describe another engine
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(manifest_path(output))
                if self._hashes is not None:
                    self._hashes.save()
                return
            if output and self.reused_from != output:  # (an engine reused in place keeps its own manifest)
                manifest = make_manifest(
                    self,
                    Path(output).name,
                    digest,
                    size,
                    identity,
                    self._model_identity,
                    report=self._engine_report[0],
                    reused_from=self.reused_from,
                )
                self.manifest_path = str(write_manifest(output, manifest, self))
            elif output:
                self.manifest_path = str(manifest_path(output))
            if self.options.reuse and self.reused_from is None and identity["model"] is not None:
                key = key_of(identity)
                directory = reuse_dir_of(self.options.reuse_dir)
                resolve(directory)  # UntrustedLink: no folder is made through another user's link
                directory.mkdir(parents=True, exist_ok=True, mode=0o700)
                refuse_foreign_folder(directory, "reuse_dir")  # the engine (the model's weights) would be theirs
                entry = cache_entry(directory, key)
                copy_into_place(engine.path if isinstance(engine, WrittenFile) else engine, entry)
                kept = make_manifest(
                    self, entry.name, digest, size, identity, self._model_identity, report=self._engine_report[0]
                )
                write_manifest(entry, kept)
            if self._hashes is not None:
                self._hashes.save()
        except Exception as exc:  # the engine is built and in place: a missing manifest is a warning
            problem = (
                f"the engine was not kept for reuse ({exc})"
                if isinstance(exc, ForeignFile)
                else f"the engine's manifest could not be written ({exc})"
            )
            self.logger.log(2, problem)  # in the build's log too: a terminal shows it (the detail only on failure)
            self._note(f"warning: {problem}")

    def manifest(self, engine_path: str | os.PathLike[str]) -> JSONObject:
        """The manifest (JSON-ready) of this build's engine written at ``engine_path`` (:func:`read_manifest`)."""
        from .provenance import make_manifest

        data = self.engine
        if not data:
            raise BuildError(f"no engine: the build is {self._status}")
        identity = self._provenance_identity()
        changed = self._changed_files(identity)
        if changed:  # a manifest never claims bytes the engine may not have been built from (D22-5)
            raise BuildError(f"no manifest: the model's files changed during the build ({changed})")
        digest = hashlib.sha256(data).hexdigest()
        return make_manifest(
            self,
            Path(engine_path).name,
            digest,
            len(data),
            identity,
            self._model_identity,
            report=self.engine_report,
            reused_from=self.reused_from,
        )

    def _place(self, engine: EngineFile) -> WrittenFile | bytes:
        """Rename the engine file the runner wrote beside ``output=`` into place; its bytes when that fails (the
        write to the output then reports why, and the engine is kept in memory)."""
        if self.options.output:
            try:
                return engine.place(self.options.output)
            except OSError:
                pass
        return engine.take()

    def _parse_status(self) -> str | None:
        """The parse row's status now ("running" while it runs), None before it began: for the logger's ``logging``
        route, which holds the parser's errors back until the parse succeeded."""
        for phase in reversed(self.model.phases()):
            if parse_row(phase.name, phase.parent):
                return phase.status
        return None

    def _finish(self, engine: bytes | WrittenFile | None, error: BuildError | None) -> None:
        try:
            self._wind_down(engine, error)
        except Exception as exc:  # the build ends all the same, its engine kept: the failure is a warning
            self._note(f"the build's end was not fully recorded ({type(exc).__name__}: {exc})"[:300])
        with self._condition:
            self._ended_s = self.model.now()
            if isinstance(engine, WrittenFile):
                self._engine, self._written = None, engine
            else:
                self._engine = engine
            if error is not None:
                self.error, self._status = error, FAILED
                self.status_detail = str(error).splitlines()[0]
            elif engine is None:
                reason = self.status_detail or "cancelled"
                if not self._building:  # stopped while queued: say so, not a time it never built for
                    self.status_detail = reason = f"never started: {reason} while queued"
                self.error, self._status = BuildCancelled(f"the build was cancelled: {reason}"), CANCELLED
            else:
                if self.model.cancelling:
                    self.model.uncancel()
                self._status = SUCCEEDED
                self.status_detail = "; ".join(self._end_notes() + self._notes)
            self._end_locked()
        self._settle()

    def _wind_down(self, engine: bytes | WrittenFile | None, error: BuildError | None) -> None:
        """Release the output, close the log file and the timer, end the open phases and let held log lines out."""
        self._release_output()
        if self._log_file is not None:
            problem = self._log_file.close()
            if problem is not None:
                self._log_file_lost(problem)
        if self._timer is not None:
            self._timer.cancel()
        self.model.close_all(PHASE_FAILED if error is not None else FINISHED_EARLY if engine is not None else CANCELLED)
        self.logger.release_held(self._parse_status())  # what the parse held back, now that it has ended

    def _end_notes(self) -> list[str]:
        """A succeeded build's warnings read from its log (error lines, memory skips). An extra: a failure to read
        them is itself the warning, never what keeps the build from ending (its log is outside text)."""
        try:
            errors = unexpected_errors(self.logger.errors(), backend=select_backend()[0])
            warning = f"TensorRT logged {len(errors)} error line(s) although the engine was built; check it: "
            skips = memory_skip_note(self.logger.problems, getattr(self, "resources", None))
            return ([warning + errors[0][:200]] if errors else []) + ([skips] if skips else [])
        except Exception as exc:
            return [f"the build's log could not be read for warnings ({type(exc).__name__}: {exc})"[:300]]

    def __repr__(self) -> str:
        return f"<Build {self.source.label!r} status={self._status}>"

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """A standalone HTML report of the build (:func:`trt_widget.report.to_html`); written to ``path`` if given."""
        from .report import to_html

        if path is not None:
            check_output(path, "path", self)  # before the report is made; written by the same policy
        return to_html(self, path)

    def to_trace(self, path: str | os.PathLike[str] | None = None) -> str:
        """Chrome trace-event JSON of the build (``report.trace.to_trace``); written to ``path`` if given."""
        from .report.trace import to_trace

        if path is not None:
            check_output(path, "path", self)
        return to_trace(self, path)


def _quietly(work: Callable[[Path], object], path: Path) -> None:
    """``work(path)`` on a helper thread, its failure left for the caller's own attempt to report."""
    with contextlib.suppress(Exception):
        work(path)
