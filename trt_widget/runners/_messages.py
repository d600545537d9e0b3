"""The messages between a builder process and its parent, as named records (pickled over the two pipes).

Parent → worker on the control pipe: ``Job``, ``Stop``. Worker → parent on the events pipe: ``Hello`` once, then
per job ``Cold`` (where its memory is fresh), ``Events`` batches of phase/step/log records, ``ReadFiles`` once
built, and one final ``Engine``, ``Cancelled`` or ``Failed``.
Times (``at``) are the worker's ``time.perf_counter()``, valid in the parent when both share that clock.

Where the parent can copy memory to and from the worker (``_memory.py``), two exchanges replace files: the
worker asks for the model bytes with ``ModelAt`` and the parent answers ``ModelReady`` (copied, or written to a
file after all); the worker offers the engine with ``EngineAt`` and the parent answers ``EngineTaken``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, TypedDict

if TYPE_CHECKING:
    from .._options import BuildOptions


class _JobFields(TypedDict):
    kind: str  # the ModelSource's: "path", "bytes" or "callable"
    label: str
    path: str | None  # the model file (a path, or bytes the parent wrote to a file)
    callable: bytes | None  # the network definition function, pickled by cloudpickle
    options: BuildOptions  # without configure= (that one travels pickled)
    configure: bytes | None  # configure=, pickled by cloudpickle
    workdirs: list[str]  # where files for the parent go, the first with room
    sys_path: list[str]  # the parent's import path, appended to the worker's
    directory: str | None  # where the model's external data may lie
    hint: str
    engine_part: str | None  # the temporary file beside the build's output, for the engine
    engine_by_copy: bool  # the parent can copy the engine out of this process's memory


class WorkerJob(_JobFields, total=False):
    """What a builder process needs for one build; ``model_size``: the parent copies that many model bytes in."""

    model_size: int


class Job(NamedTuple):
    job_id: int
    job: WorkerJob


class Stop(NamedTuple):
    job_id: int


class Hello(NamedTuple):
    pid: int


class Cold(NamedTuple):
    """Sent before a job's first event where its build faults in fresh memory (~100,000 page faults, 0.1-0.3 s for
    a ResNet-50, inside TensorRT's phases): the worker's first job, or its first since it gave its heap back."""

    why: str  # "first" or "idle"


class ModelAt(NamedTuple):
    """The worker set aside the job's ``model_size`` bytes at ``address`` for the model."""

    address: int


class ModelReady(NamedTuple):
    """The model is at the address (``path`` empty), or in the file ``path`` when it could not be copied there."""

    job_id: int
    path: str


class EngineAt(NamedTuple):
    """The engine lies at ``address`` in the worker until the parent answers."""

    address: int
    size: int


class EngineTaken(NamedTuple):
    """The parent copied the engine (``taken``), or could not: then the worker writes it to a file."""

    job_id: int
    taken: bool


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


class ReadFiles(NamedTuple):
    """Sent before ``Engine``: the stat key of each model file the build read ("": the model file; each
    external-data location), None where it changed while read (``_external_data.recording_reads``)."""

    keys: dict[str, str | None]


class Engine(NamedTuple):
    path: str
    size: int


class Cancelled(NamedTuple):
    detail: str


class Failed(NamedTuple):
    message: str


Final = Engine | Cancelled | Failed
