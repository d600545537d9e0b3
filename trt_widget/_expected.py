"""TensorRT log lines that are true but expected: what they mean, so front ends show them calmly, not in red.

Pure functions over message text; nothing here imports TensorRT.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._phases import PhaseRow
    from ._tensorrt_log import LogRecord

PARSE_PHASE = "Reading and parsing the model"  # the row the ONNX parse runs in (``_engine.BEFORE_PHASES``)
# what an error the ONNX parser logged means once the parse failed (held back: the build's failure says it)
PARSE_FAILED = "the ONNX parser's own words for a model it could not parse; the build's failure says what it means"

# trt_widget's one note when timing_cache= is given to TensorRT for RTX, and what it means
RTX_TIMING_CACHE = "timing_cache: TensorRT for RTX does not use a timing cache"
_NO_TIMING_CACHE = (
    "TensorRT for RTX does not tune tactics, so a timing cache cannot speed its builds (NVIDIA deprecated its "
    "timing-cache calls there); the option is for NVIDIA TensorRT, and this build is unaffected"
)

# (fragment, when it applies, what it means)
_EXPECTED: list[tuple[str, str, str]] = [
    ("BuildCanceled", "cancelled", "the build was cancelled, as asked"),
    ("Error Code 7", "cancelled", "the build was cancelled, as asked"),
    (
        "CUDA driver version is insufficient",
        "rtx",
        "TensorRT for RTX found no usable GPU driver: expected on a machine without an NVIDIA GPU; CPU builds are "
        "unaffected",
    ),
    ("timing cache", "rtx", _NO_TIMING_CACHE),
    (RTX_TIMING_CACHE, "rtx", _NO_TIMING_CACHE),
    (
        "due to insufficient memory on requested size",
        "any",
        "TensorRT skipped a tactic for lack of free GPU memory; the build's status sums these up in one line",
    ),
    (
        "due to insuficient memory on requested size",
        "any",
        "TensorRT skipped a tactic for lack of free GPU memory; the build's status sums these up in one line",
    ),
    (
        "Device memory is insufficient to use tactic",
        "any",
        "TensorRT skipped a tactic for lack of free GPU memory; the build's status sums these up in one line",
    ),
]


def expected_reason(message: str, *, cancelled: bool, backend: str) -> str | None:
    """Why ``message`` is expected in this build (cancelled by the user? which backend?), or None."""
    ours = message.startswith("timing_cache: ")  # trt_widget's own notes: expected only where a rule names them
    for fragment, when, reason in _EXPECTED:
        if ours != fragment.startswith("timing_cache: "):
            continue
        if fragment in message and ((when == "cancelled" and cancelled) or when in (backend, "any")):
            return reason
    return None


def expected_on_cancel(message: str) -> str | None:
    """Why ``message`` is expected of a build that was asked to stop (TensorRT's "BuildCanceled" error), or None."""
    for fragment, when, reason in _EXPECTED:
        if when == "cancelled" and fragment in message:
            return reason
    return None


def annotate(records: list[LogRecord], *, cancelled: bool, backend: str) -> list[LogRecord]:
    """Copies of log records, each expected one with ``"expected": reason``."""
    out: list[LogRecord] = []
    for record in records:
        reason = expected_reason(str(record.get("message", "")), cancelled=cancelled, backend=backend)
        copy = record.copy()
        if reason:
            copy["expected"] = reason
        out.append(copy)
    return out


_NOISE = ("CUDA driver version is insufficient",)  # logged on every RTX run without a GPU; never a cause


def significant(messages: list[str]) -> list[str]:
    """Lines that can explain a failure: not known noise, not the ONNX parser's echo of its own error."""
    return [m for m in messages if not any(n in m for n in _NOISE) and not m.startswith("ModelImporter.cpp")]


def unexpected_errors(messages: list[str], *, backend: str) -> list[str]:
    """The error lines of a build that succeeded that deserve a look: significant and not expected."""
    return [m for m in significant(messages) if expected_reason(m, cancelled=False, backend=backend) is None]


def held_back(severity: str, parse_status: str | None, *, verbose: bool) -> bool:
    """Whether front ends hold back a log line: an ERROR the ONNX parser logged while the model was parsed, while
    that parse runs (it may yet succeed: the line is news then) or after it failed (the build's failure message
    says what it means, friendlier). ``verbose`` shows them; ``build.logs`` always keeps them."""
    return not verbose and "ERROR" in severity and parse_status in ("running", "failed")


def parse_row(name: str, parent: int | None) -> bool:
    """Whether a phase row is the one the ONNX parse runs in (the top-level row of that name): the one row whose
    status :func:`held_back` asks about, for every front end alike."""
    return name == PARSE_PHASE and parent is None


def shown_logs(records: Iterable[LogRecord], rows: Iterable[PhaseRow], *, verbose: bool) -> list[LogRecord]:
    """The log records a front end shows: those :func:`held_back` holds dropped, by the parse row they fell in."""
    if verbose:  # nothing is held back: no row to look up (the snapshot pump calls this often)
        return list(records)
    parses = [r for r in rows if parse_row(r["name"], r["parent"])]
    out: list[LogRecord] = []
    for record in records:
        t = record.get("t")
        status = None
        if isinstance(t, int | float):
            for row in parses:
                end = row["end_s"]
                if row["start_s"] <= t and (end is None or t <= end):
                    status = row["status"]
        if not held_back(str(record.get("severity", "")), status, verbose=verbose):
            out.append(record)
    return out
