"""Build status names, in one place, and the callable flag behind ``Build.done``."""

from __future__ import annotations

import logging
import warnings

from ._phases import CANCELLED as CANCELLED  # the same word for a phase and a build

IDLE, RUNNING, CANCELLING = "idle", "running", "cancelling"
QUEUED = "queued"  # started, waiting for a builder slot or a remote worker (a runner says so via ctx.on_queued)
SUCCEEDED, FAILED = "succeeded", "failed"
BUILD_STATUSES = (IDLE, QUEUED, RUNNING, CANCELLING, SUCCEEDED, CANCELLED, FAILED)
LIVE = (RUNNING, CANCELLING)
FINAL = (SUCCEEDED, CANCELLED, FAILED)

log = logging.getLogger("trt_widget")
log.addHandler(logging.NullHandler())


class DoneFlag:
    """``build.done()`` as in ``concurrent.futures.Future``; the old property spelling ``build.done()`` still
    works as a bool for one release, with a DeprecationWarning."""

    __slots__ = ("_value",)

    def __init__(self, value: bool) -> None:
        self._value = value

    def __call__(self) -> bool:
        return self._value

    def __bool__(self) -> bool:
        warnings.warn(
            "Build.done is a method, as in concurrent.futures.Future: call build.done()",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._value

    def __repr__(self) -> str:
        return f"<bound method Build.done() -> {self._value}>"
