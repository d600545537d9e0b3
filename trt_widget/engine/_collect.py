"""Keeping the engine's record from a build's log stream as it passes: the layer record and the memory lines,
nothing else (a VERBOSE build logs thousands of lines; these are a few)."""

from __future__ import annotations

import threading

from ._model import EngineReport

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
