"""A kernel that goes away mid-build (Kernel → Restart, Kernel → Shut Down) in JupyterLab: the widget stops its
clock, shows the last state as ended with the reason, and disables Stop — instead of "Running" forever."""

from __future__ import annotations

import re
import time

import pytest
from harness.lab import Lab
from playwright.sync_api import Locator, expect

pytestmark = pytest.mark.e2e

BUILD_S = 300.0
CELL = (
    "from trt_widget import BuildWidget\n"
    "from trt_widget.models import deep_residual\n"
    "w = BuildWidget(deep_residual(1000)).start()\n"
    "w\n"
)


def _running_build(lab: Lab) -> Locator:
    lab.open([CELL])
    lab.run_cell(0)
    root = lab.output(0).locator(".trtw")
    expect(root).to_have_attribute("data-status", "running", timeout=BUILD_S * 1000)
    expect(root.get_by_role("treeitem").first).to_be_visible(timeout=BUILD_S * 1000)
    return root


def _assert_ended(lab: Lab, root: Locator, reason: str) -> None:
    expect(root).to_have_attribute("data-status", "ended", timeout=30_000)
    expect(root.locator(".trtw-badge")).to_have_text("Ended")
    expect(root.locator(".trtw-detail")).to_have_text(reason)
    stop = root.locator("button.trtw-stop")
    expect(stop).to_be_visible()
    expect(stop).to_be_disabled()
    clock = root.locator(".trtw-elapsed")
    before = clock.inner_text()
    time.sleep(1.5)  # the live clock ticks at 10 Hz: a stopped one reads the same 1.5 s later
    assert clock.inner_text() == before
    expect(root.locator(".trtw-eta")).to_be_hidden()
    assert not [p for p in lab.problems if "Cannot send" in p], lab.problems


def test_a_kernel_restart_mid_build_ends_the_widget(lab: Lab) -> None:
    root = _running_build(lab)
    lab.js("restartKernel", lab.path)
    _assert_ended(lab, root, "the kernel restarted during this build")
    lab.wait_ready(idle=True)  # the new kernel is there; the old build's view stays ended
    expect(root).to_have_attribute("data-status", "ended")


def test_a_kernel_shutdown_mid_build_ends_the_widget(lab: Lab) -> None:
    root = _running_build(lab)
    lab.js("shutdownKernel", lab.path)
    # an exiting kernel may still get its build's last state out (the build ended with its builder process);
    # else the page sees the kernel go and ends the view itself; either way nothing runs on, nothing to stop
    expect(root).not_to_have_attribute("data-status", "running", timeout=30_000)
    if root.get_attribute("data-status") != "ended":
        expect(root).to_have_attribute("data-status", re.compile("failed|cancelled"))
        expect(root.locator("button.trtw-stop")).to_be_hidden()
    else:
        _assert_ended(lab, root, "the kernel shut down during this build")


MATRIX_CELL = (
    "from trt_widget.matrix import BuildMatrix\n"
    "from trt_widget.models import deep_residual\n"
    "m = BuildMatrix(deep_residual(1000), variants=[{'optimization_level': 3}, {'optimization_level': 2}],"
    " max_parallel=1).start()\n"
    "m\n"
)


def test_a_kernel_restart_mid_matrix_ends_its_open_builds(lab: Lab) -> None:
    """The matrix view (and the watch widget, which is drawn by it): every build still queued or running shows
    ended with the reason, its clock frozen; Stop and Stop all are disabled."""
    lab.open([MATRIX_CELL])
    lab.run_cell(0)
    root = lab.output(0).locator(".trtw-matrix")
    running, queued = (root.locator(f'tr.trtw-mx-row[data-build="{i}"]') for i in (0, 1))
    expect(running).to_have_attribute("data-status", "running", timeout=BUILD_S * 1000)
    expect(queued).to_have_attribute("data-status", "queued")
    lab.js("restartKernel", lab.path)
    for row in (running, queued):
        expect(row).to_have_attribute("data-status", "ended", timeout=30_000)
        expect(row.locator(".trtw-mx-phase-name")).to_have_text("the kernel restarted during this build")
        expect(row.locator(".trtw-mx-stop")).to_be_disabled()
    expect(root).to_have_attribute("data-status", "ended")
    expect(root.locator(".trtw-mx-stop-all")).to_be_disabled()
    clock = running.locator(".trtw-mx-elapsed")
    before = clock.inner_text()
    time.sleep(1.5)  # a live row's clock ticks on: a frozen one reads the same 1.5 s later
    assert clock.inner_text() == before
    lab.screenshot("matrix-kernel-restarted", root)
    assert not [p for p in lab.problems if "Cannot send" in p], lab.problems
