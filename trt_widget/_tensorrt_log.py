"""TensorRT's log lines kept whole and routed: ``log_file=`` (every line of a build, VERBOSE included, timestamped
and escaped, bounded in size) and Python ``logging`` (the ``trt_widget.tensorrt`` logger, levels mapped), so that
Polygraphy and torch-TensorRT users route them as they already do."""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import threading
from pathlib import Path
from typing import TextIO, TypedDict

from ._expected import PARSE_FAILED, expected_on_cancel
from ._files import check_output, part_path, place_file
from ._format import escape_controls


class _LogRecordFields(TypedDict):
    severity: str  # one of SEVERITY_NAMES
    message: str
    t: float  # seconds since the build started


class LogRecord(_LogRecordFields, total=False):
    """A kept TensorRT log line (``build.logs``, ``build.problems``); ``expected`` says why it is no problem."""

    expected: str


LOGGER_NAME = "trt_widget.tensorrt"
SEVERITY_NAMES = ("INTERNAL_ERROR", "ERROR", "WARNING", "INFO", "VERBOSE")
# TensorRT's severity (ILogger.Severity, 0..4) -> logging's level
LEVELS = (logging.CRITICAL, logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG)
LOG_FILE_MAX_BYTES = 256 << 20  # a log file stops growing here, with a note saying how much was left out
MAX_MESSAGE = 16384  # characters of a log message kept in a build, its events and a recording (longer: shortened)

tensorrt_logger = logging.getLogger(LOGGER_NAME)
# a library adds no handler of its own: without the user's, logging's last-resort handler would print every
# TensorRT warning on stderr (in a notebook, under the widget)
tensorrt_logger.addHandler(logging.NullHandler())


def to_logging(level: int, message: str, label: str, *, cancelled: bool = False, held_back: bool = False) -> None:
    """Send one TensorRT line to the ``trt_widget.tensorrt`` logger (escaped: a handler may write to a terminal).
    In a build asked to stop, TensorRT's "BuildCanceled" error is expected: it goes at INFO, its ``expected``
    saying why (a server's console printed it at ERROR). ``held_back``: an error of a parse that failed, which
    front ends hold back (``_expected.held_back``): at DEBUG, the build's failure saying what it means."""
    mapped = LEVELS[min(max(level, 0), 4)]
    expected = expected_on_cancel(message) if cancelled and mapped > logging.INFO else None
    if expected is not None:
        mapped = logging.INFO
    if held_back:
        mapped, expected = logging.DEBUG, PARSE_FAILED
    if tensorrt_logger.isEnabledFor(mapped):
        tensorrt_logger.log(
            mapped,
            "%s",
            escape_controls(message),
            extra={"tensorrt_severity": SEVERITY_NAMES[min(max(level, 0), 4)], "build": label, "expected": expected},
        )


class LogFile:
    """``log_file=``: every line written as it comes to a temporary file beside the target, which takes its place
    when the build ends (the output-path policy: the old file or the whole new one). Thread-safe; never raises
    into TensorRT (a write that fails stops the file and says so in :attr:`error`)."""

    def __init__(self, path: str | os.PathLike[str], build: object = None, max_bytes: int | None = None) -> None:
        self.path = check_output(path, "log_file=", build, now=False)  # held from the build's start
        self.max_bytes = LOG_FILE_MAX_BYTES if max_bytes is None else max_bytes
        self.written = 0
        self.lines = 0
        self.left_out = 0
        self.error: str | None = None
        self._lock = threading.Lock()
        self._part: Path | None = None
        self._stream: TextIO | None = None

    def open(self) -> None:
        """Start the file (at build start)."""
        with self._lock:
            self._part = part_path(self.path)
            fd = os.open(self._part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            self._stream = open(  # noqa: SIM115  (closed by close())
                fd, "w", encoding="utf-8", errors="backslashreplace", newline="\n"
            )

    def write(self, level: int, message: str, t: float) -> None:
        """One line: UTC time, build time, severity, the message escaped (one line whatever it holds)."""
        try:
            stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            line = f"{stamp} +{t:9.3f}s {SEVERITY_NAMES[min(max(level, 0), 4)]:<14} {escape_controls(message)}\n"
            with self._lock:
                stream = self._stream
                if stream is None or self.error is not None:
                    return
                size = len(line.encode("utf-8", "backslashreplace"))
                if self.written + size > self.max_bytes:
                    self.left_out += 1
                    return
                stream.write(line)
                self.written += size
                self.lines += 1
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def close(self) -> str | None:
        """Finish the file and put it in place; why it could not be, or None."""
        with self._lock:
            stream = self._stream
            if stream is None:
                return self.error
            self._stream = None
            try:
                if self.left_out:
                    stream.write(
                        f"[trt_widget: the log was cut here at {self.max_bytes:,} bytes: {self.left_out:,} more "
                        "line(s) were not written]\n"
                    )
                stream.close()
                if self._part is not None and self.error is None:
                    place_file(self._part, self.path)
            except Exception as exc:
                self.error = self.error or f"{type(exc).__name__}: {exc}"
            if self.error is not None and self._part is not None:  # cut short: the old file stays as it was
                with contextlib.suppress(OSError):
                    os.unlink(self._part)
            return self.error
