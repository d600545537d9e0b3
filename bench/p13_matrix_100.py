"""P13: one notebook watching 100 concurrent builds — a BuildMatrix of 100 replays of the GPU-shaped recording.

Each cell's build is ``Build.from_events(gpu_shaped_events(...), speed=1)``: the recording replayed at its pace
on a thread (local executor, ``max_parallel`` = the number of builds), so all of them run at once and the matrix
widget syncs them through its one pump; every state message is JSON-encoded as a kernel would (SendProbe). Two
runs: to the end with every row collapsed, and one stopped half-way with build 0 expanded. The replays run in
this process (real builders would run in worker processes or on Ray), so their threads contend for the GIL. Figures:
  P13-rate     the most state messages to the browser in any 1 s;
  P13-cpu      the kernel's own CPU (this process minus the replaying builder threads: pump, main thread, the
               widget's traits) ÷ wall, in % of one core;
  P13-stall    the longest main-thread stall (10 ms sleep overshoot);
  P13-browser  the recorded messages applied to the shipped matrix view (trt_widget/static/matrix.js) in headless
               Chromium with a fake anywidget model, each timed with forced layout: median (p95 beside it), as
               first shown (rows collapsed); P13-browser-expanded: with one build's phase tree expanded;
  P13-stop     Stop all (``matrix.stop()``, what the button sends) after ``--stop-after`` s → every build ended.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from _browser import bench_page
from _common import ROOT, ThreadCpu, emit, figure, load_avg, median, percentile, print_table
from _probe import SendProbe

from trt_widget import Build, models
from trt_widget.matrix import BuildMatrix
from trt_widget.runners import gpu_shaped_events

RATE_TARGET = 10.0
CPU_TARGET = 10.0
STALL_TARGET_MS = 50.0
BROWSER_TARGET_MS = 16.0
STOP_TARGET_S = 2.0
TICK = 0.010
STATIC = ROOT / "trt_widget" / "static"

PAGE = """<!doctype html><html><head><link rel="stylesheet" href="/matrix.css"></head><body><div id="root"></div>
<script type="module">
import widget from "/matrix.js";
class FakeModel {
  constructor(state) { this.state = { ...state }; this.handlers = new Map(); }
  get(name) { return this.state[name]; }
  set(name, value) { this.state[name] = value; }
  on(event, fn) { if (!this.handlers.has(event)) this.handlers.set(event, []); this.handlers.get(event).push(fn); }
  off(event, fn) {
    const l = this.handlers.get(event) || [];
    this.handlers.set(event, fn ? l.filter((f) => f !== fn) : []);
  }
  send() {}
  save_changes() {}
  update(changes) {
    for (const [k, v] of Object.entries(changes)) this.state[k] = v;
    for (const k of Object.keys(changes)) for (const fn of this.handlers.get(`change:${k}`) || []) fn();
    for (const fn of this.handlers.get("change") || []) fn();
  }
}
window.runBench = async (messages) => {
  const el = document.getElementById("root");
  const model = new FakeModel(messages[0]);
  await widget.render({ model, el });
  const times = [];
  for (const message of messages.slice(1)) {
    const t0 = performance.now();
    model.update(message);
    void el.offsetHeight;
    times.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 0));
  }
  return { times, rows: el.querySelectorAll("tr").length };
};
window.benchReady = true;
</script></body></html>"""


def max_in_window(times: list[float], window: float) -> int:
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] <= t - window:
            j += 1
        best = max(best, i - j + 1)
    return best


def make_matrix(builds: int, measurements: int, seconds: float) -> BuildMatrix:
    recording = list(gpu_shaped_events(measurements=measurements, seconds=seconds))
    variants = [{"optimization_level": i % 6} for i in range(builds)]
    matrix = BuildMatrix(
        models.deep_residual(2), variants=variants, max_parallel=builds, isolation="thread", history=False
    )
    for cell in matrix.cells:  # each cell replays the GPU-shaped recording instead of building
        cell.build = Build.from_events(recording, speed=1.0)
    return matrix


def watch(matrix: BuildMatrix, stop_after: float | None, expand: bool) -> dict[str, Any]:
    widget = matrix.widget
    probe = SendProbe(widget)
    traits = ("status", "rows_json", "expanded", "details_json", "comparison_json")
    messages: list[dict[str, Any]] = [{k: getattr(widget, k) for k in traits}]  # the state as first shown
    original = widget._pump.send

    def recording_send(changed: dict[str, Any]) -> None:  # what the pump sends, kept for the browser part
        messages.append(dict(changed))
        original(changed)

    widget._pump.send = recording_send
    if expand:
        widget.expand(0)
    threads = ThreadCpu()
    start = time.perf_counter()
    matrix.start()
    overshoots: list[float] = []
    at: list[float] = []
    stop_at = stopped = None
    last_poll = start
    while not matrix.done():
        t = time.perf_counter()
        time.sleep(TICK)
        now = time.perf_counter()
        overshoots.append(now - t - TICK)
        at.append(now - start)
        if now - last_poll > 0.25:
            threads.poll()
            last_poll = now
        if stop_after is not None and stop_at is None and now - start >= stop_after:
            stop_at = time.perf_counter()
            matrix.stop()
    end = time.perf_counter()
    if stop_at is not None:
        stopped = end - stop_at
    cpu = threads.by_name()
    kernel = sum(v for k, v in cpu.items() if k != "trt_widget-build")
    statuses = [b.status for b in matrix.builds]
    sends = [t for t in probe.times if start <= t <= end]
    widget.close()
    return {
        "wall_s": end - start,
        "statuses": {s: statuses.count(s) for s in set(statuses)},
        "messages": len(sends),
        "max_any_1s": max_in_window(sends, 1.0) if sends else 0,
        "mean_bytes": sum(probe.bytes) / max(len(probe.bytes), 1),
        "kernel_cpu_pct": 100 * kernel / (end - start),
        "builders_cpu_pct": 100 * cpu.get("trt_widget-build", 0.0) / (end - start),
        "stall_max_ms": max(overshoots) * 1000,
        "stall_at_s": at[overshoots.index(max(overshoots))],
        "stop_s": stopped,
        "messages_recorded": messages,
    }


def browser(messages: list[dict[str, Any]]) -> dict[str, Any]:
    files = {
        "/matrix.js": (STATIC / "matrix.js", "text/javascript"),
        "/matrix.css": (STATIC / "matrix.css", "text/css"),
    }
    with bench_page(PAGE, files, "window.benchReady === true", viewport=(1200, 900)) as (page, _):
        result: dict[str, Any] = page.evaluate("(m) => window.runBench(m)", json.loads(json.dumps(messages)))
    return result


def tail(run: dict[str, Any]) -> list[Any]:
    return [run["stall_max_ms"], run["stall_at_s"], run["statuses"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--builds", type=int, default=100)
    parser.add_argument("--measurements", type=int, default=1_100, help="size of each replayed recording")
    parser.add_argument("--seconds", type=float, default=16.0, help="each recording's length")
    parser.add_argument("--stop-after", type=float, default=None, help="Stop all this long in (default: half-way)")
    args = parser.parse_args()
    load_start = load_avg()
    full = watch(make_matrix(args.builds, args.measurements, args.seconds), None, False)
    stop_after = args.stop_after if args.stop_after is not None else args.seconds / 2
    stop = watch(make_matrix(args.builds, args.measurements, args.seconds), stop_after, True)
    shown = browser(full.pop("messages_recorded"))
    expanded = browser(stop.pop("messages_recorded"))
    times = shown["times"]
    print_table(
        f"P13: a BuildMatrix of {args.builds} replays of the GPU-shaped recording ({args.seconds:g} s each)",
        ["run", "wall s", "messages", "most in 1 s", "mean bytes", "kernel CPU %", "stall ms", "at s", "ended"],
        [
            [n, r["wall_s"], r["messages"], r["max_any_1s"], r["mean_bytes"], r["kernel_cpu_pct"], *tail(r)]
            for n, r in (("to the end", full), (f"Stop all at {stop_after:g} s", stop))
        ],
    )
    print_table(
        "P13 browser: one message applied to the matrix view",
        ["view", "messages", "median ms", "p95 ms", "max ms", "rows"],
        [
            [name, len(r["times"]), median(r["times"]), percentile(r["times"], 95), max(r["times"]), r["rows"]]
            for name, r in (("as first shown", shown), ("build 0 expanded (Stop-all run)", expanded))
        ],
    )
    ended = sum(v for k, v in stop["statuses"].items() if k in ("succeeded", "cancelled", "failed"))
    stop_s = stop["stop_s"] if stop["stop_s"] is not None else float("nan")
    emit(
        "p13",
        {
            "P13-rate": figure(
                full["max_any_1s"],
                f"<= {RATE_TARGET:g}/s",
                full["max_any_1s"] <= RATE_TARGET,
                "messages/s",
                f"matrix of {args.builds} concurrent replays: most state messages to the browser in any 1 s",
                messages=full["messages"],
                mean_bytes=round(full["mean_bytes"]),
            ),
            "P13-cpu": figure(
                round(full["kernel_cpu_pct"], 2),
                f"<= {CPU_TARGET:g} % of a core",
                full["kernel_cpu_pct"] <= CPU_TARGET,
                "%",
                f"the kernel's own CPU (all but the replaying builder threads) ÷ wall, while {args.builds} builds run",
                builders_cpu_pct=round(full["builders_cpu_pct"], 1),
            ),
            "P13-stall": figure(
                round(full["stall_max_ms"], 2),
                f"<= {STALL_TARGET_MS:g} ms",
                full["stall_max_ms"] <= STALL_TARGET_MS,
                "ms",
                "longest main-thread stall (10 ms sleep overshoot) while the matrix runs",
            ),
            "P13-browser": figure(
                round(median(times), 2),
                f"<= {BROWSER_TARGET_MS:g} ms (median)",
                median(times) <= BROWSER_TARGET_MS,
                "ms",
                f"headless Chromium: one recorded message applied to the matrix view ({shown['rows']} table rows) "
                "+ forced layout, median",
                p95_ms=round(percentile(times, 95), 2),
                max_ms=round(max(times), 2),
                messages=len(times),
            ),
            "P13-browser-expanded": figure(
                round(median(expanded["times"]), 2),
                "no target",
                None,
                "ms",
                "the same with one build's GPU-shaped phase tree expanded (messages of the Stop-all run), median",
                p95_ms=round(percentile(expanded["times"], 95), 2),
            ),
            "P13-stop": figure(
                round(stop_s, 3),
                f"<= {STOP_TARGET_S:g} s",
                stop_s <= STOP_TARGET_S and ended == args.builds,
                "s",
                f"Stop all at {stop_after:g} s -> every build ended ({ended} of {args.builds})",
                statuses=stop["statuses"],
            ),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
