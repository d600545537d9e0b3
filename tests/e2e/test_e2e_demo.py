"""``scripts/demo.sh`` lands on the quick-start notebook: the link it prints opens the notebook (not the
Launcher), and no news pop-up covers the page."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from harness.notebooks import wait_until
from harness.server import free_port
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def test_the_demo_link_opens_the_quick_start_notebook(browser: Any, tmp_path: Path) -> None:
    port = free_port()
    env = dict(
        os.environ,
        TRT_WIDGET_VENV=sys.prefix,  # this environment, as it is: the test checks where the demo lands
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_DATA_DIR=str(tmp_path / "data"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "lab-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "lab-workspaces"),
        TRT_WIDGET_HISTORY=str(tmp_path / "history.sqlite"),
    )
    checkpoints = REPO / "notebooks" / ".ipynb_checkpoints"
    had_checkpoints = checkpoints.exists()
    copy = REPO / "notebooks" / "my-quickstart.ipynb"  # the demo's working copy (the tracked notebook stays clean)
    had_copy = copy.exists()
    log = tmp_path / "demo.log"
    with open(log, "wb") as out:
        demo = subprocess.Popen(
            ["bash", str(REPO / "scripts" / "demo.sh"), "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:
        pattern = re.compile(rf"http://127\.0\.0\.1:{port}/\S*\?token=\w+")
        url = wait_until(lambda: (pattern.findall(log.read_text()) or [None])[-1], timeout=120, what="the link")
        assert "/lab/tree/notebooks/my-quickstart.ipynb?token=" in url
        page = browser.new_page()
        try:
            page.goto(url)
            expect(page.locator(".jp-NotebookPanel h1", has_text="trt_widget quick start")).to_be_visible(
                timeout=120_000
            )
            expect(page.locator(".jp-Launcher")).to_have_count(0)
            time.sleep(3)  # JupyterLab asks about news a moment after it starts, where it asks
            assert not page.get_by_text(re.compile("official Jupyter news", re.I)).count()
        finally:
            page.close()
    finally:
        os.killpg(demo.pid, signal.SIGTERM)
        try:
            demo.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait(15)
        if not had_checkpoints:  # JupyterLab made one when it opened the notebook: leave the checkout as it was
            shutil.rmtree(checkpoints, ignore_errors=True)
        if not had_copy:
            copy.unlink(missing_ok=True)
