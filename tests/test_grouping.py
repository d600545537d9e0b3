"""The one folding rule for repeated phases: Python's terminal and the JS tree/timeline agree."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, cast

from trt_widget._grouping import GROUP_MIN, sibling_runs
from trt_widget._terminal import tree_lines

if TYPE_CHECKING:
    from trt_widget._phases import PhaseRow

ROOT = Path(__file__).resolve().parent.parent


def _row(i: int, name: str, parent: int | None = 0) -> PhaseRow:  # the keys grouping reads
    return cast(
        "PhaseRow", {"id": i, "name": name, "parent": parent, "start_s": i, "end_s": i + 0.5, "duration_s": 0.5}
    )


def test_runs_of_five_or_more_consecutive_same_name_siblings_fold() -> None:
    names = ["a"] * 6 + ["b"] * 4 + ["a"] * 5 + ["c"]
    lines = sibling_runs([_row(i, n) for i, n in enumerate(names, start=1)])
    assert [(line[0]["name"], len(line)) for line in lines] == [
        ("a", 6),
        *[("b", 1)] * 4,  # 4 < GROUP_MIN: one line each
        ("a", 5),  # a separate run of "a": its own group, not merged with the first
        ("c", 1),
    ]


def test_the_js_tree_uses_the_same_threshold() -> None:
    source = (ROOT / "js" / "src" / "build" / "structure.js").read_text()
    assert re.search(rf"export const GROUP_MIN = {GROUP_MIN};", source)


def test_the_terminal_tree_folds_by_the_rule() -> None:
    rows = [_row(0, "Building engine", None)]
    rows += [_row(i, "Measuring tactic time") for i in range(1, 8)]
    rows += [_row(i, "Timing graph nodes") for i in range(8, 10)]
    lines = [(depth, group[0]["name"], count) for depth, group, count in tree_lines(rows, 10.0)]
    assert lines == [
        (0, "Building engine", 1),
        (1, "Measuring tactic time", 7),
        (1, "Timing graph nodes", 1),
        (1, "Timing graph nodes", 1),
    ]
