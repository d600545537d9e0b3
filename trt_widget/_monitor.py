"""The TensorRT adapter: an ``IProgressMonitor`` that feeds a :class:`PhaseModel` (or, in a builder process, its
event stream: any :class:`Progress`) and honours cancel. The thread runner and the builder process share it.

Thin on purpose: the callbacks run on TensorRT's builder thread with the GIL held, so they do the least
possible and never let an exception escape by accident (an escaping exception would cancel the build).
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from typing import Protocol

from ._backend import ProgressMonitorBase
from ._phases import PhaseModel, PhaseRow


class Progress(Protocol):
    """Where the callbacks go, with the TensorRT thread that made each: a :class:`PhaseModel`, or a builder
    process's event stream."""

    def phase_start(self, name: str, parent_name: str | None, num_steps: int, *, thread: int) -> object: ...

    def step_complete(self, name: str, step: int, *, thread: int) -> object: ...

    def phase_finish(self, name: str, *, thread: int) -> object: ...


class BuildMonitor(ProgressMonitorBase):
    """Progress monitor for ``config.progress_monitor``; ``cancel()`` stops the build at the next step. The
    callbacks feed ``progress`` (default: the phase model ``model``)."""

    def __init__(
        self,
        model: PhaseModel | None = None,
        cancel_event: threading.Event | None = None,
        *,
        progress: Progress | None = None,
    ) -> None:
        ProgressMonitorBase.__init__(self)
        self.model = model if model is not None else PhaseModel()
        self._progress: Progress = progress if progress is not None else self.model
        self.cancel_event = cancel_event if cancel_event is not None else threading.Event()
        self.errors: list[str] = []  # tracebacks of exceptions caught inside callbacks
        # called with the thread id of each phase_start (log lines follow their build)
        self.on_thread: Callable[[int], object] | None = None

    def cancel(self) -> None:
        """Make every later ``step_complete`` return False, which cancels the build."""
        self.cancel_event.set()

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
        try:
            ident = threading.get_ident()
            if self.on_thread is not None:
                self.on_thread(ident)
            self._progress.phase_start(phase_name, parent_phase, num_steps, thread=ident)
        except BaseException:
            self._caught()

    def step_complete(self, phase_name: str, step: int) -> bool:
        try:
            self._progress.step_complete(phase_name, step, thread=threading.get_ident())
        except BaseException:
            self._caught()
        return not self.cancel_event.is_set()

    def phase_finish(self, phase_name: str) -> None:
        try:
            self._progress.phase_finish(phase_name, thread=threading.get_ident())
        except BaseException:
            self._caught()

    def _caught(self) -> None:
        if isinstance(sys.exc_info()[1], KeyboardInterrupt):  # Ctrl-C on a main-thread build: cancel it
            self.cancel_event.set()
        if len(self.errors) < 20:
            self.errors.append(traceback.format_exc())

    def timings(self) -> list[PhaseRow]:
        """Per phase instance: id, name, parent (id or None), depth, start_s, duration_s, step, ..."""
        return self.model.timings()
