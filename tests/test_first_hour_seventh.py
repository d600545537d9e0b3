"""Issue 39, the sixth newcomer trial's leftovers (Python and widget side): what a new user still tripped over."""

from __future__ import annotations

import json
from pathlib import Path

from IPython.lib.pretty import pretty

from trt_widget import Build, BuildWidget, models


def test_timings_in_its_own_cell_shows_the_top_level_phases_compactly() -> None:
    """``w.timings()`` as a cell's last line printed about 150 lines (one dict per phase instance); it now shows
    the top-level phases with their times and a count of the nested rows, and stays the list the docs promise."""
    w = BuildWidget(models.deep_residual(4), history=False).start()
    assert w.wait(120) == "succeeded"
    timings = w.timings()
    rows = list(timings)
    top = [row for row in rows if row["parent"] is None]
    assert len(rows) > 2 * len(top) > 0  # a real build nests: the full list is long
    text = pretty(timings)  # what IPython prints for a cell's last line
    assert len(text.splitlines()) <= len(top) + 3, text
    for row in top:
        assert row["name"] in text
    assert f"{len(rows) - len(top)} nested" in text, text
    html = timings._repr_html_()
    assert all(row["name"] in html for row in top) and "<script" not in html.lower()
    # the API the docs promise: a list of dicts (indexing, iteration, len, JSON, equality with a list)
    assert timings[0] == rows[0] and len(timings) == len(rows) and timings == rows
    assert json.loads(json.dumps(timings)) == json.loads(json.dumps(rows))
    assert isinstance(timings, list) and timings[1:] == rows[1:]


def test_a_build_s_timings_repr_escapes_phase_names(tmp_path: Path) -> None:
    """Phase names come from TensorRT (or a recording): the compact display escapes them in HTML."""
    b = Build(models.deep_residual(2), history=False).start()
    assert b.wait(120) == "succeeded"
    timings = b.timings()
    timings[0]["name"] = "<img src=x onerror=alert(1)>"
    assert "<img" not in timings._repr_html_()
