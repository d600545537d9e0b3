"""Formatting for people, in one place (mirrors js/src/shared/format.js): durations, sizes, terminals."""

from __future__ import annotations

import os
from typing import TextIO


def fmt_s(seconds: float | None) -> str:
    """A duration for people: "<1 ms", "340 ms", "2.50 s", "3 min 04.2 s"."""
    if seconds is None:
        return ""
    if seconds < 1e-3:
        return "<1 ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)} min {rest:04.1f} s"


def fmt_bytes(size: int) -> str:
    """A size in binary units (B, KiB, MiB, GiB), as the widget shows it."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is an interactive terminal (not a pipe, a file, or a dumb TERM)."""
    if os.environ.get("TERM", "") in ("dumb", "unknown"):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
