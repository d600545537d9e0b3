"""Build status names, in one place, and the package's logger."""

from __future__ import annotations

import logging
from typing import Final, Literal, TypedDict

from ._phases import CANCELLED as CANCELLED  # the same word for a phase and a build

BuildStatus = Literal["idle", "queued", "running", "cancelling", "succeeded", "cancelled", "failed"]
IDLE: Final = "idle"
RUNNING: Final = "running"
CANCELLING: Final = "cancelling"
QUEUED: Final = "queued"  # started, waiting for a builder slot or a remote worker (a runner says so via ctx.on_queued)
SUCCEEDED: Final = "succeeded"
FAILED: Final = "failed"
BUILD_STATUSES = (IDLE, QUEUED, RUNNING, CANCELLING, SUCCEEDED, CANCELLED, FAILED)
LIVE = (RUNNING, CANCELLING)
FinalStatus = Literal["succeeded", "cancelled", "failed"]
FINAL: tuple[FinalStatus, ...] = (SUCCEEDED, CANCELLED, FAILED)
INTERRUPTED: Final = "interrupted (Ctrl-C)"  # a stop's reason when SIGINT asked it (a terminal's Ctrl-C)


class CancelInfo(TypedDict):
    """A stopped build's ``cancel_info``: the phase running when Stop was asked, and when (build time)."""

    phase: str
    requested_at_s: float


log = logging.getLogger("trt_widget")
log.addHandler(logging.NullHandler())
