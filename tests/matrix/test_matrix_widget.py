"""The matrix widget, kernel side: rows, expanded trees, Stop messages, the comparison, the send rate."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import pytest
from fixture_types import WaitUntil

from trt_widget import models
from trt_widget.matrix import BuildMatrix


@pytest.mark.deadline  # a real build still in its first phase; a stop within 10 s
def test_rows_expand_stop_and_compare(long_model_bytes: bytes, wait_until: WaitUntil) -> None:
    matrix = BuildMatrix(
        {"long": long_model_bytes, "small": models.deep_residual(4), "other": models.deep_residual(5)},
        variants=[{"optimization_level": 0}],
        max_parallel=1,  # the others wait while the long build runs: "queued" is shown for certain
    )
    widget = matrix.widget
    assert matrix.widget is widget  # one widget per matrix
    assert [r["status"] for r in widget.rows] == ["idle"] * 3 and widget.status == "idle"
    sends: list[tuple[float, dict[str, Any]]] = []
    apply = widget._apply

    def send(changed: dict[str, Any]) -> None:
        sends.append((time.monotonic(), changed))
        apply(changed)

    widget._pump.send = send
    matrix.start()
    wait_until(lambda: widget.rows[0]["phase"] is not None, timeout=60, what="the first row's current phase")

    widget._on_custom_msg(widget, {"type": "expand", "build": 0, "open": True}, [])
    wait_until(lambda: "0" in json.loads(widget.details_json), timeout=10, what="the expanded build's traits")
    assert widget.expanded == [0]
    detail = json.loads(widget.details_json)["0"]
    # the first phase of every build, before TensorRT's own (after a cold builder process's start-up)
    first = json.loads(detail["phases_json"])[0]["name"]
    assert detail["status"] == "running" and first in ("Reading and parsing the model", "Starting the builder process")

    widget._on_custom_msg(widget, {"type": "stop", "build": 0}, [])  # a row's Stop: that build alone
    assert matrix.builds[0].wait(10) == "cancelled"
    widget._on_custom_msg(widget, {"type": "stop", "build": 99}, [])  # ignored, as is garbage
    widget._on_custom_msg(widget, "nonsense", [])
    assert matrix.wait(120) == "done"
    assert [b.status for b in matrix.builds] == ["cancelled", "succeeded", "succeeded"]
    wait_until(lambda: widget.comparison_json, timeout=10, what="the comparison")
    compared = json.loads(widget.comparison_json)["builds"]
    assert [b["status"] for b in compared] == ["cancelled", "succeeded", "succeeded"]
    assert compared[1]["phases"]["Building engine"] > 0
    rows = widget.rows
    assert [r["status"] for r in rows] == ["cancelled", "succeeded", "succeeded"]
    shown = [json.loads(c["rows_json"])[2]["status"] for _, c in sends if "rows_json" in c]
    assert "queued" in shown and shown[-1] == "succeeded"  # one slot: the third build waited, and it showed
    assert rows[1]["engine_size"] == len(matrix.builds[1].engine or b"") > 0 and rows[1]["phase"] is None
    detail = json.loads(widget.details_json)["0"]
    assert detail["status"] == "cancelled"

    # expanding a finished build still works: the pump lives as long as the widget
    widget.expand(2)
    wait_until(lambda: "2" in json.loads(widget.details_json), timeout=10, what="a finished build's traits")
    assert json.loads(widget.details_json)["2"]["status"] == "succeeded"

    times = [t for t, _ in sends]
    assert all(b - a >= 0.1 for a, b in itertools.pairwise(times)), "more than 10 messages a second"

    data, _ = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    html, plain = data["text/html"], data["text/plain"]
    assert isinstance(html, str) and isinstance(plain, str) and "<table" in html and "succeeded" in plain
    widget.close()
    widget._pump.join(5)
    assert not widget._pump._thread.is_alive()


def test_stop_all_message_and_an_idle_matrix(wait_until: WaitUntil) -> None:
    matrix = BuildMatrix(models.deep_residual(4), variants=[{}, {"optimization_level": 1}])
    widget = matrix.widget
    data, _ = widget._repr_mimebundle_()
    plain = data["text/plain"]
    assert isinstance(plain, str) and "idle" in plain
    widget._on_custom_msg(widget, {"type": "stop_all"}, [])  # before start: nothing to stop
    matrix.start()
    widget._on_custom_msg(widget, {"type": "stop_all"}, [])
    assert matrix.wait(30) == "done"
    assert [b.status for b in matrix.builds] == ["cancelled", "cancelled"]
    wait_until(lambda: all(r["status"] == "cancelled" for r in widget.rows), timeout=10, what="final rows")
    widget.close()


def test_displayed_output_is_replaced_by_the_final_table(monkeypatch: Any) -> None:
    import IPython.display

    shown: list[tuple[Any, ...]] = []
    monkeypatch.setattr(IPython.display, "display", lambda data, **kw: shown.append(("display", data, kw)))
    monkeypatch.setattr(IPython.display, "update_display", lambda data, **kw: shown.append(("update", data, kw)))
    matrix = BuildMatrix(models.deep_residual(3), variants=[{}, {"optimization_level": 1}])
    matrix._ipython_display_()  # what IPython calls for the last expression of a cell
    assert [kind for kind, *_ in shown] == ["display"] and "idle" in shown[0][1]["text/plain"]
    matrix.start().wait(60)
    updates = [entry for entry in shown if entry[0] == "update"]
    assert len(updates) >= 1 and updates[-1][2]["display_id"] == shown[0][2]["display_id"]
    final = updates[-1][1]
    assert final["text/plain"].count("succeeded") == 2 and final["text/html"].count("succeeded") == 2
    matrix.widget.close()
