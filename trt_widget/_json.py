"""JSON values, typed: what ``json.loads`` returns and ``json.dumps`` takes (events, snapshots, manifests)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import compress, repeat
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


MAX_SECONDS = 1e12  # a time or duration no build reaches (31,000 years); also past any epoch time


def json_time(value: object) -> TypeGuard[int | float]:
    """A time or duration in seconds read from outside (an event's ``t``, a stored record's): a number within
    ±:data:`MAX_SECONDS`. NaN, the infinities (Python's json reads them) and 401 digits are none: ``fmt_s`` of
    them raised ValueError, ``float()`` OverflowError."""
    return json_number(value) and -MAX_SECONDS < value < MAX_SECONDS


MAX_COUNT = 2**63  # a size or a count no file, engine or build reaches (what a signed 64-bit integer holds)
MAX_NESTING = 32  # lists and objects in one event or option value: a build's deepest (profiles, a report) nest ~8


def json_count(value: object) -> TypeGuard[int]:
    """A size or a count read from outside (a recording, a log, a server's or a command's events): an integer from 0
    up to :data:`MAX_COUNT` (excluded). A larger one (401 digits are valid JSON) is none: ``float()`` of it, in any
    figure shown, raised OverflowError."""
    return json_int(value) and 0 <= value < MAX_COUNT


def count_from_digits(digits: str) -> int | None:
    """The count a run of decimal digits read from a log spells, or None past :data:`MAX_COUNT` (20 digits at
    most are converted: ``int()`` of 4,300 raises)."""
    number = int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 20 else None
    return number if json_count(number) else None


def signed_from_digits(text: str) -> int | None:
    """The integer ``text`` spells (ASCII digits, an optional leading ``-``: a dimension may be -1), or None where
    :func:`count_from_digits` refuses its digits."""
    number = count_from_digits(text[1:] if text.startswith("-") else text)
    return -number if number is not None and text.startswith("-") else number


def count_from_decimal(text: str, scale: int = 1) -> int | None:
    """The count ``text`` ("97" or "97.5", ASCII digits) times ``scale`` spells, rounded (a size a log gives in MiB),
    or None where it is no such number or reaches :data:`MAX_COUNT` (the same bounds as :func:`count_from_digits`)."""
    whole, dot, fraction = text.partition(".")
    number = count_from_digits(whole)
    if number is None or (dot and count_from_digits(fraction) is None):
        return None
    unit = 10 ** len(fraction)  # the fraction, rounded half up in integers: no float of outside text
    scaled = number * scale + (int(fraction) * scale * 2 + unit) // (2 * unit) if dot else number * scale
    return scaled if json_count(scaled) else None


# JSON values in one event (a recording's line, a relayed or served one: 1 MiB each): a real RTX build's detailed
# engine_report holds ~15 values and ~280 bytes a layer (167 values for 11 layers), so ~56,000 in 1 MiB; 349,000
# empty objects fit in it too (~27x its size held)
MAX_VALUES = 100_000
MAX_FILE_VALUES = 8_000_000  # in one file (a recording: 8 an event at its 1,000,000 events; 49 events of a build: 503)

_NESTED = (dict, list)  # JSON's values that hold values


def json_shape(value: JSON, limit: int = MAX_NESTING, values: int = MAX_VALUES) -> tuple[int, int]:
    """How deeply lists and objects nest in ``value`` (0 for a scalar) and how many values it holds (itself, its
    items, its keys' values), counted no further than ``limit`` + 1 and ``values`` + 1: iterative, so a value nested
    as deep as ``json.loads`` takes exhausts no stack here, and one of millions of items stops early. A list's or
    object's scalars are counted at once and only its lists and objects walked, picked at C speed (81 layers of
    100,000 numbers, as a layer JSON may hold, took 10 s to count one at a time here, 8x less so)."""
    deepest, count, todo = 0, 0, [(value, 1)]
    while todo and count <= values:
        item, level = todo.pop()
        count += 1
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level <= limit:
            nested = list(compress(children, map(isinstance, children, repeat(_NESTED))))
            count += len(children) - len(nested)  # its scalars: each one value
            todo.extend(zip(nested, repeat(level + 1)))
    return deepest, count + len(todo)


def json_depth(value: JSON, limit: int = MAX_NESTING) -> int:
    """How deeply lists and objects nest in ``value`` (see :func:`json_shape`)."""
    return json_shape(value, limit)[0]


def check_outside(value: JSON, limit: int = MAX_NESTING, values: int = MAX_VALUES) -> int:
    """The number of values in ``value``, the one rule for outside JSON's shape: ValueError where its lists and
    objects nest more than ``limit`` deep or it holds more than ``values`` values (a 1 MiB line of ``[{},{},...]``
    is 349,000 objects, ~27x its size in memory)."""
    deepest, count = json_shape(value, limit, values)
    if deepest > limit:
        raise ValueError(f"JSON nested more than {limit} deep")
    if count > values:
        raise ValueError(f"JSON of more than {values:,} values")
    return count


def loads_outside(text: str | bytes, limit: int = MAX_NESTING, values: int = MAX_VALUES) -> JSON:
    """``json.loads`` of outside text (a log's field, a recording's line, a file someone sent), the one rule for
    shape (:func:`check_outside`): ValueError where it is no JSON, nests more than ``limit`` deep (RecursionError
    included: ``json.loads`` raised it ~1,000 deep) or holds more than ``values`` values. Bytes must be UTF-8 (not,
    as ``json.loads`` reads them, UTF-16 too: :func:`check_text` would miscount them), and the text is counted by
    :func:`check_text` before it is decoded: a 60 MiB ``[{},{},...]`` was built whole first (3 GB, J22-4)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # UnicodeDecodeError is a ValueError
    check_text(text, limit, values)
    try:
        value: JSON = json.loads(text)
    except RecursionError:
        raise ValueError(f"JSON nested more than {limit} deep") from None
    check_outside(value, limit, values)
    return value


# what :func:`check_text` reads of JSON text: a string (an unended one runs to the end), a scalar, a structural mark
_TOKEN = r'"[^"\\]*(?:\\.[^"\\]*)*"?|[^\s\[\]{},:"]+|[\[\]{},:]'
_TEXT_TOKENS, _BYTE_TOKENS = re.compile(_TOKEN, re.S), re.compile(_TOKEN.encode(), re.S)


def check_text(text: str | bytes, limit: int = MAX_NESTING, values: int = MAX_VALUES) -> None:
    """:func:`check_outside`'s rule on JSON text before it is decoded (an agent server's message of up to 256 MiB:
    ``json.loads`` of ``[{},{},...]`` holds ~36 bytes per byte): ValueError where its lists and objects nest more
    than ``limit`` deep or it holds more than ``values`` values (keys of one object counted once each). Counting
    its marks (C speed) settles most texts; the rest are read token by token, at most ~5 a value, then refused."""
    if isinstance(text, bytes):
        opened, separated = text.count(b"[") + text.count(b"{"), text.count(b",") + text.count(b":")
        marks: Iterator[tuple[str, int]] = (
            (found.group()[:1].decode("latin-1"), found.end()) for found in _BYTE_TOKENS.finditer(text)
        )
    else:
        opened, separated = text.count("[") + text.count("{"), text.count(",") + text.count(":")
        marks = ((found.group()[:1], found.end()) for found in _TEXT_TOKENS.finditer(text))
    if opened <= limit and 1 + opened + separated <= values:  # JSON's values: 1 + list items + object members
        return
    _count_marks(marks, limit, values, first=False)


def check_value(text: str, at: int, limit: int = MAX_NESTING, values: int = MAX_VALUES) -> int:
    """:func:`check_text`'s rule on the one JSON value that begins at ``at`` of ``text`` (a wide value of a file read
    a value at a time, before ``raw_decode`` builds it whole: J22-4): where its text ends, by its marks; ValueError
    where it nests more than ``limit`` deep or holds more than ``values`` values."""
    marks = ((found.group()[:1], found.end()) for found in _TEXT_TOKENS.finditer(text, at))
    end = _count_marks(marks, limit, values, first=True)
    return len(text) if end is None else end


def _count_marks(marks: Iterator[tuple[str, int]], limit: int, values: int, *, first: bool) -> int | None:
    """Count the values JSON text holds from its tokens' first characters (each with where the token ends), as
    :func:`check_text` reads them: ValueError past ``limit`` or ``values``. ``first``: only the first value (where
    it ends is returned); else the whole text (None, or where a mark closes nothing: no JSON, its decoder says so)."""
    count, arrays, empty = 1, list[bool](), False  # arrays: per open list or object, whether it is a list
    for number, (mark, end) in enumerate(marks):
        if first and not arrays and mark not in ("[", "{"):
            return end  # a scalar, a string (or no JSON: its decoder says so)
        if empty and mark != "]":  # a list's first item
            count, empty = count + 1, False
        if mark in ("[", "{"):
            arrays.append(mark == "[")
            empty = mark == "["
            if len(arrays) > limit:
                raise ValueError(f"JSON nested more than {limit} deep")
        elif mark in ("]", "}"):
            if not arrays:
                return end  # no JSON: its decoder says so
            arrays.pop()
            empty = False
            if first and not arrays:
                return end
        elif mark == ":" or (mark == "," and arrays and arrays[-1]):
            count += 1
        if count > values or number > 5 * values + 5:  # more tokens than JSON of ``values`` values has
            raise ValueError(f"JSON of more than {values:,} values")
    return None
