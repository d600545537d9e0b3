"""P16-view: the widget's Engine view applying a 10,000-layer engine report, in headless Chromium.

Debian's /usr/bin/chromium via Playwright renders the shipped front end (``js/dist/bench.js``: the bundle's code
plus a view handle, as P7) with a fake anywidget model showing the Engine view, then sets the ``engine_json``
trait to the report of a 10,000-layer record (TensorRT for RTX's, from this machine's resnet50 build, names made
unique; ``EngineReport.to_dict`` as the widget's pump sends it) and times the trait's change event + switching to
the Engine view + forced layout (JSON parse, summary chips, the sorted table's rows in view). Median and p95 of
``--repeats`` (after 3 warm-ups); sorting by name, filtering and expanding a layer are timed beside it (info).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from _browser import bench_page
from _common import emit, figure, load_avg, median, percentile, print_table
from p7_frontend import DIST, FILES, HERE, PAGE
from p16_engine_report import record_of

from trt_widget import EngineReport
from trt_widget._snapshot import WIDGET_REPORT_BYTES

TARGET_MS = 100.0
VIEW_FILES = {**FILES, "/p16_view_page.js": (HERE / "p16_view_page.js", "text/javascript")}
VIEW_PAGE = PAGE.replace("/p7_page.js", "/p16_view_page.js")


def run(text: str, repeats: int) -> dict[str, Any]:
    if not (DIST / "bench.js").is_file():
        raise SystemExit("js/dist/bench.js is missing: `cd js && node build.mjs --bench` (run_all.py does it)")
    with bench_page(VIEW_PAGE, VIEW_FILES, "typeof window.runEngineBench === 'function'") as (page, chromium):
        result: dict[str, Any] = page.evaluate("([t, n]) => window.runEngineBench(t, n)", [[text], repeats])
    result["chromium"] = chromium
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument(
        "--record-blocks", type=int, default=None, help="deep_residual(N)'s layers, not resnet50's (smoke runs)"
    )
    args = parser.parse_args()
    load_start = load_avg()
    report = EngineReport.from_text(record_of(args.layers, args.record_blocks))
    text = json.dumps(report.to_dict(WIDGET_REPORT_BYTES))
    assert len(json.loads(text)["layers"]) == args.layers, "the widget's report lost layers"
    r = run(text, args.repeats)
    assert r["shown"] and r["layers"] == args.layers, (r["shown"], r["layers"])
    stats = {k: (median(r[k]), percentile(r[k], 95), max(r[k])) for k in ("apply", "scripting", "sort", "filter")}
    stats["expand"] = (median(r["expand"]), percentile(r["expand"], 95), max(r["expand"]))
    labels = {
        "apply": "engine_json arrives, Engine view shown + layout",
        "scripting": "  of which JS",
        "sort": "sort by name + layout",
        "filter": 'filter "conv" + layout',
        "expand": "expand a layer + layout",
    }
    print_table(
        f"P16-view: a {args.layers:,}-layer report in the Engine view (Chromium {r['chromium']}, "
        f"{len(text) / 1e6:.1f} MB of JSON, {r['rowsInDom']} rows in the DOM, {args.repeats} repeats)",
        ["what", "median ms", "p95 ms", "max ms"],
        [[labels[k], f"{m:.1f}", f"{p:.1f}", f"{x:.1f}"] for k, (m, p, x) in stats.items()],
    )
    apply_ms, apply_p95, _ = stats["apply"]
    emit(
        "p16_engine_view",
        {
            "P16-view": figure(
                round(apply_ms, 2),
                f"<= {TARGET_MS:g} ms (median)",
                apply_ms <= TARGET_MS,
                "ms",
                f"the Engine view applying a {args.layers:,}-layer report ({len(text) / 1e6:.1f} MB engine_json: "
                "parse, chips, table rows in view) + forced layout, headless Chromium, median of "
                f"{args.repeats}",
                p95_ms=round(apply_p95, 2),
                script_ms=round(stats["scripting"][0], 2),
                sort_ms=round(stats["sort"][0], 2),
                filter_ms=round(stats["filter"][0], 2),
                expand_ms=round(stats["expand"][0], 2),
                rows_in_dom=r["rowsInDom"],
                json_bytes=len(text),
            ),
        },
        chromium=r["chromium"],
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
