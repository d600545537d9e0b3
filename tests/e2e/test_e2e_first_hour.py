"""Issue 39's widget items in Chromium: the shipped bundle rendered on a page with a stand-in model holding the
states a build goes through (layout is what these items are about, and jsdom has none).

``TRT_WIDGET_STATIC`` names another bundle folder (main's, to see the "before"); ``TRT_WIDGET_SCREENSHOTS`` a
folder to save one PNG per state in (docs/screenshots/first-hour/ holds the ones looked at).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
STATIC = Path(os.environ.get("TRT_WIDGET_STATIC") or HERE.parents[1] / "trt_widget" / "static")
SHOTS = os.environ.get("TRT_WIDGET_SCREENSHOTS")
ORIGIN = "http://trtw.test"

PAGE = """<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="/{css}">
<style>body {{ margin: 0; padding: 12px; font-family: sans-serif; }} #out {{ width: {width}px; }}</style>
</head><body><div id="out"></div><script type="module">
function fakeModel(state) {{
  const listeners = new Map();
  const emit = (ev) => {{ for (const cb of [...(listeners.get(ev) || [])]) cb(); }};
  return {{
    sent: [],
    get: (k) => state[k],
    update(changes) {{
      const keys = Object.keys(changes).filter((k) => state[k] !== changes[k]);
      Object.assign(state, changes);
      for (const k of keys) emit(`change:${{k}}`);
    }},
    on(ev, cb) {{ if (!listeners.has(ev)) listeners.set(ev, []); listeners.get(ev).push(cb); }},
    off(ev, cb) {{ const l = listeners.get(ev) || []; const i = l.indexOf(cb); if (i >= 0) l.splice(i, 1); }},
    send(msg) {{ this.sent.push(msg); }},
    trigger: emit,
  }};
}}
const mod = await import("/{js}");
window.mount = (state) => {{
  window.model = fakeModel(state);
  const el = document.getElementById("out");
  el.replaceChildren();
  mod.default.render({{ model: window.model, el }});
}};
window.ready = true;
</script></body></html>"""


def phase(pid: int, name: str, parent: int | None, start: float, end: float | None, **kw: Any) -> dict[str, Any]:
    status = kw.pop("status", "running" if end is None else "done")
    return {
        "id": pid,
        "name": name,
        "parent": parent,
        "depth": 0,
        "step": kw.pop("step", 0),
        "num_steps": kw.pop("num_steps", 0),
        "start_s": start,
        "end_s": end,
        "status": status,
    }


def rtx_rows(running: bool) -> list[dict[str, Any]]:
    """The rows of a TensorRT for RTX build of a small model (names and shape as a real build reports them)."""
    end = None if running else 4.2
    rows = [
        phase(0, "Reading and parsing the model", None, 0.0, 0.08),
        phase(
            1,
            "Building engine",
            None,
            0.08,
            end,
            step=2 if running else 5,
            num_steps=6,
            status="running" if running else "finished-early",
        ),
        phase(2, "Cloning network graph", 1, 0.08, 0.09),
        phase(3, "Preparing graph for optimization", 1, 0.09, 0.12),
        phase(4, "Building engine from subgraph", 1, 0.12, end if running else 4.1),
        phase(5, "Computing profile costs", 4, 0.12, end if running else 4.1),
        phase(6, "Timing tactics", 5, 0.13, 0.2, step=2, num_steps=3, status="finished-early"),
        phase(7, "Determining refit engines", 5, 0.2, end if running else 4.05),
    ]
    if not running:
        rows.append(phase(8, "Serializing and saving the engine", None, 4.2, 4.3))
    return rows


def build_state(**kw: Any) -> dict[str, Any]:
    rows = kw.pop("rows")
    return {"status": "running", "elapsed_s": 5.0, "phases_json": json.dumps(rows), "phases_seq": 0, **kw}


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Any:
    width = getattr(request, "param", 900)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))

    def serve(route: Any) -> None:
        path = route.request.url[len(ORIGIN) + 1 :].split("?")[0]
        if path.startswith("page-"):
            kind = path[len("page-") : -len(".html")]
            body = PAGE.format(css=f"{kind}.css", js=f"{kind}.js", width=width)
            route.fulfill(status=200, content_type="text/html", body=body)
        elif path in ("widget.js", "matrix.js", "widget.css", "matrix.css"):
            kind = "text/javascript" if path.endswith(".js") else "text/css"
            route.fulfill(status=200, content_type=kind, body=(STATIC / path).read_bytes())
        else:
            route.fulfill(status=404, body="not found")

    pg.route(f"{ORIGIN}/**", serve)
    pg.errors = errors
    yield pg
    context.close()
    assert not errors, errors


def show(pg: Any, kind: str, state: dict[str, Any]) -> None:
    pg.goto(f"{ORIGIN}/page-{kind}.html")
    pg.wait_for_function("window.ready === true")
    pg.evaluate("s => window.mount(s)", state)
    pg.wait_for_timeout(150)


def shot(pg: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        pg.locator("#out").screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def box(pg: Any, selector: str) -> dict[str, float]:
    b = pg.locator(selector).first.bounding_box()
    assert b is not None, f"{selector} is not shown"
    return dict(b)


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["y"] < b["y"] + b["height"] - 0.5 and b["y"] < a["y"] + a["height"] - 0.5


def rows_under(pg: Any, selector: str) -> list[str]:
    """Names of the tree rows (inside the tree's visible box) that ``selector`` covers."""
    notice = box(pg, selector)
    tree = box(pg, ".trtw-tree")
    covered = []
    for row in pg.locator(".trtw-row").all():
        b = row.bounding_box()
        if b and b["y"] < tree["y"] + tree["height"] and overlaps(b, notice):
            covered.append(row.locator(".trtw-name").text_content())
    return covered


def test_item1_the_cancelling_notice_covers_no_row(page: Any) -> None:
    state = build_state(
        rows=rtx_rows(running=True),
        status="cancelling",
        cancel={"phase": "Determining refit engines", "requested_at_s": 3.0},
        status_detail="stopped by user",
    )
    show(page, "widget", state)
    assert "Determining refit engines" in page.locator(".trtw-notice").text_content()
    shot(page, "item1-cancelling")
    assert rows_under(page, ".trtw-notice") == []


def test_item1_the_unanswered_stop_notice_covers_no_row(page: Any) -> None:
    show(page, "widget", build_state(rows=rtx_rows(running=True)))
    page.locator("button.trtw-stop").click()
    page.wait_for_selector(".trtw-unacked:not([hidden])", timeout=10_000)
    shot(page, "item1-stop-unanswered")
    assert rows_under(page, ".trtw-unacked") == []


SIDEWAYS = "() => { const m = document.querySelector('.trtw-matrix'); return m.scrollWidth - m.clientWidth; }"
WATCH_LABEL = "Unnamed Network \u00b7 4500 layers \u00b7 input 1x8x8x8"


def watch_state(
    status: str, *, variant: str, engine_size: int, phase: dict[str, Any], note: str, detail: dict[str, Any]
) -> dict[str, Any]:
    """A watch list of two builds of ``fn()`` (both ``status``), the first expanded to show ``detail``."""
    rows = [
        {
            "id": i,
            "model": WATCH_LABEL,
            "variant": variant,
            "status": status,
            "detail": "",
            "elapsed_s": 5.0,
            "engine_size": engine_size,
            "error": "",
            "can_force": False,
            "phase": phase,
        }
        for i in (1, 2)
    ]
    return {
        "status": status,
        "title": "Watching fn() \u2014 2 builds",
        "note": note,
        "rows_json": json.dumps(rows),
        "expanded": [1],
        "details_json": json.dumps({"1": detail}),
        "comparison_json": "",
    }


@pytest.mark.parametrize("page", [1000], indirect=True)
def test_item2_a_watch_list_with_long_labels_fits_the_notebook(page: Any) -> None:
    """1400 px window, a notebook column of ~1000 px: nothing is pushed off to the right."""
    detail = build_state(rows=rtx_rows(running=True), status_detail="watching build 1")
    detail["resources"] = {"samples": [[0, 1e8], [1, 2e8]], "peak_rss": 2e8}
    running = {
        "name": "Determining refit engines (Building engine \u203a Computing profile costs)",
        "step": 0,
        "num_steps": 0,
    }
    state = watch_state(
        "running",
        variant="build 1 of fn() in notebook cell 3",
        engine_size=0,
        phase=running,
        note="Stop ends the build in its row; Stop all ends every build of the watch.",
        detail=detail,
    )
    show(page, "matrix", state)
    shot(page, "item2-watch-list")
    out = box(page, "#out")
    right = out["x"] + out["width"] + 0.5
    for selector in (".trtw-matrix", ".trtw-mx-row .trtw-stop", ".trtw-mx-size", ".trtw-mx-detail .trtw-row"):
        for el in page.locator(selector).all():
            b = el.bounding_box()
            assert b is not None and b["x"] + b["width"] <= right, (selector, b, out)
    overflow = page.evaluate(SIDEWAYS)
    assert overflow <= 1, f"the watch list scrolls sideways by {overflow} px"


def test_item3_a_succeeded_build_reads_done(page: Any) -> None:
    show(page, "widget", build_state(rows=rtx_rows(running=False), status="succeeded", elapsed_s=4.3))
    shot(page, "item3-succeeded")
    steps = [s.text_content() for s in page.locator(".trtw-row .trtw-steps").all()]
    assert "5/6" not in steps and "2/3" not in steps


def test_item4_rows_of_a_build_the_kernel_left_are_interrupted(page: Any) -> None:
    show(page, "widget", build_state(rows=rtx_rows(running=True)))
    page.evaluate("() => window.model.trigger('comm:close')")
    page.wait_for_timeout(150)
    shot(page, "item4-kernel-gone")
    assert page.locator('.trtw-row[data-status="running"]').count() == 0


def test_item5_the_timeline_has_a_legend_and_names_its_short_bars(page: Any) -> None:
    show(page, "widget", build_state(rows=rtx_rows(running=False), status="succeeded", elapsed_s=4.3))
    page.locator(".trtw-seg-btn", has_text="Timeline").click()
    page.wait_for_timeout(150)
    shot(page, "item5-timeline")
    legend = page.locator(".trtw-tl-legend")
    assert legend.is_visible()
    text = legend.text_content() or ""
    assert "done" in text and "Top lane" in text
    # every bar carries its name or a number the legend names
    labels = [t.text_content() for t in page.locator(".trtw-tl-bar text").all() if t.is_visible()]
    numbered = [x for x in labels if x and x.isdigit()]
    assert numbered and all(f"{n} " in text for n in numbered)
    assert "Too short to label: Cloning network graph (10\u00a0ms)" in text


def test_item5_the_view_switch_stays_in_the_top_right_corner(page: Any) -> None:
    show(page, "widget", build_state(rows=rtx_rows(running=True)))
    short = box(page, ".trtw-seg")
    long_detail = "waiting for a builder process; " * 12
    page.evaluate("d => window.model.update({status_detail: d})", long_detail)
    page.wait_for_timeout(150)
    shot(page, "item5-long-header")
    moved = box(page, ".trtw-seg")
    assert (moved["x"], moved["y"]) == (short["x"], short["y"])


def test_item5_the_view_switch_stays_put_when_the_build_ends(page: Any) -> None:
    """Issue 39, second pass: the Tree/Timeline switch moved ~64 px right when Stop disappeared at the end;
    fourth pass: it moved ~65 px left when a succeeded build's Engine button came."""
    show(page, "widget", build_state(rows=rtx_rows(running=True)))
    assert page.locator(".trtw-stop").is_visible()
    assert not page.locator(".trtw-seg-btn", has_text="Engine").is_visible()
    running = box(page, ".trtw-seg")
    buttons = [box(page, f".trtw-seg-btn:has-text('{b}')") for b in ("Tree", "Timeline")]
    ended = build_state(rows=rtx_rows(running=False), status="succeeded", elapsed_s=4.3)
    ended["engine_json"] = json.dumps(ENGINE_REPORT)
    page.evaluate("s => window.model.update(s)", ended)
    page.locator(".trtw-seg-btn", has_text="Engine").wait_for(state="visible")
    shot(page, "item5-ended-header")
    assert not page.locator(".trtw-stop").is_visible()
    done = box(page, ".trtw-seg")
    assert (done["x"], done["y"], done["width"]) == (running["x"], running["y"], running["width"])
    assert [box(page, f".trtw-seg-btn:has-text('{b}')") for b in ("Tree", "Timeline")] == buttons


def test_item5_an_expected_reason_is_said_once(page: Any) -> None:
    why = "TensorRT for RTX found no usable GPU driver: expected on a machine without an NVIDIA GPU"
    logs = [
        {
            "severity": "ERROR",
            "message": "[cudaResources.cpp::ScopedCudaStream::25] Error Code 1",
            "t": 0.1,
            "expected": why,
        },
        {
            "severity": "ERROR",
            "message": "[checkMacros.cpp::catchCudaError::250] Error Code 1",
            "t": 0.1,
            "expected": why,
        },
        {"severity": "WARNING", "message": "The timing cache will not be used!", "t": 0.2, "expected": "RTX ignores"},
        {"severity": "WARNING", "message": "Failed to deserialize timing cache.", "t": 0.2, "expected": "RTX ignores"},
    ]
    show(page, "widget", build_state(rows=rtx_rows(running=False), status="succeeded", elapsed_s=4.3, logs=logs))
    page.locator(".trtw-logs-summary").click()
    shot(page, "item5-log")
    shown = [w.text_content() for w in page.locator(".trtw-log-why").all() if w.is_visible()]
    assert sorted(shown) == sorted([why, "RTX ignores"]), shown


def test_item17_the_service_page_cancels_a_build_and_downloads_an_engine(browser: Any, tmp_path: Path) -> None:
    """Issue 39 item 17, against a real ``trt-widget serve`` and real RTX builds: Cancel on a running build's
    row cancels it; a succeeded build's row downloads the same engine bytes the API serves."""
    import httpx

    from trt_widget.models import deep_residual, to_bytes
    from trt_widget.serve import ServerThread

    with ServerThread(data=tmp_path / "data", max_concurrent=2) as server:
        api = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=60)
        small = api.post("/builds", content=to_bytes(deep_residual(2)), params={"name": "small"}).json()["id"]
        for _ in range(600):  # polling the API as a client would (a build of ~1 s)
            if api.get(f"/builds/{small}").json()["status"] == "succeeded":
                break
            time.sleep(0.2)
        # a build of ~10 s (a ~8 s step): still running when the page has loaded and its Cancel is clicked on a
        # loaded runner (deep_residual(400)'s few seconds could end first, and its row then has no Cancel button)
        long = api.post("/builds", content=to_bytes(deep_residual(1000)), params={"name": "long"}).json()["id"]
        context = browser.new_context(accept_downloads=True)
        pg = context.new_page()
        try:
            pg.goto(f"{server.url}/?token={server.token}")
            row = pg.locator("tr", has=pg.locator("code", has_text=long))
            row.locator("button", has_text="Cancel").click(timeout=60_000)
            row.locator("td.cancelled").wait_for(timeout=120_000)
            assert api.get(f"/builds/{long}").json()["status"] == "cancelled"
            done = pg.locator("tr", has=pg.locator("code", has_text=small))
            with pg.expect_download(timeout=60_000) as info:
                done.locator("button", has_text="Download engine").click()
            saved = tmp_path / "saved.engine"
            info.value.save_as(saved)
            assert info.value.suggested_filename == "small.engine"  # the model's name, not the build id
            assert saved.read_bytes() == api.get(f"/builds/{small}/engine").content
            if SHOTS:
                pg.screenshot(path=str(Path(SHOTS) / "item17-service-page.png"))
        finally:
            context.close()
            api.close()


CLIPPED = """sel => [...document.querySelectorAll(sel)].filter((el) => el.scrollWidth > el.clientWidth + 0.5)
  .map((el) => el.textContent)"""
BROKEN_WORDS = """sel => {
  const broken = [];
  for (const cell of document.querySelectorAll(sel)) {
    const text = cell.firstChild && cell.firstChild.nodeType === 3 ? cell.firstChild : null;
    const node = text || cell;
    const walker = document.createTreeWalker(node.nodeType === 3 ? cell : node, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      const re = /\\S+/g;
      for (let m = re.exec(t.data); m; m = re.exec(t.data)) {
        const range = document.createRange();
        range.setStart(t, m.index);
        range.setEnd(t, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("page", [1000, 760], indirect=True)
def test_item2_an_expanded_watch_row_shows_whole_step_counts_and_whole_words(page: Any) -> None:
    """Issue 39 item 2, second pass: at 1400 px the expanded row's Steps column clipped "13502/13502" to
    "13502/1350", and the variant cell broke its words mid-word."""
    rows_detail = rtx_rows(running=False)
    rows_detail[6] = phase(6, "Timing tactics", 5, 0.13, 0.2, step=13502, num_steps=13502)
    detail = build_state(rows=rows_detail, status="succeeded", status_detail="")
    state = watch_state(
        "succeeded",
        variant="optimization_level=5 \u00b7 builder_optimization_level \u00b7 fn() in notebook cell 3",
        engine_size=98_000_000,
        phase={"name": "", "step": 0, "num_steps": 0},
        note="",
        detail=detail,
    )
    show(page, "matrix", state)
    shot(page, "item2-watch-steps")
    steps = [t for t in page.locator(".trtw-mx-detail .trtw-steps").all_text_contents() if t]
    assert "13502/13502" in steps, steps
    assert page.evaluate(CLIPPED, ".trtw-mx-detail .trtw-steps") == []
    assert page.evaluate(BROKEN_WORDS, ".trtw-mx-variant") == []
    assert page.evaluate(BROKEN_WORDS, ".trtw-mx-model") == []
    assert page.evaluate(SIDEWAYS) <= 1


ENGINE_REPORT = {
    "layers": [
        {
            "name": f"/layer{i}/Conv + /layer{i}/Relu",
            "type": "CaskConvolution",
            "precision": "FP32\u2192FP16",
            "format": "",
            "tactic": "sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x128x32",
            "onnx_nodes": [f"/layer{i}/Conv", f"/layer{i}/Relu"],
        }
        for i in range(12)
    ],
    "memory": {"weights": 1 << 20, "engine_size": 2 << 20},
    "total_layers": 12,
    "notes": [],
    "source": "log",
}


@pytest.mark.parametrize("page", [1100, 760], indirect=True)
def test_the_engine_views_column_labels_are_never_clipped(page: Any) -> None:
    """Issue 39, second pass: at 1400 px the Engine view's header showed "fus…" for "fused"; each label, with
    its sort arrow, is whole (sorted up and down)."""
    state = build_state(rows=rtx_rows(running=False), status="succeeded", elapsed_s=4.3)
    state["engine_json"] = json.dumps(ENGINE_REPORT)
    show(page, "widget", state)
    page.locator(".trtw-seg-btn", has_text="Engine").click()
    head = ".trtw-engine-head .trtw-engine-cell"
    page.wait_for_selector(head)
    labels = page.locator(head).all_text_contents()
    assert labels == ["#", "layer", "type", "precision", "tactic", "fused"], labels
    clipped = {}
    for key in ("index", "name", "type", "precision", "tactic", "nodes", "nodes"):  # fused: up, then down
        page.locator(f".trtw-engine-head .trtw-engine-{key}").click()
        clipped[key] = page.evaluate(CLIPPED, head)
    assert page.locator(".trtw-engine-head .trtw-engine-nodes").get_attribute("aria-sort") == "descending"
    width = page.evaluate("() => document.getElementById('out').offsetWidth")
    shot(page, f"engine-header-{width}px")
    assert all(found == [] for found in clipped.values()), clipped


def test_fourth_trial_the_service_page_shows_why_a_build_failed(browser: Any, tmp_path: Path) -> None:
    """Issue 39 (fourth trial): a failed build's row says why, under its status, as text: a real ``serve`` and a
    real RTX parser refusing a file that is not ONNX, named with markup."""
    import httpx

    from trt_widget.serve import ServerThread

    with ServerThread(data=tmp_path / "data", max_concurrent=1) as server:
        api = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=60)
        bad = api.post("/builds", content=b"<img src=x onerror=alert(1)>", params={"name": "<b>bad</b>"}).json()["id"]
        for _ in range(600):
            said = api.get(f"/builds/{bad}").json()
            if said["status"] == "failed":
                break
            time.sleep(0.2)
        reason = said["error"] or said["detail"]
        assert said["status"] == "failed" and reason, said
        pg = browser.new_page()
        try:
            pg.goto(f"{server.url}/?token={server.token}")
            row = pg.locator("tr", has=pg.locator("code", has_text=bad))
            why = row.locator("td.failed .why")
            why.wait_for(timeout=60_000)
            assert why.text_content() == reason
            assert row.locator("b, img").count() == 0  # the name and the reason are text, never markup
            if SHOTS:
                pg.screenshot(path=str(Path(SHOTS) / "fourth-serve-failed.png"))
        finally:
            pg.close()
            api.close()


OUT_WIDTH = "() => document.getElementById('out').offsetWidth"


def matrix_comparison_state() -> dict[str, Any]:
    """A matrix of ResNet-50 at optimisation levels 0, 3 and 5, all ended: the first build's builder was cold."""
    names = ["Building engine", "Timing tactics", "Determining refit engines", "Serializing and saving the engine"]
    builds = []
    rows = []
    for i, (level, build_s, cold) in enumerate([(0, 1.412, True), (3, 1.206, False), (5, 1.199, False)]):
        variant = f"optimization_level={level}"
        phases = {
            n: 0.2 + 0.011 * (k + 1) * (level + 1) + (0.19 if cold and k == 0 else 0) for k, n in enumerate(names)
        }
        builds.append(
            {
                "id": i,
                "model": "resnet50.onnx",
                "variant": variant,
                "status": "succeeded",
                "build_s": build_s,
                "start_up_s": 0.85 if cold else 0.0,
                "cold_builder": cold,
                "engine_size": 102_662_196 + 4096 * level,
                "phases": phases,
            }
        )
        rows.append(
            {
                "id": i,
                "model": "resnet50.onnx",
                "variant": variant,
                "status": "succeeded",
                "detail": "",
                "elapsed_s": build_s,
                "engine_size": 102_662_196,
                "error": "",
                "can_force": False,
                "phase": None,
                "started": True,
            }
        )
    return {
        "status": "succeeded",
        "rows_json": json.dumps(rows),
        "expanded": [],
        "details_json": "{}",
        "comparison_json": json.dumps({"builds": builds}),
    }


SCROLLS_ITSELF = """() => { const c = document.querySelector('.trtw-mx-compare');
  return getComputedStyle(c).overflowX === 'auto' && c.scrollWidth > c.clientWidth + 1; }"""


@pytest.mark.parametrize("page", [1000, 760, 700], indirect=True)
def test_seventh_trial_the_matrix_comparison_fits_the_notebook(page: Any) -> None:
    """Issue 39, seventh trial: at 1400 px with the file browser open (an output area ~1000 px wide), the
    Comparison's "largest phase differences" ran past the output area's right edge, cut. Now it fits, wrapping
    between words (and names at their parts); down to 700 px without scrolling sideways (ninth trial)."""
    show(page, "matrix", matrix_comparison_state())
    width = page.evaluate(OUT_WIDTH)
    shot(page, f"seventh-comparison-{width}")
    table = page.locator(".trtw-mx-compare-table")
    assert table.is_visible()
    assert "first build in a new or idle builder process" in table.inner_text()
    assert page.evaluate(SIDEWAYS) <= 1  # the widget as a whole never scrolls sideways
    assert page.evaluate(CLIPPED, ".trtw-mx-compare-table td") == []
    # every cell wraps between words (or after a hyphen), never inside one
    between_words = BROKEN_WORDS.replace("\\S+", "[^\\s-]+")
    assert between_words != BROKEN_WORDS
    assert page.evaluate(between_words, ".trtw-mx-compare-table td") == []
    assert not page.evaluate(SCROLLS_ITSELF)
    right = box(page, "#out")["x"] + box(page, "#out")["width"] + 0.5
    for cell in page.locator(".trtw-mx-compare-table td, .trtw-mx-compare-table th").all():
        b = cell.bounding_box()
        assert b is not None and b["x"] + b["width"] <= right, (cell.text_content(), b, right)


@pytest.mark.parametrize("page", [1000, 760], indirect=True)
def test_seventh_trial_the_delta_heading_names_the_past_build_and_sits_over_its_column(page: Any) -> None:
    """Issue 39, seventh trial: "Δ last build +189 ms" on a first build in a fresh venv; the heading now says when
    the past build was made, on one line, over the deltas' column."""
    rows = rtx_rows(running=False)
    deltas = {str(r["id"]): 0.5 for r in rows if r["parent"] is None and (r["end_s"] or 0) - r["start_s"] > 0.5}
    state = build_state(rows=rows, status="succeeded", elapsed_s=4.3, history_delta=deltas)
    state["history_basis"] = {"created": time.time() - 3600, "said": "build of 2026-12-06 14:30, 4.1 s"}
    show(page, "widget", state)
    shot(page, f"seventh-delta-heading-{page.evaluate(OUT_WIDTH)}")
    head = page.locator(".trtw-colhead-delta")
    assert head.text_content().startswith("\u0394 vs ")
    assert "per user" in (head.get_attribute("title") or "")
    notes = [n for n in page.locator(".trtw-row .trtw-note").all() if n.text_content()]
    assert notes, "no delta shown"
    h, n = head.bounding_box(), notes[0].bounding_box()
    assert h is not None and n is not None
    assert h["height"] < 2 * n["height"] + 2  # one line
    assert abs((h["x"] + h["width"]) - (n["x"] + n["width"])) <= 2, (h, n)  # right-aligned over its column
    # and the next heading starts where its column does: the two grids line up
    progress = page.locator(".trtw-colhead > :nth-child(3)").bounding_box()
    bar = page.locator(".trtw-row .trtw-bar").first.bounding_box()
    assert progress is not None and bar is not None and abs(progress["x"] - bar["x"]) <= 2, (progress, bar)


# -- the eighth newcomer trial ------------------------------------------------------------------------------------

PARTED = """sel => {
  const parted = [];
  const re = /\\d[\\d.,]*[ \\u00a0](?:ms|s|min|B|KiB|MiB|GiB|TiB|%)(?!\\w)/g;
  for (const root of document.querySelectorAll(sel)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      re.lastIndex = 0;
      for (let m = re.exec(t.data); m; m = re.exec(t.data)) {
        const range = document.createRange();
        range.setStart(t, m.index);
        range.setEnd(t, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (lines.size > 1) parted.push(m[0]);
      }
    }
  }
  return parted;
}"""
SET_WIDTH = "w => { document.getElementById('out').style.width = w + 'px'; }"


def parted_at_widths(pg: Any, selector: str, widths: range) -> dict[int, list[str]]:
    """Each width of the output area at which a number in ``selector`` wrapped apart from its unit."""
    found = {}
    for width in widths:
        pg.evaluate(SET_WIDTH, width)
        pg.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        parted = pg.evaluate(PARTED, selector)
        if parted:
            found[width] = parted
    return found


def subgraph_comparison_state() -> dict[str, Any]:
    """The trial's matrix: three identical variants and a failed one (optimisation level 9)."""
    state = matrix_comparison_state()
    builds = json.loads(state["comparison_json"])["builds"]
    for b, d in zip(builds, (0.0, -0.373, 0.2126), strict=True):
        b["phases"]["Building engine from subgraph"] = 1.0 + d
        b["phases"]["Reading and parsing the model"] = 0.05 + d / 7
    reason = "variant 'bad' of resnet50.onnx: optimization_level must be an integer 0..5, got 9"
    builds.append({**builds[1], "id": 3, "variant": "optimization_level=9", "status": "failed", "build_s": 0.043})
    builds[3].update(phases={}, engine_size=None, reason=reason, cold_builder=False)
    rows = json.loads(state["rows_json"])
    rows.append({**rows[1], "id": 3, "variant": "optimization_level=9", "status": "failed", "error": reason})
    rows[3].update(engine_size=0, elapsed_s=0.043)
    return {**state, "rows_json": json.dumps(rows), "comparison_json": json.dumps({"builds": builds})}


def test_eighth_trial_the_comparison_never_parts_a_number_from_its_unit(page: Any) -> None:
    """Issue 39, eighth trial: at 1400 px the Comparison's "largest phase differences" read "Building engine from
    subgraph −373 / ms". At any width of the output area every number keeps its unit on its line."""
    show(page, "matrix", subgraph_comparison_state())
    shot(page, "eighth-comparison-900")
    assert parted_at_widths(page, ".trtw-mx-compare-table td", range(700, 1201, 6)) == {}
    assert "Building engine from subgraph +373\u00a0ms" in page.locator(".trtw-mx-compare-table").inner_text()


@pytest.mark.parametrize("page", [1000], indirect=True)
def test_eighth_trial_a_failed_build_says_why_in_the_comparison_and_its_row(page: Any) -> None:
    """Issue 39, eighth trial: the list cut the reason to "optimiza…" (a tooltip held the rest) and the Comparison
    said only "failed after 43 ms". Now the list row wraps it and the Comparison row says it."""
    show(page, "matrix", subgraph_comparison_state())
    shot(page, "eighth-failed-reason-1000")
    reason = "optimization_level must be an integer 0..5, got 9"
    row = page.locator('.trtw-mx-compare-table tr[data-build="3"]')
    assert reason in row.inner_text() and "failed after 43\u00a0ms" in row.inner_text()
    listed = page.locator('.trtw-mx-row[data-build="3"] .trtw-mx-phase-name')
    assert page.evaluate(CLIPPED, '.trtw-mx-row[data-build="3"] .trtw-mx-phase-name') == []
    b = listed.bounding_box()
    assert b is not None and b["height"] > 1.5 * box(page, '.trtw-mx-row[data-build="0"] .trtw-badge')["height"]


def test_eighth_trial_the_timeline_keeps_each_duration_with_its_unit(page: Any) -> None:
    """Issue 39, eighth trial: "Too short to label: … Timing graph nodes (0 / ms)" wrapped between number and unit."""
    rows = rtx_rows(running=False)
    for i, name in enumerate(["Timing graph nodes", "Computing costs", "Choosing tactics", "Fusing layers"]):
        rows.append(phase(20 + i, name, 5, 0.2 + i * 1e-4, 0.2 + i * 1e-4))
    show(page, "widget", build_state(rows=rows, status="succeeded", elapsed_s=4.3))
    page.locator(".trtw-seg-btn", has_text="Timeline").click()
    page.wait_for_timeout(150)
    shot(page, "eighth-timeline")
    assert parted_at_widths(page, ".trtw-tl-legend", range(300, 1001, 5)) == {}
    assert "Timing graph nodes (0\u00a0ms)" in (page.locator(".trtw-tl-legend").text_content() or "")


@pytest.mark.parametrize("page", [560, 440], indirect=True)
def test_eighth_trial_a_narrow_widget_shows_whole_step_counts(page: Any) -> None:
    """Issue 39, eighth trial: a 900 px JupyterLab window with the file browser open showed "4502/45…" in the
    running tree's Steps column. The column is as wide as its longest count; names shorten instead."""
    rows = rtx_rows(running=True)
    rows[6] = phase(6, "Timing tactics", 5, 0.13, None, step=4502, num_steps=4502)
    rows.append(phase(9, "Measuring tactic time", 6, 0.2, None, step=13502, num_steps=13503))
    show(page, "widget", build_state(rows=rows))
    shot(page, f"eighth-narrow-steps-{page.evaluate(OUT_WIDTH)}")
    steps = [t for t in page.locator(".trtw-row .trtw-steps").all_text_contents() if t]
    assert "4502/4502" in steps and "13502/13503" in steps, steps
    assert page.evaluate(CLIPPED, ".trtw-row .trtw-steps, .trtw-row .trtw-time") == []
    heading = page.locator(".trtw-colhead > :nth-child(4)").bounding_box()
    cell = page.locator(".trtw-row .trtw-steps").first.bounding_box()
    assert heading is not None and cell is not None and abs(heading["x"] - cell["x"]) <= 1  # one grid still
    out = box(page, "#out")
    assert box(page, ".trtw-tree")["x"] + box(page, ".trtw-tree")["width"] <= out["x"] + out["width"] + 0.5


SERVE_BUILDS = [
    {
        "id": f"b{i:04d}",
        "name": name,
        "status": "succeeded",
        "phase": None,
        "elapsed_s": 1.2 + i,
        "engine_bytes": size,
        "detail": "",
        "error": "",
    }
    for i, (name, size) in enumerate(
        [
            ("resnet50-with-a-rather-long-experiment-name-v2.onnx", 685_875),
            ("a.onnx", 102_624_652),
            ("transformer_encoder_layer_stack_12_heads.onnx", 3 << 30),
        ]
    )
]


def test_eighth_trial_the_service_page_keeps_sizes_on_one_line(browser: Any) -> None:
    """Issue 39, eighth trial: the ``serve`` page's engine column read "669.8 / KiB" at 1200 px."""
    from trt_widget.serve._page import page as service_page

    response = service_page()
    body = bytes(response.body)
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
    listing = json.dumps({"builds": SERVE_BUILDS, "running": 0, "max_concurrent": 1})
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    pg = context.new_page()

    def serve(route: Any) -> None:
        path = route.request.url[len(ORIGIN) :].split("?")[0]
        if path == "/":
            route.fulfill(status=200, headers=headers, body=body)
        elif path == "/builds":
            route.fulfill(status=200, content_type="application/json", body=listing)
        else:
            route.fulfill(status=404, body="{}")

    pg.route(f"{ORIGIN}/**", serve)
    try:
        pg.goto(f"{ORIGIN}/?token=t")
        pg.locator("td.num", has_text="KiB").wait_for()
        parted = {}
        for width in range(480, 1201, 20):
            pg.set_viewport_size({"width": width, "height": 800})
            pg.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
            found = pg.evaluate(PARTED, "#builds td")
            if found:
                parted[width] = found
        if SHOTS:
            pg.set_viewport_size({"width": 1200, "height": 800})
            pg.screenshot(path=str(Path(SHOTS) / "eighth-serve-sizes.png"))
        assert parted == {}
        assert "669.8\u00a0KiB" in pg.locator("#builds").inner_text()
    finally:
        context.close()


# -- the ninth newcomer trial -------------------------------------------------------------------------------------


def two_models_state(r50_started: bool) -> dict[str, Any]:
    """The trial's matrix: ``deep_residual(1000)`` and ResNet-50 at optimisation level 0, both ended; ResNet-50
    either succeeded too or was stopped while queued (so it never started)."""
    variant = "optimization_level=0"
    reason = "never started: stopped by user (Stop) while it was queued"
    deep: dict[str, Any] = {"id": 0, "model": "deep", "variant": variant, "status": "succeeded"}
    r50: dict[str, Any] = {"id": 1, "model": "r50", "variant": variant, "status": "succeeded"}
    deep["engine_size"], r50["engine_size"] = 6_396_000, 102_662_196
    rows, builds = [], []
    timed: list[tuple[dict[str, Any], float, float | None, float]] = [(deep, 10.3, 10.2, 0.147), (r50, 1.0, 1.0, 0.0)]
    if not r50_started:
        r50.update(status="cancelled", engine_size=None)
        timed[1] = (r50, 0.0, None, 0.0)
    for b, elapsed, build_s, start_up in timed:
        rows.append(
            {
                **b,
                "engine_size": b["engine_size"] or 0,
                "detail": "",
                "elapsed_s": elapsed,
                "error": "" if b["status"] == "succeeded" else reason,
                "can_force": False,
                "phase": None,
                "started": b is deep or r50_started,
            }
        )
        phases = {"Building engine": build_s * 0.9, "Timing tactics": build_s * 0.5} if build_s else {}
        builds.append(
            {
                **b,
                "group": b["model"],
                "build_s": build_s,
                "elapsed_s": elapsed,
                "start_up_s": start_up,
                "cold_builder": b is deep,
                "phases": phases,
                "reason": "" if b["status"] == "succeeded" else reason,
            }
        )
    return {
        "status": "done",
        "rows_json": json.dumps(rows),
        "expanded": [],
        "details_json": "{}",
        "comparison_json": json.dumps({"builds": builds}),
    }


NUMBERS = ".trtw-mx-elapsed, .trtw-mx-size, .trtw-mx-compare-table td:nth-child(n + 4):nth-last-child(n + 2)"


@pytest.mark.parametrize("page", [700, 718], indirect=True)
@pytest.mark.parametrize("r50_started", [False, True], ids=["r50-stopped-queued", "both-succeeded"])
def test_ninth_trial_a_two_model_matrix_fits_a_900_px_window(page: Any, r50_started: bool) -> None:
    """Issue 39, ninth trial: in a 900 px JupyterLab window (a 718 px output area) the matrix of two models, one
    stopped while queued, was 755 px wide: the engine column read "engin" / "6.1 Mi" and the Comparison's last
    column was reachable only by scrolling sideways (724 px in 702 with both succeeded). Names and words wrap or
    shorten now; every number stays whole inside the output area."""
    show(page, "matrix", two_models_state(r50_started))
    width = page.evaluate(OUT_WIDTH)
    shot(page, f"ninth-two-models-{'both' if r50_started else 'stopped'}-{width}")
    assert page.evaluate(SIDEWAYS) <= 1
    assert not page.evaluate(SCROLLS_ITSELF)
    assert page.evaluate(CLIPPED, f"{NUMBERS}, .trtw-mx-table th") == []
    assert page.evaluate(PARTED, NUMBERS) == []
    assert page.locator('.trtw-mx-row[data-build="0"] .trtw-mx-size').text_content() == "6.1\u00a0MiB"
    out = box(page, "#out")
    right = out["x"] + out["width"] + 0.5
    for cell in page.locator(".trtw-mx-table tr:not([hidden]) > td, .trtw-mx-table th").all():
        b = cell.bounding_box()
        assert b is not None and b["x"] + b["width"] <= right, (cell.text_content(), b, right)
    compare = page.locator(".trtw-mx-compare-table").inner_text()
    assert "6.1\u00a0MiB" in compare and "10.2\u00a0s" in compare
    assert ("baseline" if r50_started else "never started") in compare
