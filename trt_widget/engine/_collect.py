"""Keeping the engine's record from a build's log stream as it passes: the layer record and the memory lines,
nothing else (a VERBOSE build logs thousands of lines; these are a few)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, cast

from ._layer import JSON
from ._model import EngineReport

if TYPE_CHECKING:
    from .._events import EngineReportEvent

# The first characters and prefixes of the lines kept (checked on every log line TensorRT sends: cheap first)
_FIRST = frozenset("LETM[")
_PREFIXES = (
    "Layers:",
    "Engine Layer Information:",
    "Total Weights Memory",
    "Total Activation Memory",
    "Total Host Persistent Memory",
    "Total Device Persistent Memory",
    "Total Scratch Memory",
    "Max Scratch Memory",
    "[MemUsageStats] Peak memory usage",
)
MAX_RECORD_CHARS = 256 << 20  # a layer record longer than this is cut (a hostile model's names); the cut is noted


def engine_line(message: str) -> bool:
    """True for the log lines an engine report is read from (the router's pre-filter lets them through)."""
    return message[:1] in _FIRST and message.startswith(_PREFIXES)


class EngineLog:
    """The layer record and memory lines of one build, fed from its logger; :meth:`report` reads them once."""

    def __init__(self) -> None:
        self._record = ""
        self._memory: list[str] = []
        self._cut = 0
        self._lock = threading.Lock()
        self._report: EngineReport | None = None
        self._parsed = False

    def set_report(self, report: EngineReport | None) -> None:
        """Use ``report`` as it is (a replay or a remote build: the recording's ``engine_report`` event)."""
        with self._lock:
            self._report, self._parsed, self._record = report, True, "recorded" if report is not None else ""

    def feed(self, message: str) -> None:
        """Keep ``message`` (one of :func:`engine_line`'s): the latest record replaces an earlier one."""
        if message.startswith(("Layers:", "Engine Layer Information:")):
            self._cut = max(0, len(message) - MAX_RECORD_CHARS)
            self._record = message[:MAX_RECORD_CHARS]
            self._parsed = False
        elif len(self._memory) < 200:
            self._memory.append(message)
            self._parsed = False

    @property
    def has_record(self) -> bool:
        return bool(self._record)

    def report(self, source: str) -> EngineReport | None:
        """The report of what was fed (None without a layer record), parsed once."""
        with self._lock:
            if not self._parsed:
                from ._parse import report_from_text

                text = self._record + "\n" + "\n".join(self._memory)
                parsed = report_from_text(text, source) if self._record else None
                report = EngineReport.of(parsed) if parsed is not None else None
                if report is not None and self._cut:
                    note = f"the layer record was cut to {MAX_RECORD_CHARS:,} of {MAX_RECORD_CHARS + self._cut:,} chars"
                    report = EngineReport(
                        report.layers,
                        report.memory,
                        report.source,
                        report.form,
                        report.total_layers,
                        report.bindings,
                        (*report.notes, note),
                    )
                self._report, self._parsed = report, True
            return self._report


class _BuildLike(Protocol):
    """What :func:`report_of` reads of a ``Build``."""

    @property
    def status(self) -> str: ...

    @property
    def engine_size(self) -> int | None: ...


def report_of(
    build: _BuildLike, log: EngineLog | None, options: object, source: str
) -> tuple[EngineReport | None, str]:
    """A finished build's report and, where there is none, why: ``(report, "")`` or ``(None, reason)``."""
    if not getattr(options, "engine_report", True):
        return None, "engine_report=False: the layer record was not kept"
    if build.status != "succeeded":
        return None, f"the build {build.status if build.status != 'idle' else 'has not started'}: no engine"
    report = log.report(source) if log is not None else None
    if report is None:
        verbosity = getattr(options, "profiling_verbosity", None)
        if verbosity is not None and str(verbosity).lower() not in ("detailed",):
            return None, f"profiling_verbosity={verbosity!r}: TensorRT prints the layer record only with 'detailed'"
        return None, "TensorRT printed no layer record in this build's log"
    size = build.engine_size
    memory = dict(report.memory)
    if memory.get("engine_size") is None and size:
        memory["engine_size"] = size
    notes = report.notes
    verbosity = getattr(options, "profiling_verbosity", None)
    if verbosity is not None and str(verbosity).lower() != "detailed":
        notes = (
            *notes,
            f"profiling_verbosity={verbosity!r}: TensorRT printed the coarse record; 'detailed' lists kernels",
        )
    report = EngineReport(
        report.layers, memory, report.source, report.form, report.total_layers, report.bindings, notes
    )
    return report, ""


EVENT_MAX_BYTES = 900_000  # an event is one line of a recording, and a recording's line is at most 1 MiB


class _EndedBuild(Protocol):
    @property
    def status(self) -> str: ...

    @property
    def engine_report(self) -> EngineReport | None: ...

    @property
    def engine_report_reason(self) -> str: ...

    @property
    def elapsed_s(self) -> float: ...


def report_event(build: _EndedBuild) -> EngineReportEvent | None:
    """The ``engine_report`` event of an ended build (None unless it succeeded): the report, bounded, or null with
    the reason."""
    if build.status != "succeeded":
        return None
    try:  # an extra: a report that cannot be read (a model's names are outside text) never drops build_end
        report, reason = build.engine_report, build.engine_report_reason
        body = report.to_dict(EVENT_MAX_BYTES) if report is not None else None
    except Exception as exc:
        body, reason = None, f"the engine report could not be read ({type(exc).__name__}: {exc})"[:300]
    return {"event": "engine_report", "report": body, "reason": reason, "t": build.elapsed_s}


def apply_report_event(event: Mapping[str, object], log: EngineLog | None) -> None:
    """Give a replayed or remote build the report its ``engine_report`` event carries."""
    if log is None:
        return
    report = event.get("report")
    try:
        log.set_report(EngineReport.from_json(cast("dict[str, JSON]", report)) if isinstance(report, dict) else None)
    except ValueError:
        log.set_report(None)
