"""``json_int`` and ``json_number`` (trt_widget/_json.py): the one test of "an int (or a number) but not a bool"
that options, manifests, recordings, engine reports and JSON-RPC ids share."""

from __future__ import annotations

import pytest

from trt_widget._json import good_id, json_int, json_number


@pytest.mark.parametrize(
    ("value", "is_int", "is_number"),
    [
        (0, True, True),
        (-3, True, True),
        (10**30, True, True),
        (1.0, False, True),
        (float("nan"), False, True),
        (True, False, False),
        (False, False, False),
        ("1", False, False),
        (None, False, False),
        ([1], False, False),
    ],
)
def test_an_int_or_a_number_is_never_a_bool(value: object, is_int: bool, is_number: bool) -> None:
    assert (json_int(value), json_number(value)) == (is_int, is_number)
    assert good_id(value) == (is_int or isinstance(value, str))
