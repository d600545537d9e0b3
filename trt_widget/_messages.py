"""The messages a widget's front end sends to Python (anywidget custom messages), typed, and read from the
untrusted ``content`` into those types; ``js/src/shared/messages.js`` declares the same ones
(tests/test_typed_seams.py compares the two).

``BuildWidget`` gets ``BuildMessage``s from ``js/src/build`` (and answers a late Stop with a ``KernelMessage``);
``MatrixWidget`` and ``WatchWidget`` get ``RowsMessage``s from ``js/src/matrix``, where a row's expanded phase
tree sends its own stop/sync naming its row.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, TypedDict


class StopMessage(TypedDict):
    """Stop was clicked (a second one while cancelling asks for a force stop)."""

    type: Literal["stop"]


class SyncMessage(TypedDict):
    """The view missed a row delta (or is new): send the whole list of rows."""

    type: Literal["sync"]


class ViewMessage(TypedDict):
    """A front end rendered a view (once per view)."""

    type: Literal["view"]


class RowStopMessage(TypedDict):
    """Stop row ``build``'s build."""

    type: Literal["stop"]
    build: int


class RowSyncMessage(TypedDict):
    """Row ``build``'s expanded tree missed a delta (its rows come with the next update anyway)."""

    type: Literal["sync"]
    build: int


class StopAllMessage(TypedDict):
    """Stop every build."""

    type: Literal["stop_all"]


class ExpandMessage(TypedDict):
    """Show (``open``) or hide row ``build``'s phase tree."""

    type: Literal["expand"]
    build: int
    open: bool


class StopOutcomeMessage(TypedDict):
    """Python to the build view: what came of a Stop the kernel read only after the build ended (``text``)."""

    type: Literal["stop_outcome"]
    text: str


BuildMessage: TypeAlias = StopMessage | SyncMessage | ViewMessage
KernelMessage: TypeAlias = StopOutcomeMessage  # what BuildWidget sends to its view
RowsMessage: TypeAlias = RowStopMessage | RowSyncMessage | StopAllMessage | ExpandMessage


def build_message(content: object) -> BuildMessage | None:
    """``content`` as a ``BuildMessage``, or None for anything else (it comes from a browser)."""
    kind = content.get("type") if isinstance(content, dict) else None
    if kind == "stop":
        return {"type": "stop"}
    if kind == "sync":
        return {"type": "sync"}
    if kind == "view":
        return {"type": "view"}
    return None


def rows_message(content: object, rows: int) -> RowsMessage | None:
    """``content`` as a ``RowsMessage`` about one of ``rows`` rows, or None for anything else (a row that does
    not exist included). A missing ``open`` means open."""
    if not isinstance(content, dict):
        return None
    kind, index = content.get("type"), content.get("build")
    if kind == "stop_all":
        return {"type": "stop_all"}
    if not isinstance(index, int) or not 0 <= index < rows:
        return None
    if kind == "stop":
        return {"type": "stop", "build": index}
    if kind == "sync":
        return {"type": "sync", "build": index}
    if kind == "expand":
        return {"type": "expand", "build": index, "open": bool(content.get("open", True))}
    return None


__all__ = ["BuildMessage", "RowsMessage", "build_message", "rows_message"]
