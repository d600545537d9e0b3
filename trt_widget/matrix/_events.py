"""One JSON event stream for a whole build matrix: every build's events (``trt_widget._events``), each with
``"build": id`` first, and ``"variant"`` in its ``build_start``; one writer lock, so lines never interleave."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._event_sinks import open_sink
from .._events import attach_events

if TYPE_CHECKING:
    from .._event_sinks import Sink
    from .._json import JSONObject
    from ._matrix import BuildMatrix, Cell


class MatrixEvents:
    """The matrix's event streams (one per build) feeding one sink; the sink closes after the last build_end."""

    def __init__(self, matrix: BuildMatrix, sink: Sink) -> None:
        self._write, self._close = open_sink(sink)
        self._lock = threading.Lock()
        self._open = len(matrix.cells)
        self.streams = [attach_events(cell.build, self._forward(cell)) for cell in matrix.cells]

    def _forward(self, cell: Cell) -> Callable[[JSONObject], None]:
        def write(event: JSONObject) -> None:
            event = {"build": cell.id, **event}
            if event["event"] == "build_start":
                event["variant"] = cell.variant
                event["matrix_model"] = cell.model
            with self._lock:
                try:
                    self._write(event)
                finally:
                    if event["event"] == "build_end":
                        self._open -= 1
                        if self._open == 0 and self._close is not None:
                            self._close()

        return write

    def join(self, timeout: float | None = None) -> bool:
        """Wait until every build's ``build_end`` was written; True if so within ``timeout`` (each stream's)."""
        return all(stream.join(timeout) for stream in self.streams)


def attach_matrix_events(matrix: BuildMatrix, sink: Sink) -> MatrixEvents:
    """Stream every build of ``matrix`` to ``sink`` (a path, a text file or a callable)."""
    return MatrixEvents(matrix, sink)
