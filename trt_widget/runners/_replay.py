"""Replay a recorded build (``events=`` / ``trt-widget build --json``) into a Build every front end can show.

``Build.from_events(path_or_iterable, speed=None)`` (and ``BuildWidget.from_events``) replays instantly, or at
the recorded pace times ``speed``, so a build that ran on a GPU server or in CI can be inspected in a notebook,
and the front ends can be tested on GPU-sized builds without a GPU. :func:`gpu_shaped_events` makes such a
recording synthetically, in the shape a real TensorRT 10 GPU build has.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .._errors import BuildError
from ._base import RunContext

KINDS = ("build_start", "phase_start", "step", "phase_finish", "log", "build_end")
_SEVERITY = {"VERBOSE": 4, "INFO": 3, "WARNING": 2, "ERROR": 1, "INTERNAL_ERROR": 0}


class RecordingError(ValueError):
    """A recording that cannot be replayed; the message names the line."""


def load_events(source: str | os.PathLike[str] | Iterable[Any]) -> list[dict[str, Any]]:
    """The events of a recording: a JSON-lines file path, or an iterable of JSON lines or event dicts."""
    if isinstance(source, (str, os.PathLike)):
        with open(Path(source).expanduser(), encoding="utf-8") as handle:
            return _parse(handle, str(source))
    return _parse(source, "the recording")


def _parse(lines: Iterable[Any], where: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if isinstance(line, dict):
            event = line
        else:
            text = line.decode() if isinstance(line, bytes) else str(line)
            if not text.strip():
                continue
            try:
                event = json.loads(text)
            except json.JSONDecodeError as exc:
                raise RecordingError(f"{where}, line {number}: not JSON ({exc.msg}): {text[:80]!r}") from None
        if (
            not isinstance(event, dict)
            or event.get("event") not in KINDS
            or not isinstance(event.get("t"), (int, float))
        ):
            raise RecordingError(
                f"{where}, line {number}: not a trt_widget build event (needs 'event' in "
                f"{', '.join(KINDS)} and a time 't'): {str(line)[:80]!r}"
            )
        if event["event"] in ("phase_start", "step", "phase_finish") and not isinstance(event.get("id"), int):
            raise RecordingError(f"{where}, line {number}: a {event['event']} event without an integer 'id'")
        event["_line"] = number
        events.append(event)
    return events


class ReplayClock:
    """The replayed build's clock: the recorded time of the event being replayed."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def apply_event(event: dict[str, Any], model: Any, logger: Any, names: dict[int, str], at: float | None = None) -> None:
    """Feed one recorded or streamed event into a phase model and logger (build_start / build_end are the caller's).

    ``names`` maps the phase ids seen so far to their names (phase ids stand in for TensorRT threads, so
    same-named instances resolve as recorded); ``at`` is the event's clock reading, None for now."""
    kind = event["event"]
    if kind == "phase_start":
        names[event["id"]] = event["name"]
        parent = event.get("parent")
        model.phase_start(
            event["name"],
            names.get(parent) if parent is not None else None,
            int(event.get("num_steps", 0)),
            at=at,
            thread=event["id"],
            parent_thread=parent,
        )
    elif kind == "step":
        model.step_complete(event["name"], int(event["step"]) - 1, thread=event["id"])
    elif kind == "phase_finish":
        model.phase_finish(event["name"], at=at, thread=event["id"])
    elif kind == "log":
        logger.log(_SEVERITY.get(event.get("severity", ""), 2), str(event.get("message", "")), at=at)


class ReplayRunner:
    """Feeds recorded events into the build's phase model and logger; Stop ends the replay."""

    name = "replay"

    def __init__(
        self,
        events: list[dict[str, Any]],
        clock: ReplayClock,
        speed: float | None,
    ) -> None:
        self.events = events
        self.clock = clock
        self.speed = speed

    def run(self, ctx: RunContext) -> bytes | None:
        names: dict[int, str] = {}
        previous_t = 0.0
        for event in self.events:
            t = float(event["t"])
            if self.speed is not None and t > previous_t and ctx.cancel.wait((t - previous_t) / self.speed):
                return None
            if ctx.cancel.is_set():
                return None
            previous_t = max(previous_t, t)
            self.clock.now = t  # events are stamped when they happened, not always in that order
            if event["event"] == "build_end":
                return self._end(event, ctx)
            apply_event(event, ctx.model, ctx.logger, names)
        last = self.events[-1]["_line"] if self.events else 0
        raise BuildError(
            f"the recording ends early, after line {last}, without a build_end event: the tree shows "
            "what was recorded until then"
        )

    def _end(self, event: dict[str, Any], ctx: RunContext) -> bytes | None:
        status = event.get("status")
        size = event.get("engine_bytes")
        ctx.note(
            f"replayed recording; the recorded build ended {status}"
            + (f" with an engine of {size:,} B" if isinstance(size, int) else "")
        )
        if status == "succeeded":
            if isinstance(size, int):
                ctx.on_engine_size(size)
            return b""  # the recording holds no engine bytes
        if status == "cancelled":
            return None
        raise BuildError(str(event.get("error") or event.get("detail") or "the recorded build failed"))


def gpu_shaped_events(
    *, measurements: int = 1100, threads: int = 1, seed: int = 0, seconds: float = 16.0
) -> Iterator[dict[str, Any]]:
    """A synthetic recording shaped like a TensorRT 10 GPU build: depth 8, ~``measurements`` repeated
    "Measuring tactic time" instances (4 steps each) under long "Evaluating tactic times" parents of up to
    153 steps, optionally interleaved as if from several TensorRT threads. Times span ``seconds``."""
    rng = random.Random(seed)
    clock = {"t": 0.0}
    ids = itertools.count()
    tick = seconds / (measurements * 6 + 40)

    def now() -> float:
        clock["t"] += tick * rng.uniform(0.5, 1.5)
        return round(clock["t"], 6)

    def start(name: str, parent: int | None, depth: int, steps: int) -> int:
        ident = next(ids)
        events.append(
            {
                "event": "phase_start",
                "id": ident,
                "name": name,
                "parent": parent,
                "depth": depth,
                "num_steps": steps,
                "t": now(),
            }
        )
        return ident

    def finish(ident: int, name: str, steps: int) -> None:
        events.append({"event": "step", "id": ident, "name": name, "step": steps, "num_steps": steps, "t": now()})
        events.append(
            {
                "event": "phase_finish",
                "id": ident,
                "name": name,
                "status": "done",
                "step": steps,
                "num_steps": steps,
                "duration_s": 0.0,
                "t": now(),
            }
        )

    events: list[dict[str, Any]] = [
        {
            "event": "build_start",
            "model": "synthetic GPU-shaped build",
            "backend": "tensorrt",
            "version": "10.16 (synthetic)",
            "options": {},
            "t": 0.0,
        }
    ]
    chain = [
        ("Building engine", 6),
        ("Building engine from subgraph", 1),
        ("Computing profile costs", 10),
        ("Timing tactics", 3),
        ("Timing graph nodes", 1),
        ("Optimizing layer group", 1),
    ]
    parents: list[int] = []
    for depth, (name, steps) in enumerate(chain):
        parents.append(start(name, parents[-1] if parents else None, depth, steps))
    left = measurements
    groups: list[tuple[int, int]] = []
    while left > 0:
        size = min(left, rng.randint(20, 153))
        groups.append((start("Evaluating tactic times", parents[-1], 6, size), size))
        left -= size
        if len(groups) == threads or left <= 0:  # these run side by side, as on several TensorRT threads
            for step in range(max(size for _, size in groups)):
                for group, count in groups:
                    if step < count:
                        ident = start("Measuring tactic time", group, 7, 4)
                        finish(ident, "Measuring tactic time", 4)
                        events.append(
                            {
                                "event": "step",
                                "id": group,
                                "name": "Evaluating tactic times",
                                "step": step + 1,
                                "num_steps": count,
                                "t": now(),
                            }
                        )
            for group, count in groups:
                events.append(
                    {
                        "event": "phase_finish",
                        "id": group,
                        "name": "Evaluating tactic times",
                        "status": "done",
                        "step": count,
                        "num_steps": count,
                        "duration_s": 0.0,
                        "t": now(),
                    }
                )
            groups = []
    for (name, steps), ident in reversed(list(zip(chain, parents, strict=True))):
        finish(ident, name, steps)
    events.append(
        {
            "event": "build_end",
            "status": "succeeded",
            "detail": "",
            "elapsed_s": clock["t"],
            "engine_bytes": 1_000_000,
            "output": None,
            "error": None,
            "t": now(),
        }
    )
    yield from events
