"""A headless Debian Chromium under Playwright for the e2e harness (Playwright's own browser download is never used)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"  # Debian's package
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--headless",
    "--disable-gpu",
    "--disable-dev-shm-usage",  # docker-sized /dev/shm
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def chromium(home: Path, executable: str = CHROMIUM) -> Iterator[Any]:
    """A headless Chromium with a throwaway HOME/XDG dirs; closed on exit."""
    from playwright.sync_api import sync_playwright

    home.mkdir(parents=True, exist_ok=True)
    env: dict[str, str | float | bool] = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS, env=env)
        try:
            yield browser
        finally:
            browser.close()
