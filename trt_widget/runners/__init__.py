"""Runners: where a build's TensorRT call runs — a thread, a warm worker process, a Ray task, a replay.

Every runner takes the typed :class:`RunContext` from ``Build`` and nothing else of it (see ``_base.py``).
"""

from __future__ import annotations

from .._options import BuildOptions
from ._base import EngineFile, RunContext, Runner, ThreadRunner
from ._process import START_PHASE, ProcessRunner, check_transferable, pool, shutdown_workers
from ._replay import (
    Recording,
    RecordingError,
    ReplayClock,
    ReplayRunner,
    apply_event,
    check_event,
    gpu_shaped_events,
    load_events,
)

__all__ = [
    "START_PHASE",
    "EngineFile",
    "ProcessRunner",
    "Recording",
    "RecordingError",
    "ReplayClock",
    "ReplayRunner",
    "RunContext",
    "Runner",
    "ThreadRunner",
    "apply_event",
    "check_event",
    "check_transferable",
    "gpu_shaped_events",
    "load_events",
    "pool",
    "runner_for",
    "shutdown_workers",
]


def runner_for(options: BuildOptions) -> Runner:
    """The runner for ``options.isolation``: a thread beside the caller, or a warm worker process."""
    return ThreadRunner() if options.isolation == "thread" else ProcessRunner()
