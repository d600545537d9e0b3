"""A runner that plays a script of TensorRT monitor callbacks: the build's logic without TensorRT.

httpx's ``MockTransport`` is the model: the front ends, the snapshot pump and the phase model are exercised
through the same :class:`~trt_widget._monitor.BuildMonitor` adapter a real build uses, on a clock the test
moves, in milliseconds instead of a real build's seconds. ``ScriptedRunner.recorded(name)`` plays callback
sequences recorded from real TensorRT for RTX builds (``runners/scripts/*.json``, ``scripts/record_callbacks.py``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Literal

from .._errors import BuildError
from ._base import RunContext


@dataclass(frozen=True)
class Start:
    """``phase_start(name, parent, num_steps)``."""

    name: str
    parent: str | None = None
    num_steps: int = 0


@dataclass(frozen=True)
class Step:
    """``step_complete(name, step)``: the build is cancelled where it returns False, as TensorRT does."""

    name: str
    step: int


@dataclass(frozen=True)
class Finish:
    """``phase_finish(name)``."""

    name: str


@dataclass(frozen=True)
class Log:
    """A line of TensorRT's log (severity 0 INTERNAL_ERROR … 4 VERBOSE)."""

    severity: int
    message: str


@dataclass(frozen=True)
class Wait:
    """Time passing inside TensorRT: the script's clock moves ``seconds`` (a real sleep with no clock)."""

    seconds: float


@dataclass(frozen=True)
class Hold:
    """A long step (TensorRT for RTX's 'Determining refit engines'): waits for ``release``, or for a stop where
    ``until_stop`` (a stop is still honoured only at the next step boundary), at most ``timeout`` s of real time."""

    timeout: float = 60.0
    until_stop: bool = True


@dataclass(frozen=True)
class Fail:
    """TensorRT gives no engine: the build fails with ``message``."""

    message: str


Callback = Start | Step | Finish | Log | Wait | Hold | Fail


class ManualClock:
    """A clock a test moves by hand (``advance``); thread-safe, starts at ``start``."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


@dataclass
class ScriptedRunner:
    """Plays ``script`` through a ``BuildMonitor`` into the build's phase model; returns ``engine`` at its end,
    None where a step returned False (a stop), as a TensorRT build does, closing the phases still open."""

    script: Sequence[Callback]
    clock: ManualClock | None = None  # give the same clock to Build(clock=...) for exact times
    engine: bytes = b"scripted engine"
    release: threading.Event = field(default_factory=threading.Event)  # ends a Hold without a stop
    name: str = "scripted"
    framed: bool = True  # TensorRT's callbacks, as a thread build's: trt_widget adds its framing rows
    local: bool = False  # no TensorRT here: the options are not checked against an installed API
    played: int = 0  # callbacks played so far (a test may wait on it)

    @classmethod
    def recorded(cls, name: str, **kwargs: object) -> ScriptedRunner:
        """A callback sequence recorded from a real TensorRT for RTX build (``runners/scripts/<name>.json``)."""
        text = (resources.files(__package__) / "scripts" / f"{name}.json").read_text("utf-8")
        return cls(script=parse_script(json.loads(text)["callbacks"]), **kwargs)  # type: ignore[arg-type]

    def run(self, ctx: RunContext) -> bytes | None:
        from .._monitor import BuildMonitor

        monitor = BuildMonitor(ctx.model, ctx.cancel)
        open_phases: list[str] = []
        for callback in self.script:
            self.played += 1
            if isinstance(callback, Start):
                monitor.phase_start(callback.name, callback.parent, callback.num_steps)
                open_phases.append(callback.name)
            elif isinstance(callback, Step):
                if not monitor.step_complete(callback.name, callback.step):
                    for phase in reversed(open_phases):  # TensorRT finishes what is open as it unwinds
                        monitor.phase_finish(phase)
                    return None
            elif isinstance(callback, Finish):
                monitor.phase_finish(callback.name)
                if callback.name in open_phases:
                    open_phases.remove(callback.name)
            elif isinstance(callback, Log):
                ctx.logger.log(callback.severity, callback.message)
            elif isinstance(callback, Wait):
                if self.clock is not None:
                    self.clock.advance(callback.seconds)
                else:
                    ctx.cancel.wait(callback.seconds)
            elif isinstance(callback, Hold):
                _wait_any((self.release, ctx.cancel) if callback.until_stop else (self.release,), callback.timeout)
            else:
                raise BuildError(callback.message)
        return self.engine


def _wait_any(events: Iterable[threading.Event], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(events)
    while time.monotonic() < deadline and not any(event.is_set() for event in waiting):
        waiting[0].wait(0.01)


_KINDS: dict[str, Callable[..., Callback]] = {
    "start": Start,
    "step": Step,
    "finish": Finish,
    "log": Log,
    "wait": Wait,
    "hold": Hold,
    "fail": Fail,
}
Kind = Literal["start", "step", "finish", "log", "wait", "hold", "fail"]


def parse_script(items: Sequence[Sequence[object]]) -> list[Callback]:
    """``[["start", name, parent, steps], ["step", name, i], ["wait", 0.01], ...]`` as callbacks."""
    script: list[Callback] = []
    for number, item in enumerate(items, 1):
        if not item or not isinstance(item[0], str) or item[0] not in _KINDS:
            raise ValueError(f"callback {number}: not one of {', '.join(_KINDS)}: {item!r}")
        script.append(_KINDS[item[0]](*item[1:]))
    return script
