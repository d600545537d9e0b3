"""JSON values, typed: what ``json.loads`` returns and ``json.dumps`` takes (events, snapshots, manifests)."""

from __future__ import annotations

from typing import TypeAlias, Union

JSON: TypeAlias = Union[bool, int, float, str, list["JSON"], dict[str, "JSON"], None]  # noqa: UP007  (recursive)
JSONObject: TypeAlias = dict[str, JSON]
