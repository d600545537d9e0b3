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

from .._monitor import BuildMonitor
from .._phases import PhaseModel
from .._status import log

if TYPE_CHECKING:
    from .._tensorrt_types import IProgressMonitor


class WatchMonitor(BuildMonitor):
    """``IProgressMonitor`` of a watched build: the one adapter (:class:`BuildMonitor`) feeding the phase model,
    then the code's own monitor ``theirs`` (or None) with TensorRT's rules for it."""

    def __init__(
        self, model: PhaseModel, cancel_event: threading.Event, theirs: IProgressMonitor | None = None
    ) -> None:
        BuildMonitor.__init__(self, model, cancel_event)
        self.theirs = theirs
        self.cancelled_by_theirs = False  # their step_complete returned False (or raised)
        self.interrupted = False  # Ctrl-C: a KeyboardInterrupt inside a callback, or the watch's SIGINT handler

    def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
        BuildMonitor.phase_start(self, phase_name, parent_phase, num_steps)
        if self.theirs is not None:
            try:
                self.theirs.phase_start(phase_name, parent_phase, num_steps)
            except BaseException:
                self._caught("your progress monitor's phase_start")

    def step_complete(self, phase_name: str, step: int) -> bool:
        BuildMonitor.step_complete(self, phase_name, step)
        if self.theirs is not None:
            try:
                if not self.theirs.step_complete(phase_name, step):
                    self.cancelled_by_theirs = True
            except BaseException:  # TensorRT cancels the build when step_complete raises: so do we
                self.cancelled_by_theirs = True
                self._caught("your progress monitor's step_complete")
        return not (self.cancel_event.is_set() or self.cancelled_by_theirs or self.interrupted)

    def phase_finish(self, phase_name: str) -> None:
        BuildMonitor.phase_finish(self, phase_name)
        if self.theirs is not None:
            try:
                self.theirs.phase_finish(phase_name)
            except BaseException:
                self._caught("your progress monitor's phase_finish")

    def _caught(self, where: str = "trt_widget") -> None:
        """Ours or theirs raised: a KeyboardInterrupt cancels at this step boundary; anything else is kept and
        logged (the build goes on, unless it was their step_complete)."""
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
