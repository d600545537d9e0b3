"""What trt_widget is compared against: no monitor, a no-op Python monitor, and an ANSI redraw monitor.

``AnsiMonitor`` follows NVIDIA's ``simple_progress_monitor`` sample: it keeps the active phases and redraws
every nested progress bar with ANSI escapes on *every* callback, here into a sink stream (not a terminal).
``plain_build`` is a bare TensorRT build (native logger, optional monitor) that uses none of trt_widget.
"""

from __future__ import annotations

import io
import time
from typing import Any, TextIO

from _common import ROOT  # noqa: F401  (puts the checkout on sys.path)

from trt_widget._backend import trt

_IProgressMonitor: Any = trt().IProgressMonitor


class NoopMonitor(_IProgressMonitor):  # type: ignore[misc, valid-type]
    """The cheapest possible Python monitor: does nothing, never cancels."""

    def __init__(self) -> None:
        _IProgressMonitor.__init__(self)

    def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
        pass

    def step_complete(self, phase_name: str, step: int) -> bool:
        return True

    def phase_finish(self, phase_name: str) -> None:
        pass


class AnsiMonitor(_IProgressMonitor):  # type: ignore[misc, valid-type]
    """Redraws the nested phase bars with ANSI escapes on every callback (NVIDIA sample style)."""

    BAR_WIDTH = 10
    COLUMNS = 200

    def __init__(self, sink: TextIO | None = None) -> None:
        _IProgressMonitor.__init__(self)
        self.sink = sink if sink is not None else io.StringIO()
        self.active: dict[str, dict[str, Any]] = {}
        self.keep_going = True

    def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
        indent = self.active[parent_phase]["indent"] + 1 if parent_phase in self.active else 0
        self.active[phase_name] = {"title": phase_name, "steps": 0, "num_steps": num_steps, "indent": indent}
        self._redraw()

    def step_complete(self, phase_name: str, step: int) -> bool:
        phase = self.active.get(phase_name)
        if phase is not None:
            phase["steps"] = step
        self._redraw()
        return self.keep_going

    def phase_finish(self, phase_name: str) -> None:
        self.active.pop(phase_name, None)
        self._redraw(blank_lines=1)

    def _redraw(self, blank_lines: int = 0) -> None:
        out = self.sink
        out.write("\x1b[0G")
        for phase in self.active.values():
            filled = int(self.BAR_WIDTH * phase["steps"] / float(max(phase["num_steps"], 1)))
            bar = "[" + "=" * filled + "-" * (self.BAR_WIDTH - filled) + "]"
            prefix = f"{' ' * phase['indent']}{bar} {phase['title']}"
            suffix = f"{phase['steps']}/{phase['num_steps']}"
            room = self.COLUMNS - len(suffix) - 2
            if room < len(prefix):
                prefix = prefix[: room - 3] + "..."
            out.write("\x1b[2K" + prefix + " " + suffix + "\n")
        for _ in range(blank_lines):
            out.write("\x1b[2K\n")
        out.write(f"\x1b[{len(self.active) + blank_lines}A")
        out.flush()
        if isinstance(out, io.StringIO) and out.tell() > 1 << 20:  # keep an in-memory sink bounded
            out.seek(0)
            out.truncate()


def plain_build(onnx: bytes, monitor: Any = None) -> tuple[bytes, float]:
    """Parse and build with plain TensorRT (native WARNING logger); returns (engine, wall seconds)."""
    t = trt()
    start = time.perf_counter()
    logger = t.Logger(t.Logger.WARNING)
    builder = t.Builder(logger)
    network = builder.create_network(0)
    parser = t.OnnxParser(network, logger)
    if not parser.parse(onnx):
        raise RuntimeError("baseline: could not parse the ONNX model")
    config = builder.create_builder_config()
    if monitor is not None:
        config.progress_monitor = monitor
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise RuntimeError("baseline: TensorRT returned no engine")
    engine = bytes(memoryview(serialized))
    return engine, time.perf_counter() - start
