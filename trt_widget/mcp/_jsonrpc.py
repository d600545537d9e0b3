"""What a JSON-RPC message's raw members say before the MCP SDK reads it (it drops what it cannot read)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic_core import from_json

from .._json import good_id

BAD_ID = "Invalid Request: a request's id must be a string or an integer"  # the answer to one (-32600)


def bad_request_id(fields: Mapping[str, object]) -> bool:
    """Whether a JSON-RPC object is a request (a ``method``) whose ``id`` MCP cannot answer: not a string, not an
    integer (a bool is not one). Its SDK reads such a request as a notification, which nobody answers."""
    if not isinstance(fields.get("method"), str) or "id" not in fields:
        return False
    return not good_id(fields["id"])


def json_members(body: bytes | str) -> Mapping[str, object]:
    """The top-level members of a body that is a JSON object, read as the SDK reads it; else none."""
    try:
        value = from_json(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
