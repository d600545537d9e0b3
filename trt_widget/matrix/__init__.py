"""Many builds at once: ``BuildMatrix`` (local slots or Ray), its widget, table and ``trt-widget matrix``."""

from __future__ import annotations

from ._cli import add_arguments, run
from ._matrix import BuildMatrix, Cell, Executor, ModelsLike, SlotRunner, Slots

__all__ = ["BuildMatrix", "Cell", "Executor", "ModelsLike", "SlotRunner", "Slots", "add_arguments", "run"]
