"""Static renderings of a build (text/plain, text/markdown, text/html) and the standalone HTML report: real RTX
builds, a scripted build with hostile names, the report in headless Chromium with the network blocked, the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from trt_widget import Build, BuildError, BuildWidget, models
from trt_widget._engine import ModelSource
from trt_widget.report import _inline as report

if TYPE_CHECKING:
    from playwright.sync_api import Dialog

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("TRT_WIDGET_ARTIFACTS") or REPO / "artifacts") / "report"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-dev-shm-usage"]
EVIL = "<img src=x onerror=alert(1)>"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
DURATION = re.compile(r"(&lt;1 ms|<1 ms|\d+ ms|\d+\.\d\d s)")
NB = "\u00a0"  # what joins a number to its unit in HTML (a line never wraps between them)
HTML_DURATION = re.compile(DURATION.pattern.replace(" ", NB))


class ScriptedRunner:
    """Plays a fixed phase script with hostile names into the build's model, logs a hostile line and fails."""

    name = "scripted"
    framed = True
    local = True

    def run(self, ctx: Any) -> bytes | None:
        model = ctx.model
        model.phase_start(EVIL, None, 2)
        model.phase_start("child & <b>bold</b> \"quoted\" 'single'", EVIL, 3)
        model.step_complete("child & <b>bold</b> \"quoted\" 'single'", 0)
        model.phase_finish("child & <b>bold</b> \"quoted\" 'single'")
        model.phase_start("<script>alert(2)</script>", EVIL, 1)
        model.phase_finish("<script>alert(2)</script>")
        model.step_complete(EVIL, 1)
        model.phase_finish(EVIL)
        ctx.logger.log(1, f"ERROR in {EVIL}")
        raise BuildError(f"the layer {EVIL} is invalid\n<script>alert(3)</script>")


def hostile_build() -> Build:
    build = Build(b"not used", isolation="thread", history=False, resources=False)
    build.source = ModelSource("bytes", b"not used", f"model {EVIL}")
    build.runner = ScriptedRunner()
    build.start()
    assert build.wait(60) == "failed"
    return build


class Elements(HTMLParser):
    """Every start tag and its attributes, as a browser's tokenizer sees them."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def assert_inert(text: str) -> None:
    """No element or attribute that a hostile name could have injected."""
    parsed = Elements(text)
    names = {tag for tag, _ in parsed.tags}
    assert not names & {"img", "script", "b", "iframe", "object"}, names
    assert not [(t, a) for t, attrs in parsed.tags for a in attrs if a.startswith("on")]


@pytest.fixture(scope="module")
def finished_widget() -> BuildWidget:
    widget = BuildWidget(models.deep_residual(4), history=False).start()
    assert widget.wait(180) == "succeeded"
    return widget


def test_the_widget_bundle_carries_the_view_and_three_static_renderings(finished_widget: BuildWidget) -> None:
    data, metadata = finished_widget._repr_mimebundle_()
    view = data[WIDGET_VIEW]
    assert isinstance(view, dict) and view["model_id"] == finished_widget.model_id
    assert isinstance(metadata, dict)
    names = {row["name"] for row in finished_widget.timings()}
    html, text, markdown = data["text/html"], data["text/plain"], data["text/markdown"]
    assert isinstance(html, str) and isinstance(text, str) and isinstance(markdown, str)
    for name in names:
        assert name in html and name in text and name in markdown
    assert "Succeeded" in html and "Succeeded" in text and "**Succeeded**" in markdown
    assert re.search(rf"engine \d+\.\d{NB}(KiB|MiB)", html) and re.search(r"engine \d+\.\d (KiB|MiB)", text)
    assert "<script" not in html.lower() and "<details" in html and "<summary" in html
    assert len(HTML_DURATION.findall(html)) >= len(names)
    assert not re.search(r"\d (ms|s|KiB|MiB|B)\b", html)  # issue 39, eighth trial: no number parted from its unit
    assert text.startswith(f"BuildWidget('{finished_widget.build.source.label}'): Succeeded in ")


def test_plain_and_markdown_trees_are_indented_by_depth(finished_widget: BuildWidget) -> None:
    text = report.to_text(finished_widget)
    markdown = report.to_markdown(finished_widget)
    rows = finished_widget.timings()
    deepest = max(rows, key=lambda r: r["depth"])
    line = next(line for line in text.splitlines() if deepest["name"] in line)
    assert line.startswith("  " + "  " * deepest["depth"] + deepest["name"])
    assert DURATION.search(line)
    md_line = next(line for line in markdown.splitlines() if deepest["name"] in line)
    assert md_line.startswith("  " * deepest["depth"] + "- ")
    top = next(r for r in rows if r["depth"] == 0)
    assert f"\n- {top['name']} — " in markdown


def test_the_html_tree_nests_details_by_depth(finished_widget: BuildWidget) -> None:
    html = report.to_html_fragment(finished_widget)
    parsed = Elements(html)
    assert [t for t, _ in parsed.tags].count("details") >= 3
    assert "color-scheme:light dark" in html
    # every colour is set as a pair (a badge) or left to the page: readable on light and dark front ends
    for _, attrs in parsed.tags:
        style = attrs.get("style") or ""
        if "background:" in style:
            assert "color:#ffffff" in style or "color:#5f2120" in style


def test_hostile_names_errors_and_labels_are_escaped_everywhere() -> None:
    build = hostile_build()
    widget = BuildWidget(None, build=build)
    data, _ = widget._repr_mimebundle_()
    page = build.to_html()
    bundled, plain, markdown = data["text/html"], data["text/plain"], data["text/markdown"]
    assert isinstance(bundled, str) and isinstance(plain, str) and isinstance(markdown, str)
    for html in (bundled, page):
        assert_inert(html)
        assert "&lt;img src=x onerror=alert(1)&gt;" in html
        assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html  # the error text
        assert "child &amp; &lt;b&gt;bold&lt;/b&gt; &quot;quoted&quot; &#x27;single&#x27;" in html
    assert "Failed" in bundled and "Failed" in page
    assert "<img" not in markdown and "<script" not in markdown
    assert EVIL in plain  # plain text is shown as text: nothing to escape


def test_a_failed_build_shows_its_error() -> None:
    build = Build(b"this is not an ONNX model", isolation="thread", history=False, resources=False).start()
    assert build.wait(120) == "failed"
    fragment = report.to_html_fragment(build)
    assert "Failed" in fragment and 'class="trt-error"' in fragment
    assert escape(str(build.error).splitlines()[0][:40]) in fragment
    assert "Failed in " in report.to_text(build)


def test_a_running_build_says_its_output_is_a_snapshot() -> None:
    build = Build(models.deep_residual(200), isolation="thread", history=False, resources=False).start()
    try:
        assert build.status == "running"  # start() returns with the build running
        text = report.to_text(build)
        assert "Running at " in text and "snapshot" in text
        assert "Running" in report.to_html_fragment(build) and "snapshot" in report.to_markdown(build)
    finally:
        build.stop()
        build.wait(120)


def test_to_html_writes_a_standalone_report(finished_widget: BuildWidget, tmp_path: Path) -> None:
    path = tmp_path / "build.html"
    text = finished_widget.to_html(path)
    assert path.read_text(encoding="utf-8") == text
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text.lower()
    assert not re.search(r"(src|href)=\"(https?:)?//", text)  # nothing fetched from the network
    for needle in (
        "Succeeded",
        "Total time",
        "KiB",
        "onnx.ModelProto deep_residual",
        "Backend",
        "rtx",
        "strongly_typed=true",
        "<svg",
        'class="phase"',
        "TensorRT warnings and errors",
    ):
        assert needle in text, needle
    assert finished_widget.build.to_html().count("<details") == text.count("<details")


def test_the_report_compares_with_the_build_history_matched(tmp_path: Path) -> None:
    store = tmp_path / "history.sqlite"
    first = Build(models.deep_residual(4), history=store, isolation="thread").start()
    assert first.wait(120) == "succeeded"
    second = Build(models.deep_residual(4), history=store, isolation="thread").start()
    assert second.wait(120) == "succeeded"
    text = second.to_html()
    assert "Compared with the build of" in text and 'class="grid trt-history"' in text
    assert "(total)" in text
    assert "Compared with" not in first.to_html()  # no match: no section, no error


def _browser() -> Any:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    return sync_api


def _open_offline(browser: Any, path: Path, **context: Any) -> tuple[Any, list[str], list[str]]:
    """A page showing ``path`` with every non-file request aborted (and recorded), and dialogs recorded."""
    ctx = browser.new_context(**context)
    blocked: list[str] = []
    dialogs: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    page = ctx.new_page()

    def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.goto(path.as_uri())
    return page, blocked, dialogs


def test_the_report_works_offline_in_chromium(finished_widget: BuildWidget, tmp_path: Path) -> None:
    sync_api = _browser()
    path = tmp_path / "report.html"
    finished_widget.to_html(path)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page, blocked, dialogs = _open_offline(browser, path, viewport={"width": 1100, "height": 900})
            svg = page.locator("figure.trt-timeline svg")
            assert svg.is_visible()
            box = svg.bounding_box()
            assert box is not None and box["width"] > 300 and box["height"] > 30
            assert page.locator("figure.trt-timeline rect.phase").count() >= 5
            closed = page.locator("details.trt-phase:not([open])").first.element_handle()  # fixed, not re-queried
            assert closed is not None
            child = closed.query_selector(":scope > div > .trt-phase")
            assert child is not None and not child.is_visible()
            closed.query_selector(":scope > summary").click()
            assert closed.evaluate("d => d.open") is True
            assert child.is_visible()
            page.screenshot(path=str(ARTIFACTS / "report-light.png"), full_page=True)
            dark, _, _ = _open_offline(browser, path, color_scheme="dark", viewport={"width": 1100, "height": 900})
            assert dark.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
            dark.screenshot(path=str(ARTIFACTS / "report-dark.png"), full_page=True)
            assert blocked == [] and dialogs == []
        finally:
            browser.close()


def test_hostile_names_stay_text_in_chromium(tmp_path: Path) -> None:
    sync_api = _browser()
    build = hostile_build()
    path = tmp_path / "hostile.html"
    build.to_html(path)
    fragment = tmp_path / "fragment.html"
    fragment.write_text(report.to_html_fragment(build), encoding="utf-8")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for target in (path, fragment):
                page, blocked, dialogs = _open_offline(browser, target)
                page.wait_for_timeout(200)
                assert page.locator("img").count() == 0 and page.locator("body script").count() == 0
                assert EVIL in page.inner_text("body")
                assert dialogs == [] and blocked == []
        finally:
            browser.close()


def test_cli_writes_the_report_and_the_trace(onnx_path: Path, tmp_path: Path) -> None:
    html, trace = tmp_path / "b.html", tmp_path / "b.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "trt_widget",
            "build",
            str(onnx_path),
            "-o",
            str(tmp_path / "m.e"),
            "--report",
            str(html),
            "--trace",
            str(trace),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, TRT_WIDGET_HISTORY="off"),
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    assert "Succeeded" in html.read_text(encoding="utf-8")
    events = json.loads(trace.read_text(encoding="utf-8"))["traceEvents"]
    assert {e["ph"] for e in events} >= {"M", "b", "e", "C"}
    assert f"Report written to {html}" in run.stderr and f"Trace written to {trace}" in run.stderr


def test_cli_refuses_a_report_over_the_model_or_an_unwritable_one(
    onnx_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trt_widget.__main__ import main

    assert main(["build", str(onnx_path), "--report", str(onnx_path)]) == 2
    assert "is the model" in capsys.readouterr().err
    code = main(
        [
            "build",
            str(onnx_path),
            "-o",
            str(tmp_path / "m.e"),
            "--plain",
            "--trace",
            str(tmp_path / "missing" / "t.json"),
        ]
    )
    assert code == 1
    assert "cannot write --trace" in capsys.readouterr().err  # refused before the build: no engine was built
    assert not (tmp_path / "m.e").exists()
