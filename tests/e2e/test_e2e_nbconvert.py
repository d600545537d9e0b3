"""``jupyter nbconvert --execute --to html`` of the quick start (the widget state stored, nbconvert's default),
opened in headless Chromium with the network off: every build shows its final tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def test_an_executed_quick_start_exported_to_html_shows_every_build_offline(browser: Any, tmp_path: Path) -> None:
    notebook = tmp_path / "quickstart.ipynb"
    shutil.copy(REPO / "notebooks" / "quickstart.ipynb", notebook)
    env = dict(os.environ, TRT_WIDGET_HISTORY=str(tmp_path / "history.sqlite"))
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--execute", "--to", "html", str(notebook)],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
    )
    html = tmp_path / "quickstart.html"
    assert "application/vnd.jupyter.widget-state+json" in html.read_text()  # the widget state was stored

    context = browser.new_context()
    context.set_offline(True)
    try:
        page = context.new_page()
        page.goto(html.as_uri())
        builds = page.locator(".trt-widget-static")
        expect(builds).to_have_count(2)
        first, second = builds.nth(0), builds.nth(1)
        expect(first).to_be_visible()
        expect(first).to_contain_text("Succeeded")
        expect(first.locator(".trt-name", has_text="Building engine").first).to_be_visible()
        expect(second).to_be_visible()
        expect(second).to_contain_text("Cancelled")
        expect(second.locator(".trt-name", has_text="Building engine").first).to_be_visible()
        # a reader clicks a phase open: the static tree is nested <details>
        assert first.locator("details").count() > 3
    finally:
        context.close()
