"""E1's siblings (seventeenth re-run, issue 35): every number in a layer's text (a ONELINE field or tensor
dimension, a ``Layer(TYPE)`` line's tensor shape or tactic, a constant's dimensions) goes through the one bounded
ASCII-digits rule (``count_from_digits``): 5,000 digits made ``int()`` raise, and a non-ASCII digit ('٣' is one to
``int``) was read as a number. Such a field is kept as the text it is, never an exception."""

from __future__ import annotations

import pytest

from trt_widget.engine._layer import parse_layer_info, parse_oneline, tactic_hex
from trt_widget.engine._parse import scan_oneline

BIG = "7" * 5000


@pytest.mark.parametrize("number", [BIG, "\u0663"], ids=["5000-digits", "arabic-indic-3"])
def test_a_oneline_fields_number_that_is_no_bounded_ascii_count_stays_text(number: str) -> None:
    line = (
        f"Name: l, LayerType: kgen, Inputs: [ {{ Name: x, Dimensions: [1,{number}], Format/Datatype: Float }}], "
        f"Outputs: [ {{ Name: y, Dimensions: [1], Format/Datatype: Half }}], Reps: {number}, StreamId: {number}, "
        "Metadata: [ONNX Layer: n]"
    )
    raw = parse_oneline(line)
    assert raw is not None
    assert raw["Reps"] == number and raw["StreamId"] == number
    inputs = raw["Inputs"]
    assert isinstance(inputs, list) and isinstance(inputs[0], dict) and inputs[0]["Dimensions"] == f"[1,{number}]"
    layer = scan_oneline(line)
    assert layer is not None and layer.stream is None


@pytest.mark.parametrize("number", [BIG, "\u0663"], ids=["5000-digits", "arabic-indic-3"])
def test_a_layer_info_lines_shape_and_tactic_that_are_no_bounded_ascii_numbers_are_kept_as_text(number: str) -> None:
    raw = parse_layer_info(f"Layer(Conv): a, Tactic: {number}, x[Float(1,{number})] -> y (Half[1,2])")
    assert raw is not None
    assert raw["TacticValue"] == number[:64]  # not a tactic: shown as given (clipped)
    inputs = raw["Inputs"]
    assert isinstance(inputs, list) and isinstance(inputs[0], dict) and inputs[0]["Dimensions"] == []
    assert tactic_hex("0x" + "f" * 5000) == ("0x" + "f" * 5000)[:64]
    assert tactic_hex("-5") == "0xfffffffffffffffb" and tactic_hex("0x1A") == "0x000000000000001a"
