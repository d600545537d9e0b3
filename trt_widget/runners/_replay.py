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
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, Protocol, TypeVar, Union

from .._errors import BuildError
from .._files import expand_user
from .._format import escape_controls
from .._json import (
    MAX_FILE_VALUES,
    MAX_NESTING,
    MAX_VALUES,
    JSONObject,
    json_count,
    json_number,
    json_shape,
    json_time,
)
from .._phases import MAX_DEPTH
from .._tensorrt_log import MAX_MESSAGE
from ._base import RunContext

if TYPE_CHECKING:
    from .._engine import CaptureLogger
    from .._phases import PhaseModel

# a recording of events= / --json: a JSON-lines file's path, or an iterable of JSON lines or event dicts
# (an event dict's values: whatever JSON holds, so that dicts typed either way are accepted)
Recording = Union[str, "os.PathLike[str]", Iterable[str | bytes | dict[str, Any]]]
T = TypeVar("T")

MIN_SPEED, MAX_SPEED = 1e-3, 1e6  # a replay's pace: from 1000x slower to a million times faster than recorded
MAX_WAIT_S = 60.0  # the longest pause between two replayed events: a recorded clock may jump by years

# the fields some reader of an event takes (check_event's types, apply_event, the reports); others are kept as given
_READ = frozenset(
    [
        "event",
        "t",
        "id",
        "name",
        "parent",
        "num_steps",
        "step",
        "severity",
        "message",
        "report",
        "reason",
        "model",
        "backend",
        "version",
        "options",
        "status",
        "engine_bytes",
        "detail",
        "error",
        "_line",
    ]
)
KINDS = ("build_start", "phase_start", "step", "phase_finish", "log", "engine_report", "build_end")
_SEVERITY = {"VERBOSE": 4, "INFO": 3, "WARNING": 2, "ERROR": 1, "INTERNAL_ERROR": 0}


class RecordingError(ValueError):
    """A recording that cannot be replayed; the message names the line. ``binary``: the file is not text at all
    (a model, an engine, an archive...), so it is no recording of any kind."""

    def __init__(self, message: str, *, binary: bool = False) -> None:
        super().__init__(message)
        self.binary = binary


MAX_LINE_BYTES = 1 << 20  # one event; TensorRT's longest log lines are a few KB
MAX_EVENTS = 1_000_000  # a real GPU build records tens of thousands
MAX_PHASES = 200_000  # phase instances of one streamed build (server, relay); a real GPU build has a few thousand
MAX_BYTES = 256 << 20  # the whole recording
MAX_RECORDING_BYTES = MAX_BYTES  # its public name: what any reader of a recording reads at most
MAX_NAME = 4096  # characters of a phase name
_END_STATUSES = ("succeeded", "failed", "cancelled")


def check_speed(speed: float | None) -> float | None:
    """``speed`` when a replay can keep that pace (MIN_SPEED..MAX_SPEED, or None: at once), else ValueError."""
    if speed is None:
        return None
    if not json_number(speed) or not MIN_SPEED <= speed <= MAX_SPEED:
        raise ValueError(
            f"speed must be a number from {MIN_SPEED:g} (1000 times slower than recorded) to {MAX_SPEED:g}, "
            f"or None to replay at once; got {speed!r}"
        )
    return float(speed)


def load_events(source: Recording) -> list[JSONObject]:
    """The events of a recording: a JSON-lines file path, or an iterable of JSON lines or event dicts.

    Recordings are untrusted: a file is read line by line (at most ``MAX_LINE_BYTES`` per line, ``MAX_BYTES``
    and ``MAX_EVENTS`` in all), and every event is checked field by field; RecordingError names the line."""
    if isinstance(source, (str, os.PathLike)):
        with open(expand_user(source), "rb") as handle:
            where = escape_controls(os.fspath(source))  # messages name it: one line, whatever the name holds
            return _parse(_file_lines(handle, where), where)
    return _parse(source, "the recording")


def split_builds(events: list[JSONObject]) -> list[list[JSONObject]]:
    """The builds of a recording, in order: each from its ``build_start`` (a recording of ``trt-widget run`` holds
    one per build the command made); events before the first ``build_start`` go with the first build."""
    builds: list[list[JSONObject]] = []
    for event in events:
        if not builds or (event["event"] == "build_start" and any(e["event"] == "build_start" for e in builds[-1])):
            builds.append([])
        builds[-1].append(event)
    return builds


def _file_lines(handle: IO[bytes], where: str) -> Iterator[str]:
    total = 0
    for number in itertools.count(1):
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES:
            raise RecordingError(f"{where}, line {number}: longer than {MAX_LINE_BYTES:,} bytes; not a recording")
        total += len(raw)
        if total > MAX_BYTES:
            raise RecordingError(f"{where}: larger than {MAX_BYTES >> 20} MiB; trt_widget replays smaller recordings")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordingError(
                f"{where}, line {number}: not UTF-8 text (byte {exc.start + 1}); "
                "is it a recording of events= / --json?",
                binary=number == 1,  # not even its first line is text
            ) from None


def _kind_of(value: object) -> str:
    return "null" if value is None else type(value).__name__


def check_event(event: JSONObject, where: str, number: int, depths: dict[int, int]) -> int:
    """Raise RecordingError unless ``event``'s fields have the types its kind needs (names, nesting and values
    bounded, long messages shortened, a field no reader needs dropped past :data:`MAX_VALUES` values): for
    recordings and for what a build server streams alike. The number of JSON values kept."""
    kind = event["event"]

    def maybe(field: str, kind_of: type[T], what: str) -> T | None:
        value = event.get(field)
        return None if value is None else need(field, kind_of, what)

    def need(field: str, kind_of: type[T], what: str) -> T:
        value = event.get(field)
        if not isinstance(value, kind_of) or isinstance(value, bool):
            raise RecordingError(
                f"{where}, line {number}: field {field!r} of a {kind} event must be {what}, got "
                f"{_kind_of(value)} {str(value)[:40]!r}"
            )
        if kind_of is int and not json_count(value):  # ids, steps, sizes; a 401-digit one is not shown
            negative = isinstance(value, int) and value < 0
            raise RecordingError(
                f"{where}, line {number}: field {field!r} of a {kind} event must be from 0 to 2**63, got "
                f"{'a negative number' if negative else 'a larger one'}"
            )
        return value

    count, wide = 0, []
    for field, value in event.items():
        depth, values = json_shape(value, MAX_NESTING, MAX_VALUES - count)
        if depth > MAX_NESTING:  # iterative: its later readers (a report's json.dumps) recurse
            raise RecordingError(
                f"{where}, line {number}: field {field!r} of a {kind} event nests lists or objects more than "
                f"{MAX_NESTING} deep; no build's event does"
            )
        if count + values > MAX_VALUES and field not in _READ:  # a field no reader needs: dropped, not kept
            wide.append(field)
        elif count + values > MAX_VALUES:
            raise RecordingError(
                f"{where}, line {number}: field {field!r} of a {kind} event holds more than {MAX_VALUES:,} JSON "
                "values; no build's event does"
            )
        else:
            count += values
    for field in wide:
        del event[field]

    if not json_time(event["t"]):  # also NaN, the infinities and 401 digits
        raise RecordingError(f"{where}, line {number}: field 't' must be a finite time in seconds")
    if kind in ("phase_start", "step", "phase_finish"):
        ident = need("id", int, "an integer")
        name = need("name", str, "a string")
        if len(name) > MAX_NAME:
            raise RecordingError(
                f"{where}, line {number}: a phase name of {len(name):,} characters (at most {MAX_NAME})"
            )
    if kind == "phase_start":
        parent = maybe("parent", int, "an integer or null")
        maybe("num_steps", int, "an integer")
        depth = depths.get(parent, 0) + 1 if parent is not None else 0
        if depth > MAX_DEPTH:
            raise RecordingError(f"{where}, line {number}: phases nest more than {MAX_DEPTH} deep")
        depths[ident] = depth
    elif kind == "step":
        need("step", int, "an integer")
    elif kind == "log":
        maybe("severity", str, "a string")
        message = maybe("message", str, "a string")
        if message is not None and len(message) > MAX_MESSAGE:
            event["message"] = message[:MAX_MESSAGE] + "…"
    elif kind == "engine_report":
        if event.get("report") is not None and not isinstance(event.get("report"), dict):
            raise RecordingError(f"{where}, line {number}: field 'report' of an engine_report event must be an object")
        maybe("reason", str, "a string")
    elif kind == "build_start":
        for field in ("model", "backend", "version"):
            maybe(field, str, "a string")
        maybe("options", dict, "an object")
    elif kind == "build_end":
        status = need("status", str, "a string")
        if status not in _END_STATUSES:
            raise RecordingError(f"{where}, line {number}: build_end status must be one of {', '.join(_END_STATUSES)}")
        maybe("engine_bytes", int, "an integer or null")
        for field in ("detail", "error"):
            maybe(field, str, "a string or null")
    return count


def _parse(lines: Iterable[object], where: str) -> list[JSONObject]:
    events: list[JSONObject] = []
    depths: dict[int, int] = {}
    total = 0  # JSON values kept
    for number, line in enumerate(lines, start=1):
        event: object
        if isinstance(line, dict):
            event = line
        else:
            try:
                text = line.decode() if isinstance(line, bytes) else str(line)
            except UnicodeDecodeError:
                raise RecordingError(f"{where}, line {number}: not UTF-8 text", binary=number == 1) from None
            if not text.strip():
                continue
            if len(text) > MAX_LINE_BYTES:
                raise RecordingError(f"{where}, line {number}: longer than {MAX_LINE_BYTES:,} characters")
            try:
                event = json.loads(text)
            except json.JSONDecodeError as exc:
                raise RecordingError(f"{where}, line {number}: not JSON ({exc.msg}): {text[:80]!r}") from None
            except RecursionError:
                raise RecordingError(f"{where}, line {number}: JSON nested too deeply") from None
            except ValueError as exc:  # e.g. an integer of more digits than Python converts
                raise RecordingError(f"{where}, line {number}: not a usable JSON value ({exc})") from None
        if not isinstance(event, dict) or event.get("event") not in KINDS or not json_number(event.get("t")):
            raise RecordingError(
                f"{where}, line {number}: not a trt_widget build event (needs 'event' in "
                f"{', '.join(KINDS)} and a time 't'): {str(line)[:80]!r}"
            )
        total += check_event(event, where, number, depths)
        if total > MAX_FILE_VALUES:
            raise RecordingError(f"{where}: more than {MAX_FILE_VALUES:,} JSON values; trt_widget replays smaller ones")
        if len(events) >= MAX_EVENTS:
            raise RecordingError(f"{where}: more than {MAX_EVENTS:,} events; trt_widget replays smaller recordings")
        event["_line"] = number
        events.append(event)
    return events


class ReplayClock:
    """The replayed build's clock: the recorded time of the event being replayed, and, while a paced replay waits
    for its next event, the recorded time that has passed since (so a long silent step ticks as it did live)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._span: tuple[float, float, float, float] | None = None  # from, to (recorded s), wall start, wall s

    def __call__(self) -> float:
        span = self._span  # one read: the runner thread replaces it while front ends read the clock
        if span is None:
            return self.now
        start, end, began, lasts = span
        if lasts <= 0:
            return end
        done = (time.perf_counter() - began) / lasts
        return start + (end - start) * min(max(done, 0.0), 1.0)

    def run_towards(self, start: float, end: float, lasts: float) -> None:
        """Advance from the recorded time ``start`` to ``end`` over ``lasts`` wall seconds."""
        self._span = (start, end, time.perf_counter(), lasts)

    def hold(self, now: float | None = None) -> None:
        """Stop advancing: at ``now``, else where the clock reads at this moment (a replay stopped mid-wait)."""
        reading = self() if now is None else now
        self.now = reading
        self._span = None


class _Clocked(Protocol):
    def restart_clock(self) -> None: ...


class FollowClock:
    """This process's clock, moved forward whenever a received event is ahead of it (a replayed log), so the
    phase model can be fed the server's own event times and elapsed time still runs between events."""

    def __init__(self) -> None:
        self._skew = 0.0
        self._held: float | None = None
        self._lock = threading.Lock()

    def __call__(self) -> float:
        held = self._held
        return held if held is not None else time.perf_counter() + self._skew

    def restart(self, *clocked: _Clocked) -> float:
        """``restart_clock()`` each of ``clocked`` (phase model, logger) at one reading of this clock; returns it."""
        with self._lock:
            self._held = time.perf_counter() + self._skew
            try:
                for thing in clocked:
                    thing.restart_clock()
                return self._held
            finally:
                self._held = None

    def advance_to(self, reading: float) -> None:
        with self._lock:
            now = time.perf_counter() + self._skew
            if reading > now:
                self._skew += reading - now


def _field(event: Mapping[str, object], name: str, kind_of: type[T], default: T | None = None) -> T:
    """``event[name]`` of a checked event (:func:`check_event`), as the type it was checked to have."""
    value = event.get(name, default)
    if not isinstance(value, kind_of):
        raise ValueError(f"field {name!r} of a {event.get('event')} event is {_kind_of(value)}")
    return value


def _time(event: JSONObject) -> float:
    """The event's time (a number, as :func:`load_events` checked)."""
    value = event.get("t")
    if isinstance(value, (int, float)):
        return float(value)
    raise BuildError(f"the recording, line {event.get('_line', '?')}: field 't' is not a time in seconds")


def apply_event(
    event: JSONObject, model: PhaseModel, logger: CaptureLogger, names: dict[int, str], at: float | None = None
) -> None:
    """Feed one recorded or streamed event into a phase model and logger (build_start / build_end are the caller's).

    ``names`` maps the phase ids seen so far to their names (phase ids stand in for TensorRT threads, so
    same-named instances resolve as recorded); ``at`` is the event's clock reading, None for now."""
    kind = event["event"]
    if kind == "phase_start":
        ident, name = _field(event, "id", int), _field(event, "name", str)
        names[ident] = name
        parent = event.get("parent")
        parent_id = parent if isinstance(parent, int) else None
        model.phase_start(
            name,
            names.get(parent_id) if parent_id is not None else None,
            steps if isinstance(steps := event.get("num_steps"), int) else 0,
            at=at,
            thread=ident,
            parent_thread=parent_id,
        )
    elif kind == "step":
        model.step_complete(_field(event, "name", str), _field(event, "step", int) - 1, thread=_field(event, "id", int))
    elif kind == "phase_finish":
        status = event.get("status")
        model.phase_finish(
            _field(event, "name", str),
            at=at,
            thread=_field(event, "id", int),
            ended=status if isinstance(status, str) else None,
        )
    elif kind == "log":
        severity = event.get("severity", "")
        level = _SEVERITY.get(severity, 2) if isinstance(severity, str) else 2
        logger.log(level, str(event.get("message", "")), at=at)
    elif kind == "engine_report":
        from ..engine import apply_report_event

        apply_report_event(event, logger.engine_log)


class ReplayRunner:
    """Feeds recorded events into the build's phase model and logger; Stop ends the replay."""

    name = "replay"
    framed = False  # the recording has the framing rows of the build it recorded
    local = False

    def __init__(
        self,
        events: list[JSONObject],
        clock: ReplayClock,
        speed: float | None,
    ) -> None:
        self.events = events
        self.clock = clock
        self.speed = check_speed(speed)

    def run(self, ctx: RunContext) -> bytes | None:
        names: dict[int, str] = {}
        previous_t = 0.0
        for event in self.events:
            t = _time(event)
            if self.speed is not None and t > previous_t:
                pause = self._pause(t - previous_t)
                self.clock.run_towards(previous_t, t, pause)  # from the latest event's time: stamps may be unordered
                if ctx.cancel.wait(pause):
                    self.clock.hold()  # the time replayed until the stop
                    return None
            if ctx.cancel.is_set():
                self.clock.hold()
                return None
            previous_t = max(previous_t, t)
            self.clock.hold(t)  # events are stamped when they happened, not always in that order
            if event["event"] == "build_end":
                return self._end(event, ctx)
            try:
                apply_event(event, ctx.model, ctx.logger, names)
            except ValueError as exc:  # what the phase model refuses (phases nested deeper than any build)
                raise BuildError(f"the recording, line {event.get('_line', '?')}: {exc}") from None
        last = self.events[-1]["_line"] if self.events else 0
        raise BuildError(
            f"the recording ends early, after line {last}, without a build_end event: the tree shows "
            "what was recorded until then"
        )

    def _pause(self, gap: float) -> float:
        """How long to wait before an event ``gap`` recorded seconds after the last: at the pace asked, at most
        MAX_WAIT_S (a quiet stretch longer than that is replayed as MAX_WAIT_S)."""
        assert self.speed is not None
        return min(gap / self.speed, MAX_WAIT_S)

    def _end(self, event: JSONObject, ctx: RunContext) -> bytes | None:
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
) -> Iterator[JSONObject]:
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

    events: list[JSONObject] = [
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
