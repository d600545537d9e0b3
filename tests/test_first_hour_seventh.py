"""Issue 39, the sixth newcomer trial's leftovers (Python and widget side): what a new user still tripped over."""

from __future__ import annotations

import json
import time
from pathlib import Path

from IPython.lib.pretty import pretty

from trt_widget import Build, BuildWidget, models
from trt_widget._phases import CANCELLED, DONE, RUNNING, PhaseModel


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


def test_a_phase_whose_steps_all_completed_before_the_cancel_landed_is_done() -> None:
    """Item 4: with ``isolation="thread"``, Stop during "Determining refit engines" (one long step) ended with that
    row reading "1/1 100 %" and badged cancelled. Its only step completed (TensorRT calls ``stepComplete`` when a
    step is done; the cancel is honoured there), so it is done; the phases cut short around it are cancelled.
    The callbacks replayed are those of a recorded RTX build (deep_residual(400), Stop while that step ran)."""
    clock = iter(x * 0.01 for x in range(1, 1000))
    model = PhaseModel(lambda: next(clock))
    model.phase_start("Building engine", None, 6)
    for step in range(4):
        model.step_complete("Building engine", step)
    model.phase_start("Building engine from subgraph", "Building engine", 1)
    model.phase_start("Computing profile costs", "Building engine from subgraph", 5)
    for step in range(3):
        model.step_complete("Computing profile costs", step)
    model.phase_start("Determining refit engines", "Computing profile costs", 1)
    model.request_cancel()  # Stop, while the refit step runs
    model.step_complete("Determining refit engines", 0)  # the step completed; the builder is told to stop here
    for name in ("Determining refit engines", "Computing profile costs", "Building engine from subgraph"):
        model.phase_finish(name)
    model.phase_finish("Building engine")
    status = {row["name"]: (row["status"], row["step"], row["num_steps"]) for row in model.rows()}
    assert status == {
        "Building engine": (CANCELLED, 4, 6),
        "Building engine from subgraph": (CANCELLED, 0, 1),
        "Computing profile costs": (CANCELLED, 3, 5),
        "Determining refit engines": (DONE, 1, 1),
    }


def test_a_thread_build_stopped_mid_step_has_no_complete_row_badged_cancelled() -> None:
    """Item 4 with a real RTX build on a thread: Stop while "Determining refit engines" runs its single long step;
    the build is cancelled, no row reads all its steps done yet cancelled, and a cut-short parent stays cancelled."""
    b = Build(models.deep_residual(400), isolation="thread", history=False).start()
    deadline = time.monotonic() + 120
    while not any(r["name"] == "Determining refit engines" and r["status"] == RUNNING for r in b.model.rows()):
        assert time.monotonic() < deadline and b.status in ("queued", "running"), b.model.rows()
        time.sleep(0.005)
    b.stop()
    assert b.wait(120) == "cancelled"
    rows = b.model.rows()
    assert [r for r in rows if r["status"] == CANCELLED and r["num_steps"] and r["step"] >= r["num_steps"]] == []
    (refit,) = [r for r in rows if r["name"] == "Determining refit engines"]
    assert refit["status"] == DONE and refit["step"] == refit["num_steps"] == 1, rows
    assert rows[refit["parent"]]["status"] == CANCELLED, rows  # type: ignore[index]
