"""Following a build from an asyncio event loop (the MCP and LSP front ends): wake-ups when its phases change,
its running phase path and a percentage, and its end as an awaitable — the loop never blocks on the build.

A :class:`Follower` is a thin reader through ``build.subscribe``: the subscriber (on the builder's or relay's
thread) only schedules one wake-up at a time on the loop; the loop then reads the phase model itself, so a
burst of events costs one read, and updates come at most every ``interval`` seconds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, BinaryIO

from ._format import say
from ._subscribe import BuildEvent

if TYPE_CHECKING:
    from types import FrameType

    from ._build import Build
    from ._phases import PhaseRow

PATH_SEPARATOR = " › "


def running_path(build: Build) -> list[PhaseRow]:
    """The rows from the root phase to the innermost running one (empty when none runs)."""
    phase = build.model.innermost_running()
    if phase is None:
        return []
    rows = build.model.rows()
    path: list[PhaseRow] = []
    pid: int | None = phase.id
    while pid is not None and 0 <= pid < len(rows) and rows[pid]:
        path.append(rows[pid])
        pid = rows[pid]["parent"]
        if len(path) > 64:  # a malformed parent chain never loops forever
            break
    return path[::-1]


def path_label(path: list[PhaseRow]) -> str:
    """``Building engine 4/6 › Building engine from subgraph › Determining refit engines 0/1``."""
    return PATH_SEPARATOR.join(
        f"{row['name']} {row['step']}/{row['num_steps']}" if row["num_steps"] > 0 else str(row["name"]) for row in path
    )


def path_fraction(path: Sequence[PhaseRow]) -> float:
    """How far the build is, 0..1, from the steps along the running path: each phase's completed steps plus
    the fraction of the child that runs now (a phase without steps adds nothing)."""
    fraction = 0.0
    for row in reversed(path):
        steps = row["num_steps"]
        fraction = min(max((min(row["step"], steps) + fraction) / steps, 0.0), 1.0) if steps > 0 else 0.0
    return fraction


class Follower:
    """Wake-ups on an asyncio loop for one build: ``async for _ in follower.changes(): ...`` (ends with the
    build). Create it before ``build.start()`` to see every phase; ``close()`` unsubscribes."""

    def __init__(self, build: Build, *, interval: float = 0.1) -> None:
        self.build = build
        self.interval = interval
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._scheduled = False
        self._unsubscribe = build.subscribe(self._on_event)

    def _on_event(self, event: BuildEvent) -> None:  # the builder's (or relay's) thread: schedule, never wait
        if event.kind == "log" or self._scheduled:
            return
        self._scheduled = True
        self._loop.call_soon_threadsafe(self._set)

    def _set(self) -> None:
        self._scheduled = False
        self._wake.set()

    async def changes(self) -> AsyncIterator[None]:
        """Yield after each change (throttled to one per ``interval``) until the build has ended."""
        last: float | None = None
        while not self.build.done():
            await self._wake.wait()
            self._wake.clear()
            if last is not None:
                wait = last + self.interval - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
            if self.build.done():
                return
            last = time.monotonic()
            yield

    def close(self) -> None:
        self._unsubscribe()


async def ended(build: Build) -> str:
    """Wait on the loop until ``build`` has ended and its done callbacks have run; returns its status.
    Cancelling the waiter leaves the build alone (the caller decides whether to stop it)."""
    return str(await asyncio.shield(build.wait_async()))


def take_stdout() -> BinaryIO:
    """A stdio server's protocol channel: the real stdout, moved to a private descriptor, while fd 1 (and
    ``sys.stdout``) point at stderr, so nothing else (a builder process, a native library) writes on the wire."""
    sys.stdout.flush()
    channel = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def end_on_ctrl_c(command: str, says: str, stop: Callable[[], None]) -> None:
    """A stdio server run in the foreground (``trt-widget mcp`` / ``lsp`` started by hand): say on stderr what it
    does (when stderr is a terminal; stdout is the protocol's) and make Ctrl-C end it. Its stdin reader thread
    would hold the exit until EOF (Ctrl-D), so a Ctrl-C stops the builds (``stop``) and exits 130; a second one
    exits at once."""
    pressed: list[bool] = []

    def finish() -> None:
        try:
            stop()
        finally:
            os._exit(130)

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if pressed:
            os._exit(130)
        pressed.append(True)
        say(f"trt-widget {command}: interrupted: stopping its builds, then exiting", sys.stderr)
        threading.Thread(target=finish, name="trt_widget-ctrl-c", daemon=True).start()  # not in the handler

    signal.signal(signal.SIGINT, on_sigint)
    if sys.stderr.isatty():  # once Ctrl-C does what it says
        say(f"trt-widget {command}: {says}; Ctrl-C (or Ctrl-D) ends it", sys.stderr)  # between words
