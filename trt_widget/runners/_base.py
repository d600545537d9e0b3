"""The contract between a :class:`~trt_widget.Build` and whatever runs its builder (a thread, a process, ...).

``Build`` hands a runner one :class:`RunContext`; the runner builds ``ctx.source`` with ``ctx.options``, feeds
phase events into ``ctx.model`` and log lines into ``ctx.logger``, honours ``ctx.cancel`` (graceful: at the
next step boundary) and ``ctx.force`` (now), and returns the engine bytes (or an :class:`EngineFile`), or None
when cancelled, or raises :class:`~trt_widget.BuildError`. A runner never touches the build object itself.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from .._errors import BuildError
from .._files import ENGINES_SYNCED, WrittenFile, place_file
from .._format import escape_controls
from .._options import BuildOptions
from .._phases import PhaseModel

if TYPE_CHECKING:  # the TensorRT adapter is imported by the builder, not by whoever merely starts one
    from .._engine import CaptureLogger, ModelSource
    from .._monitor import BuildMonitor

# How long a stop waits for TensorRT's next step boundary before the builder process is terminated (docs/stop.md):
# short steps end well within it (a graceful end keeps the warm worker); a long one ends at once either way.
DEFAULT_GRACE_S = 0.1


@dataclass
class RunContext:
    """What a runner may read and write of its build."""

    source: ModelSource
    options: BuildOptions
    model: PhaseModel  # phase events go here
    logger: CaptureLogger  # TensorRT log lines go here
    cancel: threading.Event  # set by stop(): cancel at the next step boundary
    force: threading.Event  # set by a second stop() or by the escalation timer: end the builder now
    shared_clock: bool  # the build's clock is time.perf_counter: a builder process's event times are valid here
    note: Callable[[str], None]  # append a sentence to the build's status detail
    on_pid: Callable[[int | None], None] = field(default=lambda _pid: None)  # the builder process, when one
    # True: the build waits for a slot or a remote worker (status "queued"); False: it builds now (the clock restarts)
    on_queued: Callable[[bool], None] = field(default=lambda _queued: None)
    # what a queued build waits for ("starting a local Ray instance …"), shown while it is queued
    on_waiting: Callable[[str], None] = field(default=lambda _what: None)
    # the size of an engine the build reports but does not hold (a replayed recording's, a watched build's)
    on_engine_size: Callable[[int], None] = field(default=lambda _size: None)
    # the builder process has built nothing yet, or gave its memory back while idle: this build pays one-time
    # costs inside TensorRT's phases (faulting in fresh memory), which a build right after another does not
    on_cold_builder: Callable[[], None] = field(default=lambda: None)
    # the key of each model file the builder read ("": the model file; each external-data location): its stat key,
    # or for a file another user may write the hash of the bytes parsed (``_external_data.vouching_key``); None where
    # it changed while read. The build keeps its engine for reuse, and writes a manifest, only when these are the
    # keys of the files it hashed: a custom runner that never calls this keeps neither
    on_read_files: Callable[[dict[str, str | None]], None] = field(default=lambda _keys: None)

    @property
    def graceful_s(self) -> float:
        """How long a graceful stop may take before the builder is terminated."""
        return self.options.force_after if self.options.force_after is not None else DEFAULT_GRACE_S


@dataclass(frozen=True)
class EngineFile:
    """A finished engine a runner left in a temporary file beside ``output=`` (``_files.part_path``): the build
    renames it into place instead of receiving the bytes and writing them again."""

    path: str
    size: int

    def place(self, output: str | os.PathLike[str]) -> WrittenFile:
        """Make it the ``output`` file (fsync, rename); OSError when it cannot be."""
        return place_file(self.path, output, sync=ENGINES_SYNCED)

    def take(self) -> bytes:
        """The engine's bytes, read into memory; the file is removed."""
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise BuildError(escape_controls(f"the engine file {self.path} could not be read back: {exc}")) from exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        if len(data) != self.size:
            raise BuildError(
                escape_controls(
                    f"the engine file {self.path} is damaged: expected {self.size:,} B, got {len(data):,} B"
                )
            )
        return data


class Runner(Protocol):
    """Runs one build to its end: returns the engine (bytes, or an EngineFile beside ``output=``), None when
    cancelled, or raises BuildError.

    ``name`` is for people (a label); what a build does with a runner follows from its declared fields: ``framed``
    (True: TensorRT's callbacks come from a builder this build drives, and the phase model adds trt_widget's
    framing rows; False: the events come framed already, from a recording, a server or another process) and
    ``local`` (True: this process's TensorRT builds, so its API checks the options at construction)."""

    name: str
    framed: bool
    local: bool

    def run(self, ctx: RunContext) -> bytes | EngineFile | None: ...


class ThreadRunner:
    """The builder on the calling (background) thread of this process: cancel only at step boundaries."""

    name = "thread"
    framed = True
    local = True

    def __init__(self) -> None:
        self.monitor: BuildMonitor | None = None

    def run(self, ctx: RunContext) -> bytes | None:
        from .._engine import build_engine
        from .._external_data import recording_reads
        from .._monitor import BuildMonitor
        from ._inprocess import tensorrt_call

        self.monitor = BuildMonitor(ctx.model, ctx.cancel)
        with tensorrt_call(ctx.cancel.set), recording_reads() as reads:
            engine = build_engine(ctx.source, ctx.options, self.monitor, ctx.logger)
        ctx.on_read_files(reads)
        return None if engine is None else bytes(engine)
