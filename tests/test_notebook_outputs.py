"""Headless notebook execution (nbclient, as ``jupyter nbconvert --execute`` and docs builders run notebooks): the
saved output of the build cell carries the final state, as static text/html + text/plain and as widget state."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
BUILD_CELL = (
    "from trt_widget import BuildWidget, models\nw = BuildWidget(models.deep_residual(4), history=False).start()\nw"
)


def execute(cells: list[str], pause_after_first_s: float = 0.0) -> Any:
    """Run ``cells`` in a fresh kernel; ``pause_after_first_s`` idles between the first and second cell, so the
    build ends while no cell runs (what a slow client, or a user reading the output, does)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}

    async def pause(cell: Any, cell_index: int, **_: Any) -> None:
        if cell_index == 0 and pause_after_first_s:
            await asyncio.sleep(pause_after_first_s)

    NotebookClient(
        nb, timeout=300, kernel_name="python3", on_cell_executed=pause, resources={"metadata": {"path": "."}}
    ).execute()
    return nb


def final_output(nb: Any) -> dict[str, Any]:
    outputs = [o for o in nb.cells[0].outputs if o.get("output_type") in ("display_data", "execute_result")]
    assert len(outputs) == 1, nb.cells[0].outputs
    data: dict[str, Any] = outputs[0]["data"]
    return data


def assert_final(data: dict[str, Any], nb: Any) -> None:
    # no front end showed a view, so the output is the static rendering: a widget view would win over text/html
    # in nbconvert's HTML and render nothing there offline
    assert set(data) >= {"text/html", "text/plain", "text/markdown"}
    assert WIDGET_VIEW not in data
    html, text = data["text/html"], data["text/plain"]
    assert "Succeeded" in html and "<details" in html and "<script" not in html.lower()
    for name in ("Building engine", "Building engine from subgraph", "Computing profile costs"):
        assert f'<span class="trt-name">{name}</span>' in html
        assert re.search(rf"^ +{re.escape(name)} +(<1 ms|\d+ ms|\d+\.\d\d s)", text, re.M), text
    assert re.search(r'class="trt-time"[^>]*>(&lt;1\xa0ms|\d+\xa0ms|\d+\.\d\d\xa0s)<', html)  # no-break spaces
    assert text.startswith("BuildWidget('onnx.ModelProto deep_residual'): Succeeded in ")
    assert "snapshot" not in text
    states = nb.metadata["widgets"][WIDGET_STATE]["state"]
    (model,) = [m["state"] for m in states.values() if "phases_json" in m["state"]]
    assert model["status"] == "succeeded" and model["engine_size"] > 0  # the saved widget state is final too


@pytest.mark.parametrize("wait", ["w.wait()", "await w.wait_async()", "_ = await w"])
def test_the_saved_build_output_is_the_final_state(wait: str) -> None:
    nb = execute([BUILD_CELL, wait, "w"])
    assert_final(final_output(nb), nb)
    # displayed again after the end: the final state straight away
    again = [o for o in nb.cells[2].outputs if o.get("output_type") == "display_data"]
    assert again and "Succeeded" in again[0]["data"]["text/html"]


def test_the_final_state_is_saved_when_the_build_ended_between_cells() -> None:
    """The update sent when the build ended belongs to the finished first cell, which nbclient no longer reads;
    the wait in the next cell sends the final state again, with its own request."""
    nb = execute([BUILD_CELL, "w.wait()"], pause_after_first_s=3.0)
    assert_final(final_output(nb), nb)


def test_a_finished_output_keeps_the_widget_view_once_a_front_end_showed_one() -> None:
    """JupyterLab's view says it rendered ({"type": "view"}): from then on the final output keeps the widget."""
    from trt_widget import BuildWidget, models

    w = BuildWidget(models.deep_residual(2), history=False)
    assert WIDGET_VIEW in w._bundle()[0]  # live (or not started): the widget view, for front ends that have it
    w.start()
    assert w.wait(timeout=300) == "succeeded"
    data = w._bundle()[0]
    html = data["text/html"]
    assert WIDGET_VIEW not in data and isinstance(html, str) and "Succeeded" in html  # nobody showed a view
    refreshed: list[bool] = []
    w._refresh_display = lambda: refreshed.append(True)  # type: ignore[method-assign]
    w._handle_custom_msg({"type": "view"}, [])  # the message a rendered view sends (late: after the end)
    assert refreshed == [True]  # the outputs that lost the view get it back
    assert WIDGET_VIEW in w._bundle()[0]
    w._handle_custom_msg({"type": "view"}, [])
    assert refreshed == [True]  # nothing was dropped since: no second update


def test_the_quickstart_leaves_no_engine_in_the_temporary_folder(tmp_path: Any, monkeypatch: Any) -> None:
    """The seventh newcomer trial: the quick start's "Save the engine" cell left a 98 MiB engine in
    ``tempfile.mkdtemp()`` after the notebook. Its build and save cells, run with a temporary folder of their own."""
    import json
    from pathlib import Path

    cells = json.loads((Path(__file__).parents[1] / "notebooks" / "quickstart.ipynb").read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    save = [source for source in code if ".save(" in source]
    assert len(save) == 1, save
    build = [source for source in code if "models.resnet50()" in source or source.startswith("import trt_widget")]
    wait = [source for source in code if "widget.wait()" in source]
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    nb = execute([*build, *wait, *save])
    assert "True" in "".join(o.get("text", "") for o in nb.cells[-1].outputs), nb.cells[-1].outputs
    assert [p for p in temp.rglob("*") if p.suffix == ".engine" or p.stat().st_size > 1 << 20] == []


def test_an_output_first_shown_after_its_build_ended_drops_the_view_no_front_end_rendered() -> None:
    """A replay ends before its cell displays it: the first display keeps the widget view (JupyterLab renders it
    and says so); headless, nothing renders it, and VIEW_WAIT_S later the output is the static rendering."""
    from trt_widget._display import VIEW_WAIT_S

    replay = (
        "from trt_widget import BuildWidget\n"
        "from trt_widget.runners import gpu_shaped_events\n"
        "w = BuildWidget.from_events(list(gpu_shaped_events(measurements=20, seconds=0.2))).start()\n"
        "w.wait()\n"
        "w"
    )
    nb = execute([replay, f"import time; time.sleep({VIEW_WAIT_S + 3})"])
    data = final_output(nb)
    assert WIDGET_VIEW not in data and "Succeeded" in data["text/html"], sorted(data)
