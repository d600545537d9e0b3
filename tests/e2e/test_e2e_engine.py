"""The Engine view in JupyterLab (a real RTX build in the kernel): chips, sorting, filtering, a layer's fused
ONNX nodes, and the view again in the saved notebook reloaded in a new kernel."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness.lab import Lab
from harness.notebooks import WIDGET_VIEW, saved_widget_state
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

BUILD_S = 300.0
WIDGETS_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"


def engine_names(root: Any) -> list[str]:
    return [n.strip() for n in root.locator(".trtw-engine-rows .trtw-engine-name").all_text_contents()]


def test_the_engine_view_sorts_filters_expands_and_survives_a_saved_notebook(lab: Lab) -> None:
    lab.set_lab_setting(WIDGETS_PLUGIN, {"saveState": True})
    lab.open(
        [
            "from trt_widget import BuildWidget\n"
            "from trt_widget.models import resnet50\n"
            "w = BuildWidget(resnet50()).start()\n"
            "w\n"
        ]
    )
    lab.run_cell(0)
    root = lab.output(0).locator(".trtw")
    expect(root).to_have_attribute("data-status", "succeeded", timeout=BUILD_S * 1000)
    button = root.get_by_role("button", name="Engine")
    expect(button).to_be_visible()
    button.click()
    view = root.locator(".trtw-engine")
    expect(view).to_be_visible()
    kernel = lab.kernel_json(
        "[(l.name, l.type, l.precision, list(l.onnx_nodes), l.tactic) for l in w.build.engine_report.layers]"
    )
    expect(root.locator(".trtw-engine-chip").first).to_have_text(f"{len(kernel)} layers")
    assert engine_names(root)[:5] == [k[0] for k in kernel[:5]]
    lab.screenshot("engine-view", root)

    root.locator(".trtw-engine-head .trtw-engine-type").click()  # sort by type
    types = [t.strip() for t in root.locator(".trtw-engine-rows .trtw-engine-type").all_text_contents()]
    assert types == sorted(types)
    fused = next(k for k in kernel if len(k[3]) >= 2)
    query = fused[3][1]
    matching = [k for k in kernel if any(query.lower() in str(x).lower() for x in (k[0], k[1], k[2], k[4], *k[3]))]
    root.locator(".trtw-engine-filter").fill(query)
    expect(root.locator(".trtw-engine-rows .trtw-engine-row")).to_have_count(len(matching))
    root.locator(".trtw-engine-rows .trtw-engine-row").first.click()
    expect(root.locator(".trtw-engine-detail li").first).to_be_visible()
    assert query in root.locator(".trtw-engine-detail").inner_text()
    lab.screenshot("engine-view-expanded", root)

    saved = lab.save()
    view_out = [out for out in saved.cells[0].outputs if WIDGET_VIEW in out.get("data", {})]
    state = saved_widget_state(saved)[view_out[0]["data"][WIDGET_VIEW]["model_id"]]["state"]
    assert len(json.loads(state["engine_json"])["layers"]) == len(kernel)
    lab.reload_in_a_new_kernel()  # the view comes from the saved widget state
    root = lab.output(0).locator(".trtw")
    expect(root).to_have_attribute("data-status", "succeeded")
    root.get_by_role("button", name="Engine").click()
    expect(root.locator(".trtw-engine-chip").first).to_have_text(f"{len(kernel)} layers")
    lab.screenshot("engine-view-saved", root)
