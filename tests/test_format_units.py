"""Issue 39, eighth newcomer trial: HTML keeps each number with its unit (``keep_units``, as the widget's
``keepUnits``, js/tests/shared/format.test.js, with the same samples); terminal text keeps plain spaces."""

from __future__ import annotations

import io

from trt_widget._format import NBSP, fit_lines, fmt_bytes, fmt_s, keep_units


def test_keep_units_joins_numbers_to_units_and_nothing_else() -> None:
    said = keep_units("ended 0.2 s after stop(), 3 min 04.2 s, 669.8 KiB, 20 % of 4 steps")
    assert said == f"ended 0.2{NBSP}s after stop(), 3{NBSP}min{NBSP}04.2{NBSP}s, 669.8{NBSP}KiB, 20{NBSP}% of 4 steps"
    assert keep_units("layer 5 scale, 2 Seconds, v2 sums") == "layer 5 scale, 2 Seconds, v2 sums"
    assert NBSP == "\u00a0"


def test_terminal_formatters_keep_plain_spaces() -> None:
    assert fmt_s(0.373) == "373 ms" and fmt_bytes(685_875) == "669.8 KiB"
    assert NBSP not in fit_lines("Succeeded in 373 ms: engine 669.8 KiB", io.StringIO())
