"""JSON values, typed: what ``json.loads`` returns and ``json.dumps`` takes (events, snapshots, manifests)."""

from __future__ import annotations

from typing import TypeAlias, TypeGuard, Union

JSON: TypeAlias = Union[bool, int, float, str, list["JSON"], dict[str, "JSON"], None]  # noqa: UP007  (recursive)
JSONObject: TypeAlias = dict[str, JSON]


def good_id(value: object) -> TypeGuard[str | int]:
    """A JSON-RPC id MCP and LSP allow: a string, or an integer that is not a bool."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
