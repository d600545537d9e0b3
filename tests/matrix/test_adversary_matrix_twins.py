"""Twelfth adversarial re-run (issue 35): the Comparison's twins key must not take the matrix widget down."""

from __future__ import annotations

from typing import Any

from fixture_types import WaitUntil

from trt_widget import models
from trt_widget.matrix import BuildMatrix


def test_a_variant_whose_profiles_have_a_non_string_key_fails_its_build_and_the_widget_still_ends(
    wait_until: WaitUntil,
) -> None:
    """A profile keyed by an int (a user's slip: "the first input") fails the build with a clear error; the
    matrix's comparison and its widget must still show that end, not stay "running" for ever."""
    shape = (1, 8, 8, 8)
    profiles: Any = {"input": [shape] * 3, 1: [shape] * 3}
    matrix = BuildMatrix(
        [models.deep_residual(2)], variants=[{"profiles": profiles}], isolation="thread", history=False
    )
    widget = matrix.widget
    matrix.start()
    matrix.wait(120)
    assert matrix.cells[0].build.status == "failed"
    assert "unknown input" in str(matrix.cells[0].build.error)
    assert [b["status"] for b in matrix.comparison()["builds"]] == ["failed"]
    wait_until(lambda: widget.status == "done", timeout=30, what="the widget shows the matrix's end")
