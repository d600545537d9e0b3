"""TensorRT's own Builder build methods and ``threading.Thread.start``, recorded when the watch tests are imported
(before any watch opens), so "no patch left behind" compares against them by identity, never against whatever
the class holds at the time of the check."""

from __future__ import annotations

import threading
from typing import Any

import trt_widget
from trt_widget.watch import METHODS, is_patched

assert not is_patched(), "the watch tests must be imported before any watch opens"
_BUILDER: Any = trt_widget.trt.Builder
TRUE_ORIGINALS: dict[str, Any] = {name: _BUILDER.__dict__[name] for name in METHODS if name in _BUILDER.__dict__}
THREAD_START = threading.Thread.start
_PARSER: Any = trt_widget.trt.OnnxParser
PARSER_ORIGINALS: dict[str, Any] = {name: _PARSER.__dict__[name] for name in ("__init__", "parse_from_file", "parse")}


def left_behind() -> list[str]:
    """What is not TensorRT's (or threading's) own right now: method names, and ``Thread.start``."""
    left = [name for name, original in TRUE_ORIGINALS.items() if _BUILDER.__dict__.get(name) is not original]
    left += [f"OnnxParser.{name}" for name, was in PARSER_ORIGINALS.items() if _PARSER.__dict__.get(name) is not was]
    if threading.Thread.start is not THREAD_START:
        left.append("Thread.start")
    return left


def unpatched() -> bool:
    """No watch's wrapper in place: the bookkeeping says so and every method is the one recorded at import."""
    return not is_patched() and not left_behind()
