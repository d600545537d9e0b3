"""The one rule for folding repeated phases, shared by every live front end (the widget's tree and timeline in
``js/src/build/structure.js``, the terminal tree): a run of at least ``GROUP_MIN`` consecutive siblings with the same
name is shown as one group ("name ×count"); shorter runs are shown one by one. (Static reports merge all
instances by name path instead, so their size stays bounded for any build.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

GROUP_MIN = 5  # js/src/build/structure.js has the same constant (a test checks they agree)
Row = TypeVar("Row", bound=Mapping[str, object])  # a phase row (PhaseRow), or a row of a recording


def sibling_runs(children: Sequence[Row]) -> list[list[Row]]:
    """``children`` (rows of one parent, in start order) as display lines: a group per run of >= GROUP_MIN
    same-name rows, else one line per row."""
    lines: list[list[Row]] = []
    i = 0
    while i < len(children):
        j = i
        while j + 1 < len(children) and children[j + 1]["name"] == children[i]["name"]:
            j += 1
        run = list(children[i : j + 1])
        if len(run) >= GROUP_MIN:
            lines.append(run)
        else:
            lines.extend([row] for row in run)
        i = j + 1
    return lines
