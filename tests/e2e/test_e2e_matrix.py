"""Real-browser scenario of the build matrix widget in JupyterLab, with real TensorRT-RTX builds in the kernel:
rows update live, an expanded row shows its build's phase tree, a real click on one row's Stop ends that build
alone, and the comparison appears once every build ended."""

from __future__ import annotations

from typing import Any

import pytest
from harness.lab import Lab
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

BUILD_S = 300.0  # deadline for the whole matrix: other helpers build on the same 2 cores
LONG_STEP = "Determining refit engines"  # deep_residual(1000) spends nearly its whole build in this one step
# The third build ("small") must be seen running: the matrix sends at most one update per 0.125 s
# (trt_widget/matrix/_widget.py), and deep_residual(20) ran ~0.1 s, between two of them, once in a while.
# deep_residual(100) runs ~0.3 s: two sends or more.

MATRIX_CELL = """\
from trt_widget.matrix import BuildMatrix
from trt_widget.models import deep_residual
m = BuildMatrix(
    {"long": deep_residual(1000), "mid": deep_residual(150), "small": deep_residual(100)},
    variants=[{"optimization_level": 3}],
    max_parallel=2,
).start()
m
"""


def row(root: Any, build: int) -> Any:
    return root.locator(f'tr.trtw-mx-row[data-build="{build}"]')


@pytest.mark.rtx_long_step
def test_matrix_rows_live_expand_and_stop_one(lab: Lab) -> None:
    lab.open([MATRIX_CELL])
    for build in (0, 1, 2):
        lab.watch(f"row{build}", f'.trtw-matrix tr.trtw-mx-row[data-build="{build}"]', "data-status")
    lab.run_cell(0)
    root = lab.output(0).locator(".trtw-matrix")
    expect(root).to_be_visible()
    expect(root.locator("tr.trtw-mx-row")).to_have_count(3)
    long = row(root, 0)
    expect(long).to_have_attribute("data-status", "running", timeout=BUILD_S * 1000)

    # expand the long build: its full phase tree, the BuildWidget view, inside the matrix
    long.locator(".trtw-mx-toggle").click()
    tree = root.locator('tr.trtw-mx-detail[data-build="0"]')
    expect(tree).to_be_visible()
    step = tree.get_by_role("treeitem").filter(has_text=LONG_STEP).first
    expect(step).to_have_attribute("data-status", "running", timeout=BUILD_S * 1000)
    expect(long.locator(".trtw-mx-phase-name")).to_have_text(LONG_STEP)
    lab.screenshot("matrix-live-expanded", root)

    # a real click on that row's Stop: the long build alone is cancelled
    long.locator(".trtw-mx-stop").click()
    expect(long).to_have_attribute("data-status", "cancelled", timeout=30_000)
    expect(tree.locator(".trtw-badge")).to_have_text("Cancelled")
    for build in (1, 2):
        expect(row(root, build)).to_have_attribute("data-status", "succeeded", timeout=BUILD_S * 1000)
    expect(root.locator(".trtw-mx-compare")).to_be_visible(timeout=30_000)
    expect(root.locator(".trtw-mx-compare-table tr[data-build]")).to_have_count(3)
    expect(root.locator(".trtw-mx-stop-all")).to_be_hidden()
    lab.screenshot("matrix-final", root)

    # live: the browser saw the third build wait, run and finish; the long one run before it was stopped
    seen = {b: [e["value"] for e in lab.watched(f"row{b}") if e.get("value")] for b in (0, 1, 2)}
    assert _in_order(seen[2], ["queued", "running", "succeeded"]), seen
    assert _in_order(seen[0], ["running", "cancelling", "cancelled"]) or _in_order(seen[0], ["running", "cancelled"]), (
        seen
    )
    clicks = [e for e in lab.watched("row0") if "trtw-mx-stop" in str(e.get("click", ""))]
    assert clicks, lab.watched("row0")
    assert lab.kernel_json("[b.status for b in m.builds]") == ["cancelled", "succeeded", "succeeded"]
    assert not lab.dialogs


def _in_order(values: list[str], wanted: list[str]) -> bool:
    """``wanted`` appears in ``values`` as a subsequence."""
    it = iter(values)
    return all(any(v == w for v in it) for w in wanted)
