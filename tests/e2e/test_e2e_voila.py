"""``notebooks/voila_dashboard.ipynb`` served by Voilà with progressive rendering, in headless Chromium.

The notebook is served as shipped except for a longer build (deep_residual(1000) instead of 200, whose one long
step gives Stop time to land): the widget shows the live tree while the last cell awaits the build, a Stop click
cancels it, and the awaiting cell then ends and prints the outcome (the click reached the kernel during ``await``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.apps import AppServer, screenshot_on_failure
from playwright.sync_api import expect

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        importlib.util.find_spec("voila") is None and not os.environ.get("CI"),
        reason="voila is not installed (pip install -e '.[dev]')",
    ),
]

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "voila_dashboard.ipynb"
LONG_STEP = "Determining refit engines"  # deep_residual(1000) spends nearly its whole build in this one step


@pytest.fixture(scope="module")
def voila(tmp_path_factory: pytest.TempPathFactory, artifacts: Path) -> Iterator[AppServer]:
    base = tmp_path_factory.mktemp("voila")
    text = NOTEBOOK.read_text()
    assert text.count("deep_residual(200)") == 1, "the dashboard's build cell changed: update this test"
    (base / "dashboard.ipynb").write_text(text.replace("deep_residual(200)", "deep_residual(1000)"))
    server = AppServer(
        "voila",
        lambda port: [
            *(sys.executable, "-m", "voila", "dashboard.ipynb", "--no-browser", f"--port={port}"),
            *("--Voila.ip=127.0.0.1", "--Voila.port_retries=0", "--VoilaConfiguration.progressive_rendering=True"),
        ],
        cwd=base,
        base=base,
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
        server.save_logs(artifacts)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        yield page
    finally:
        context.close()


@pytest.mark.rtx_long_step
def test_voila_dashboard_shows_the_live_tree_and_stop_cancels_the_awaited_build(
    voila: AppServer, page: Any, artifacts: Path
) -> None:
    with screenshot_on_failure(page, artifacts, "voila"):
        page.goto(voila.url, wait_until="commit")  # progressive rendering: the page streams while cells run
        root = page.locator(".trtw")
        expect(root).to_have_count(1)
        # the tree while the build runs: the long step's row running, and the build still running after that
        long_row = root.get_by_role("treeitem").filter(has_text=LONG_STEP).first
        expect(long_row).to_have_attribute("data-status", "running")
        assert root.get_attribute("data-status") == "running"
        expect(page.get_by_text("build cancelled after")).to_have_count(0)  # the last cell is still awaiting
        page.screenshot(path=str(artifacts / "voila-running.png"))

        stop = root.get_by_role("button", name="Stop")
        expect(stop).to_be_enabled()
        clicked = time.monotonic()
        stop.click()
        expect(root).to_have_attribute("data-status", "cancelled", timeout=15_000)
        click_to_cancelled = time.monotonic() - clicked
        expect(root.locator(".trtw-badge")).to_have_text("Cancelled")
        expect(root.locator(".trtw-stop")).to_be_hidden()
        # the awaiting cell ended with the cancelled build and printed it
        expect(page.get_by_text("build cancelled after")).to_be_visible(timeout=15_000)
        expect(page.get_by_text("no engine")).to_be_visible()
        # the builder process was ended inside the long step, not waited for to its end (a row then done): said by
        # the state, not by a time a loaded 2-core runner stretches (it was "< 5 s")
        expect(long_row).to_have_attribute("data-status", "cancelled")
        page.screenshot(path=str(artifacts / "voila-cancelled.png"), full_page=True)
        print(f"\nvoila: Stop click -> cancelled in {click_to_cancelled:.2f} s")
