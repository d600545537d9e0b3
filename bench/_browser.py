"""The front-end benchmarks' page (P7, P13, P16-view): Debian's headless Chromium via Playwright, showing one HTML
page whose files are served from disk through ``page.route`` (no server, no network)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ORIGIN = "http://bench.trt-widget.invalid"


@contextmanager
def bench_page(
    html: str,
    files: Mapping[str, tuple[Path, str]],
    ready: str,
    *,
    viewport: tuple[int, int] = (1000, 800),
    args: Sequence[str] = ARGS,
) -> Iterator[tuple[Page, str]]:
    """(the page, Chromium's version) once the JavaScript expression ``ready`` is true; ``files``: URL path ->
    (file, content type). Leaving the block raises ``RuntimeError`` when the page threw (its first errors)."""
    from playwright.sync_api import sync_playwright

    def serve(route: Route) -> None:
        path = route.request.url[len(ORIGIN) :].split("?")[0]
        if path in ("/", "/index.html"):
            route.fulfill(status=200, content_type="text/html", body=html)
        elif path in files:
            file, kind = files[path]
            route.fulfill(status=200, content_type=kind, body=file.read_bytes())
        else:
            route.fulfill(status=404, body="not found")

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=list(args), headless=True)
        try:
            width, height = viewport
            page = browser.new_page(viewport={"width": width, "height": height})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.route(f"{ORIGIN}/**", serve)
            page.goto(f"{ORIGIN}/index.html")
            page.wait_for_function(ready, timeout=30_000)
            yield page, browser.version
            if errors:
                raise RuntimeError(f"page errors: {errors[:3]}")
        finally:
            browser.close()
