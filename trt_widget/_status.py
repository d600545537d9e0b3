"""Build status names, in one place, and the package's logger."""

from __future__ import annotations

import logging

from ._phases import CANCELLED as CANCELLED  # the same word for a phase and a build

IDLE, RUNNING, CANCELLING = "idle", "running", "cancelling"
QUEUED = "queued"  # started, waiting for a builder slot or a remote worker (a runner says so via ctx.on_queued)
SUCCEEDED, FAILED = "succeeded", "failed"
BUILD_STATUSES = (IDLE, QUEUED, RUNNING, CANCELLING, SUCCEEDED, CANCELLED, FAILED)
LIVE = (RUNNING, CANCELLING)
FINAL = (SUCCEEDED, CANCELLED, FAILED)

log = logging.getLogger("trt_widget")
log.addHandler(logging.NullHandler())
