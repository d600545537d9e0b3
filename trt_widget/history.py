"""Timing history (placeholder until the history store lands)."""

from __future__ import annotations

from typing import Any


def attach_history(build: Any, history: Any) -> None:
    """Placeholder: no history is kept yet."""
