"""JSON values, typed: what ``json.loads`` returns and ``json.dumps`` takes (events, snapshots, manifests)."""

from __future__ import annotations

from typing import TypeAlias, TypeGuard, Union

JSON: TypeAlias = Union[bool, int, float, str, list["JSON"], dict[str, "JSON"], None]  # noqa: UP007  (recursive)
JSONObject: TypeAlias = dict[str, JSON]


def good_id(value: object) -> TypeGuard[str | int]:
    """A JSON-RPC id MCP and LSP allow: a string, or an integer that is not a bool."""
    return isinstance(value, str) or json_int(value)


def json_int(value: object) -> TypeGuard[int]:
    """An integer that is not a bool: Python's ``True`` is an ``int``, JSON's ``true`` is no count."""
    return isinstance(value, int) and not isinstance(value, bool)


def json_number(value: object) -> TypeGuard[int | float]:
    """An integer or a float that is not a bool (see :func:`json_int`)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
