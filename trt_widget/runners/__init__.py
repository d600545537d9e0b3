"""Runners: where a build's TensorRT call runs — a thread, a warm worker process, a Ray task, a replay.

Every runner takes the typed :class:`RunContext` from ``Build`` and nothing else of it (see ``_base.py``).
Names are imported on first use: the builder process (``_worker.py``, in this package) starts by importing
this package, and needs none of the parent's side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._options import BuildOptions
    from .._pool import pool, shutdown_workers
    from ._base import EngineFile, RunContext, Runner, ThreadRunner
    from ._inprocess import tensorrt_call
    from ._process import START_PHASE, ProcessRunner, check_transferable
    from ._replay import (
        MAX_PHASES,
        MAX_RECORDING_BYTES,
        MAX_SPEED,
        MIN_SPEED,
        FollowClock,
        Recording,
        RecordingError,
        ReplayClock,
        ReplayRunner,
        apply_event,
        check_event,
        check_speed,
        gpu_shaped_events,
        load_events,
        split_builds,
    )
    from ._scripted import Callback, ManualClock, ScriptedRunner, parse_script

_LAZY = {
    "MAX_PHASES": "._replay",
    "MAX_RECORDING_BYTES": "._replay",
    "MAX_SPEED": "._replay",
    "MIN_SPEED": "._replay",
    "Callback": "._scripted",
    "FollowClock": "._replay",
    "ManualClock": "._scripted",
    "ScriptedRunner": "._scripted",
    "parse_script": "._scripted",
    "START_PHASE": "._process",
    "EngineFile": "._base",
    "ProcessRunner": "._process",
    "Recording": "._replay",
    "RecordingError": "._replay",
    "ReplayClock": "._replay",
    "ReplayRunner": "._replay",
    "RunContext": "._base",
    "Runner": "._base",
    "ThreadRunner": "._base",
    "apply_event": "._replay",
    "check_event": "._replay",
    "check_speed": "._replay",
    "check_transferable": "._process",
    "gpu_shaped_events": "._replay",
    "load_events": "._replay",
    "split_builds": "._replay",
    "pool": "trt_widget._pool",
    "shutdown_workers": "trt_widget._pool",
    "tensorrt_call": "._inprocess",
}

__all__ = [
    "MAX_PHASES",
    "MAX_RECORDING_BYTES",
    "MAX_SPEED",
    "MIN_SPEED",
    "START_PHASE",
    "Callback",
    "EngineFile",
    "FollowClock",
    "ManualClock",
    "ProcessRunner",
    "Recording",
    "RecordingError",
    "ReplayClock",
    "ReplayRunner",
    "RunContext",
    "Runner",
    "ScriptedRunner",
    "ThreadRunner",
    "apply_event",
    "check_event",
    "check_speed",
    "check_transferable",
    "gpu_shaped_events",
    "load_events",
    "parse_script",
    "pool",
    "runner_for",
    "shutdown_workers",
    "split_builds",
    "tensorrt_call",
]


def __getattr__(name: str) -> object:  # every lazy name is typed above, for type checkers
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def runner_for(options: BuildOptions) -> Runner:
    """The runner for ``options.isolation``: a thread beside the caller, or a warm worker process."""
    from ._base import ThreadRunner
    from ._process import ProcessRunner

    return ThreadRunner() if options.isolation == "thread" else ProcessRunner()
