"""Exceptions a build reports on its result (``Build.error`` / ``Build.result()``)."""

from __future__ import annotations

from concurrent.futures import CancelledError


class BuildError(RuntimeError):
    """A build could not produce an engine; the message says why."""


class BuildCancelled(BuildError, CancelledError):
    """The build was cancelled (Stop, KeyboardInterrupt or time budget) before it produced an engine; a
    ``concurrent.futures.CancelledError`` too, as a cancelled Future's ``result()`` raises."""
