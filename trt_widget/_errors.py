"""Exceptions a build reports on its result (``Build.error`` / ``Build.result()``)."""

from __future__ import annotations


class BuildError(RuntimeError):
    """A build could not produce an engine; the message says why."""


class BuildCancelled(BuildError):
    """The build was cancelled (Stop, KeyboardInterrupt or time budget) before it produced an engine."""
