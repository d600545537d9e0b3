"""The messages between a builder process and its parent, as named records (pickled over the two pipes).

Parent → worker on the control pipe: ``Job``, ``Stop``. Worker → parent on the events pipe: ``Hello`` once, then
per job ``Events`` batches of phase/step/log records and one final ``Engine``, ``Cancelled`` or ``Failed``.
Times (``at``) are the worker's ``time.perf_counter()``, valid in the parent when both share that clock.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Job(NamedTuple):
    job_id: int
    job: dict[str, Any]


class Stop(NamedTuple):
    job_id: int


class Hello(NamedTuple):
    pid: int


class PhaseStart(NamedTuple):
    name: str
    parent: str | None
    num_steps: int
    thread: int
    at: float


class Step(NamedTuple):
    name: str
    step: int
    thread: int | None
    at: float


class PhaseFinish(NamedTuple):
    name: str
    thread: int
    at: float


class Log(NamedTuple):
    level: int
    message: str
    at: float


class Built(NamedTuple):
    """TensorRT returned the engine: from here on a stop must not throw it away."""

    at: float


Event = PhaseStart | Step | PhaseFinish | Log | Built


class Events(NamedTuple):
    batch: list[Event]


class Engine(NamedTuple):
    path: str
    size: int


class Cancelled(NamedTuple):
    detail: str


class Failed(NamedTuple):
    message: str


Final = Engine | Cancelled | Failed
