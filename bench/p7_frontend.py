"""P7: front-end time to apply one row update of a 1,200-instance tree (``--instances``), in headless Chromium.

Debian's /usr/bin/chromium via Playwright renders ``js/dist/bench.js`` (the shipped bundle's code plus a view
handle, served through ``page.route``) with a fake anywidget model, then applies ~50 updates, each the 120 rows
that changed sent as the widget's pump sends them (``phases_delta``), timing model update + change events +
forced layout (``el.offsetHeight``).
Scenarios: tree as first shown (runs of same-name siblings collapsed into groups), tree fully expanded
(long lists render only the rows in view), and the timeline view.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from _browser import bench_page
from _common import ROOT, emit, figure, load_avg, median, percentile, print_table

TARGET_MS = 16.0
STATIC = ROOT / "trt_widget" / "static"
DIST = ROOT / "js" / "dist"  # `cd js && npm run build` writes the benchmark bundle here (the shipped code + createView)
HERE = Path(__file__).resolve().parent

FILES = {
    "/bench.js": (DIST / "bench.js", "text/javascript"),
    "/widget.css": (STATIC / "widget.css", "text/css"),
    "/p7_page.js": (HERE / "p7_page.js", "text/javascript"),
}
PAGE = """<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="/widget.css">
<script type="module" src="/p7_page.js"></script></head><body></body></html>"""


SOURCE = DIST / "bench.debug.js"  # unminified, for readable profiles (--profile)


def top_self_time(profile: dict[str, Any], limit: int = 12) -> list[tuple[float, str]]:
    """(ms, function) with the most self time in a CDP CPU profile."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    deltas = profile.get("timeDeltas", [])
    spent: dict[str, float] = {}
    for node_id, delta in zip(profile.get("samples", []), deltas, strict=False):  # CDP: equal when both present
        frame = nodes[node_id]["callFrame"]
        where = f"{frame['functionName'] or '(anonymous)'} {frame['url'].rsplit('/', 1)[-1]}:{frame['lineNumber'] + 1}"
        spent[where] = spent.get(where, 0.0) + delta / 1000.0
    return sorted(((ms, name) for name, ms in spent.items()), reverse=True)[:limit]


def run(instances: int, updates: int, changed: int, profile: str | None = None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    files = {**FILES, "/bench.js": (SOURCE, "text/javascript")} if profile else FILES
    with bench_page(PAGE, files, "window.benchReady === true") as (page, chromium):
        for scenario in ("tree", "expanded", "timeline"):
            cdp = None
            if scenario == profile:
                cdp = page.context.new_cdp_session(page)
                cdp.send("Profiler.enable")
                cdp.send("Profiler.setSamplingInterval", {"interval": 100})
                cdp.send("Profiler.start")
            result = page.evaluate(
                "([s, n, u, c]) => window.runBench(s, n, u, c)", [scenario, instances, updates, changed]
            )
            if cdp is not None:
                top = top_self_time(cdp.send("Profiler.stop")["profile"])
                print_table(
                    f"CPU profile of the {scenario!r} scenario (self time, whole run incl. setup)",
                    ["ms", "function"],
                    [[f"{ms:.1f}", name] for ms, name in top],
                )
            out[scenario] = result
    out["_version"] = {"chromium": chromium}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--instances", type=int, default=1_200)
    parser.add_argument("--updates", type=int, default=50)
    parser.add_argument("--changed", type=int, default=120)
    parser.add_argument(
        "--profile",
        choices=["tree", "expanded", "timeline"],
        default=None,
        help="print a CPU profile (CDP) of one scenario",
    )
    args = parser.parse_args()
    load_start = load_avg()
    if args.profile:
        print("--profile: serving the unminified js/dist/bench.debug.js so the profile names functions")
    raw = run(args.instances, args.updates, args.changed, args.profile)
    chromium = raw.pop("_version")["chromium"]
    stats = {
        s: {
            "median_ms": median(r["times"]),
            "p95_ms": percentile(r["times"], 95),
            "max_ms": max(r["times"]),
            "script_ms": median(r["scripting"]),
            "rows_in_dom": r["rowsInDom"],
            "parse_ms": median(r["parse"]),
            "json_bytes": r["bytes"],
        }
        for s, r in raw.items()
    }
    labels = {
        "tree": "tree as first shown (groups collapsed)",
        "expanded": "tree, every group expanded",
        "timeline": "timeline view",
    }
    print_table(
        f"P7 apply one update of a {args.instances:,}-instance tree, {args.changed} rows changed "
        f"(Chromium {chromium}, {args.updates} updates)",
        [
            "scenario",
            "rows (bars) in DOM",
            "median ms",
            "p95 ms",
            "max ms",
            "of which JS (median)",
            "JSON.parse ms (not timed)",
        ],
        [
            [
                labels[s],
                v["rows_in_dom"],
                f"{v['median_ms']:.2f}",
                f"{v['p95_ms']:.2f}",
                f"{v['max_ms']:.2f}",
                f"{v['script_ms']:.2f}",
                f"{v['parse_ms']:.2f}",
            ]
            for s, v in stats.items()
        ],
    )

    def fig(scenario: str) -> dict[str, Any]:
        v = stats[scenario]
        return figure(
            round(v["median_ms"], 2),
            f"< {TARGET_MS:g} ms (median and p95)",
            v["median_ms"] < TARGET_MS and v["p95_ms"] < TARGET_MS,
            "ms",
            f"apply one phases update ({args.changed} of {args.instances:,} rows changed) + forced layout, "
            f"{labels[scenario]}",
            **{k: round(x, 3) if isinstance(x, float) else x for k, x in v.items()},
        )

    suffix = "" if args.instances == 1_200 else f"-{args.instances}"  # e.g. P7-expanded-10000 from a second run
    emit(
        "p7_frontend" + suffix.replace("-", "_"),
        {f"P7{suffix}": fig("tree"), f"P7-expanded{suffix}": fig("expanded"), f"P7-timeline{suffix}": fig("timeline")},
        chromium=chromium,
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
