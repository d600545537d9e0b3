"""The cluster side of :mod:`trt_widget.ray`: the hub actor (a mailbox per build: events and the Stop
flag) and the Ray task that runs a thread-isolated :class:`~trt_widget.Build` and streams its events there.

Wire format: the task pushes lists of event dicts — those of :mod:`trt_widget._events` (without its ``log``
events), ``{"event": "log", "severity", "message", "t"}`` for every captured log line, ``{"event": "hello",
"pid", "node", "cold"}`` once first (``cold``: this Ray worker process's first build, which pays one-time costs
inside TensorRT's phases), and ``{"event": "sent", "t"}`` closing each push (the remote build time when it
was sent, so the driver can place the events on its own clock).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, TypedDict, cast

if TYPE_CHECKING:
    from ray.actor import ActorHandle

    from .._engine import ModelLike
    from .._json import JSONObject
    from .._options import BuildOptionsDict
    from .._status import BuildStatus
    from .._tensorrt_log import LogRecord


class RayJob(TypedDict):
    """What the task gets: the model (its bytes for a file), its label and the builder options."""

    model: object
    label: str
    options: dict[str, object]


class RayResult(TypedDict):
    """What the task returns: how the build ended and the engine."""

    status: BuildStatus
    detail: str
    error: str | None
    engine: bytes | None


@dataclass
class _Box:
    """One build's mailbox in the hub."""

    events: list[JSONObject] = field(default_factory=list)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    cancel: bool = False
    closed: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # cancel or closed


SEND_INTERVAL_S = 0.02  # the task batches events this long before pushing them to the hub


class Hub:
    """The driver's mailbox actor: per build key, the events the task pushed and the Stop flag (async actor)."""

    def __init__(self) -> None:
        self.boxes: dict[str, _Box] = {}
        self.gone: set[str] = set()  # builds the driver is done with: their late calls get no new box

    def _box(self, key: str) -> _Box:
        box = self.boxes.get(key)
        if box is None:
            box = self.boxes[key] = _Box()
        return box

    async def push(self, key: str, events: list[JSONObject]) -> bool:
        if key in self.gone:
            return True
        box = self._box(key)
        box.events.extend(events)
        box.ready.set()
        return bool(box.cancel)

    async def pull(self, key: str, timeout: float) -> list[JSONObject]:
        box = self._box(key)
        if not box.events and timeout > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(box.ready.wait(), timeout)
        events = box.events
        box.events = []
        if not box.closed:
            box.ready.clear()  # once closed, every pull returns at once
        return events

    async def cancel(self, key: str) -> None:
        box = self._box(key)
        box.cancel = True
        box.changed.set()

    async def wait_cancel(self, key: str, timeout: float) -> bool | None:
        """True once Stop was asked, None when the build is over (``close``), False after ``timeout``."""
        if key in self.gone:
            return None
        box = self._box(key)
        if not box.changed.is_set():
            try:
                await asyncio.wait_for(box.changed.wait(), timeout)
            except asyncio.TimeoutError:
                return False
        return True if box.cancel else None

    async def close(self, key: str) -> None:
        """The task ended: its watcher stops waiting, and a pending pull returns what is left at once."""
        box = self._box(key)
        box.closed = True
        box.changed.set()
        box.ready.set()

    async def forget(self, key: str) -> None:
        self.gone.add(key)
        box = self.boxes.pop(key, None)
        if box is not None:
            box.closed = True
            box.changed.set()
            box.ready.set()


# -- the Ray task ---------------------------------------------------------------------------------------
# the builds this Ray worker process has started: Ray runs later tasks in the same process, whose first TensorRT
# build pays one-time costs inside its phases (next() on a count is atomic: no lock)
_builds_here = itertools.count()


class Sender:
    """In the task: batches event dicts and pushes them to the hub from its own thread, in order.

    No Ray call ever blocks the task's main thread: Ray lends the CPU of a task blocked in ``ray.get`` on its
    main thread to a queued task, which would run more builds at once than the cluster has CPUs."""

    def __init__(self, ray: ModuleType, hub: ActorHandle[Hub], key: str) -> None:
        self.ray, self.hub, self.key = ray, hub, key
        self._lock = threading.Lock()
        self._events: list[JSONObject] = []
        self._wake = threading.Event()
        self._closed = False
        self.first_sent = threading.Event()  # the first push arrived: the hub connection is open
        self.now: Callable[[], float] | None = (
            None  # the remote build's clock, once it exists: each push says when it was sent
        )
        self._thread = threading.Thread(target=self._run, name="trt_widget-ray-sender", daemon=True)
        self._thread.start()

    def put(self, event: JSONObject) -> None:
        with self._lock:
            self._events.append(event)
        self._wake.set()

    def _flush(self) -> None:
        with self._lock:
            batch, self._events = self._events, []
        if batch:
            if self.now is not None:  # lets the driver place the events on its own clock
                batch.append({"event": "sent", "t": self.now()})
            self.ray.get(self.hub.push.remote(self.key, batch))
            self.first_sent.set()

    def close(self, timeout: float = 30.0) -> None:
        """Send what is left and stop the thread."""
        self._closed = True
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            last = self._closed  # read before the flush: a close during it gets one more
            try:
                self._flush()
            except Exception:
                self.first_sent.set()
                return  # the driver is gone: the build's end is reported by the task's return value
            if last:
                return
            if not self._closed:
                threading.Event().wait(SEND_INTERVAL_S)  # batch what comes in meanwhile


def _watch_cancel(ray: ModuleType, hub: ActorHandle[Hub], key: str, on_cancel: Callable[[], object]) -> None:
    """In the task: wait for the driver's Stop (or the end of the build) and pass it on."""
    while True:
        try:
            answer = ray.get(hub.wait_cancel.remote(key, 30.0))
        except Exception:
            return
        if answer is None:
            return
        if answer:
            on_cancel()
            return


def remote_build(key: str, hub: ActorHandle[Hub], job: RayJob) -> RayResult:
    """The Ray task: build ``job`` with a thread-isolated Build, streaming its events to ``hub`` under ``key``."""
    import ray

    from .._build import Build
    from .._events import attach_events

    sender = Sender(ray, hub, key)
    cold = next(_builds_here) == 0
    sender.put({"event": "hello", "pid": os.getpid(), "node": socket.gethostname(), "cold": cold, "t": 0.0})
    sender.first_sent.wait(10.0)  # reports in (no longer queued) and opens the connection before events flow
    # the model as the driver's ModelSource held it; the options by builder_options() name, as the driver checked them
    model = cast("ModelLike", job["model"])
    options: BuildOptionsDict = {**cast("BuildOptionsDict", job["options"]), "isolation": "thread"}  # (not sent)
    build = Build(model, history=False, resources=False, **options)
    sender.now = build.model.now
    hooked = build.logger

    def on_record(record: LogRecord) -> None:  # every captured line, not only the warnings events carry
        sender.put({"event": "log", "severity": record["severity"], "message": record["message"], "t": record["t"]})

    hooked.on_record = on_record

    def forward(event: JSONObject) -> None:
        if event["event"] != "log":
            sender.put(event)

    stream = attach_events(build, forward)
    stopped = threading.Event()

    def stop() -> None:
        stopped.set()
        build.stop("stopped by user")

    threading.Thread(
        target=_watch_cancel, args=(ray, hub, key, stop), name="trt_widget-ray-cancel", daemon=True
    ).start()
    try:
        build.start()
        if stopped.is_set():  # Stop came before the build started
            build.stop("stopped by user")
        build.wait()
        stream.join(10.0)
    finally:
        sender.close()
        hub.close.remote(key)
    error = build.error
    return {
        "status": build.status,
        "detail": build.status_detail,
        "error": str(error) if error is not None and build.status == "failed" else None,
        "engine": build.engine,
    }
