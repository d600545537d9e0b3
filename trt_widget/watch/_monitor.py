"""The monitor a watched build runs with: feeds trt_widget's phase model and passes every callback on to the
code's own monitor, if it set one. Either side can cancel. No exception leaves a callback: one from the code's
monitor is handled as TensorRT handles it (in ``step_complete`` it cancels the build, elsewhere it is reported
and the build goes on); a KeyboardInterrupt becomes a cancel at this step boundary.
"""

from __future__ import annotations

import sys
import threading
import traceback
from typing import TYPE_CHECKING

from .._backend import ProgressMonitorBase
from .._phases import PhaseModel
from .._status import log

if TYPE_CHECKING:
    from .._tensorrt_types import IProgressMonitor


class WatchMonitor(ProgressMonitorBase):
    """``IProgressMonitor`` of a watched build; ``theirs`` is the monitor the code had set (or None)."""

    def __init__(
        self, model: PhaseModel, cancel_event: threading.Event, theirs: IProgressMonitor | None = None
    ) -> None:
        ProgressMonitorBase.__init__(self)
        self.model = model
        self.cancel_event = cancel_event
        self.theirs = theirs
        self.cancelled_by_theirs = False  # their step_complete returned False (or raised)
        self.interrupted = False  # Ctrl-C: a KeyboardInterrupt inside a callback, or the watch's SIGINT handler
        self.errors: list[str] = []  # tracebacks caught inside callbacks (ours and theirs), capped

    def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
        try:
            self.model.phase_start(phase_name, parent_phase, num_steps, thread=threading.get_ident())
        except BaseException:
            self._caught("trt_widget")
        if self.theirs is not None:
            try:
                self.theirs.phase_start(phase_name, parent_phase, num_steps)
            except BaseException:
                self._caught("your progress monitor's phase_start")

    def step_complete(self, phase_name: str, step: int) -> bool:
        try:
            self.model.step_complete(phase_name, step, thread=threading.get_ident())
        except BaseException:
            self._caught("trt_widget")
        if self.theirs is not None:
            try:
                if not self.theirs.step_complete(phase_name, step):
                    self.cancelled_by_theirs = True
            except BaseException:  # TensorRT cancels the build when step_complete raises: so do we
                self.cancelled_by_theirs = True
                self._caught("your progress monitor's step_complete")
        return not (self.cancel_event.is_set() or self.cancelled_by_theirs or self.interrupted)

    def phase_finish(self, phase_name: str) -> None:
        try:
            self.model.phase_finish(phase_name, thread=threading.get_ident())
        except BaseException:
            self._caught("trt_widget")
        if self.theirs is not None:
            try:
                self.theirs.phase_finish(phase_name)
            except BaseException:
                self._caught("your progress monitor's phase_finish")

    def _caught(self, where: str) -> None:
        try:
            if isinstance(sys.exc_info()[1], KeyboardInterrupt):  # Ctrl-C while TensorRT called back: cancel
                self.interrupted = True
                self.cancel_event.set()
                return
            if len(self.errors) < 20:
                self.errors.append(f"in {where}: {traceback.format_exc()}")
                log.warning("an exception in %s during a watched build:\n%s", where, traceback.format_exc())
        except BaseException:  # even a second interrupt here must not leave the callback
            self.cancel_event.set()
