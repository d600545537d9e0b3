"""``BuildWidget`` in a marimo app (``marimo run``), in headless Chromium, with a real TensorRT-RTX build.

Both ways of showing an anywidget in marimo are tested, on two views of one widget (one build): a cell ending in
``mo.ui.anywidget(w)`` and a cell ending in the bare ``w`` (marimo wraps every anywidget in ``mo.ui.anywidget``
itself). Both render and update live, and a Stop click in the first view cancels the build in both. Read-only
``marimo run`` serves the widget fully (its comm carries state updates and the Stop message), so ``marimo edit``
is not needed.

In ``marimo run`` a cell's prints go to the server's stdout/stderr: the app's first cell prints a marker line
(with what ``_in_notebook()`` says) to prove that, and nothing of trt_widget's terminal tree may follow it.
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
        importlib.util.find_spec("marimo") is None and not os.environ.get("CI"),
        reason="marimo is not installed (pip install -e '.[dev]')",
    ),
]

LONG_STEP = "Determining refit engines"  # deep_residual(1000) spends nearly its whole build in this one step
MARKER = "MARIMO-PROBE"
APP = f'''import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo

    from trt_widget import BuildWidget
    from trt_widget._widget import _in_notebook
    from trt_widget.models import deep_residual

    w = BuildWidget(deep_residual(1000)).start()
    print("{MARKER} in_notebook=" + str(_in_notebook()))  # a cell's print reaches the server's stdout
    mo.ui.anywidget(w)
    return (w,)


@app.cell
def _(w):
    w
    return


if __name__ == "__main__":
    app.run()
'''
# what trt_widget's terminal front end would print (the phase tree, its summary)
TERMINAL_TREE = ("Building engine", LONG_STEP, "Cancelled", "trt_widget", "trt-widget")


@pytest.fixture(scope="module")
def marimo_app(tmp_path_factory: pytest.TempPathFactory, artifacts: Path) -> Iterator[AppServer]:
    base = tmp_path_factory.mktemp("marimo")
    (base / "app.py").write_text(APP)
    server = AppServer(
        "marimo",
        lambda port: [
            *(sys.executable, "-m", "marimo", "run", "app.py", "--headless", "--no-token", "--no-sandbox"),
            *("--port", str(port), "--host", "127.0.0.1"),
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
def test_marimo_app_shows_the_live_build_and_stop_cancels_it(marimo_app: AppServer, page: Any, artifacts: Path) -> None:
    with screenshot_on_failure(page, artifacts, "marimo"):
        page.goto(marimo_app.url)
        views = page.locator(".trtw")
        expect(views).to_have_count(2)  # mo.ui.anywidget(w) and bare w
        for view in (views.nth(0), views.nth(1)):
            # live: the long step's row is shown running, and then the build is still running (no status goes
            # back to running), so the rows arrived while it ran (the views live in shadow roots: locators only)
            long_row = view.get_by_role("treeitem").filter(has_text=LONG_STEP).first
            expect(long_row).to_have_attribute("data-status", "running")
            assert view.get_attribute("data-status") == "running"
        page.screenshot(path=str(artifacts / "marimo-running.png"))

        stop = views.nth(0).get_by_role("button", name="Stop")
        expect(stop).to_be_enabled()
        clicked = time.monotonic()
        stop.click()  # a real mouse click in the mo.ui.anywidget(w) view
        for view in (views.nth(0), views.nth(1)):
            expect(view).to_have_attribute("data-status", "cancelled", timeout=15_000)
        click_to_cancelled = time.monotonic() - clicked
        for view in (views.nth(0), views.nth(1)):
            expect(view.locator(".trtw-badge")).to_have_text("Cancelled")
            expect(view.locator(".trtw-stop")).to_be_hidden()
            expect(view.locator("[role=treeitem][data-status=cancelled]").first).to_be_visible()
            # the builder process was ended inside the long step, not waited for to its end (a row then done): said
            # by the state, not by a time a loaded 2-core runner stretches (it was "< 5 s")
            long_row = view.get_by_role("treeitem").filter(has_text=LONG_STEP).first
            expect(long_row).to_have_attribute("data-status", "cancelled")
        page.screenshot(path=str(artifacts / "marimo-cancelled.png"))
        print(f"\nmarimo: Stop click -> both views cancelled in {click_to_cancelled:.2f} s")

    time.sleep(1.0)  # a terminal tree's final summary would be printed right after the build's end
    stdout, stderr = marimo_app.stdout_text(), marimo_app.stderr_text()
    assert f"{MARKER} in_notebook=True" in stdout, marimo_app.output()  # cell output does land here
    after_marker = stdout.split(MARKER, 1)[1]
    printed = [t for t in TERMINAL_TREE if t in after_marker or t in stderr]
    assert printed == [], f"trt_widget printed to the marimo server's output: {printed}\n{marimo_app.output()}"
