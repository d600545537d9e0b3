"""P1: wall time of a real deep residual build with a BuildWidget attached ÷ the same build with no monitor.

Repeats are interleaved (alternating which goes first) so drift from other work on the machine hits both
sides; the figure is the ratio of medians. Process CPU time (all threads) is reported alongside, as it is
less sensitive to other processes than wall time.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

from _common import ThreadCpu, emit, figure, load_avg, median, print_table
from _probe import SendProbe
from baselines import plain_build

from trt_widget import BuildWidget, _widget, models

TARGET = 1.01


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def widget_build(onnx: bytes, history_dir: str) -> dict[str, float]:
    c0, t0 = cpu_s(), time.perf_counter()
    widget = BuildWidget(onnx, history=os.path.join(history_dir, "history.jsonl"), isolation="thread")
    probe = SendProbe(widget)
    threads = ThreadCpu()
    widget.start()
    while not widget.build.done():  # widget.wait() in slices, to read the threads' CPU before they exit
        widget.build.wait(0.5)
        threads.poll()
    status = widget.wait(timeout=900)
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    if status != "succeeded":
        raise RuntimeError(f"widget build ended {status}: {widget.build.error}")
    own = sum(v for k, v in threads.by_name().items() if k.startswith("trt_widget-") and k != "trt_widget-build")
    if widget.build.history is not None:  # recorded after wait() returned: awaited (untimed) before the next build
        widget.build.history.recorded.wait(60)
    return {"wall": wall, "cpu": cpu, "sends": probe.count, "phases": len(widget.phases), "own_cpu": own}


def bare_build(onnx: bytes) -> dict[str, float]:
    c0, t0 = cpu_s(), time.perf_counter()
    plain_build(onnx)
    return {"wall": time.perf_counter() - t0, "cpu": cpu_s() - c0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    load_start = load_avg()
    # Measure the widget as it runs in a notebook: outside one, start() also draws the terminal view.
    _widget._in_notebook = lambda: True
    onnx = models.deep_residual(args.blocks).SerializeToString()
    plain: list[dict[str, float]] = []
    widget: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as history_dir:
        small = models.deep_residual(50).SerializeToString()  # warm-up: libraries and imports, both sides
        plain_build(small)
        widget_build(small, history_dir)
        for i in range(args.repeats):
            order = ("plain", "widget") if i % 2 == 0 else ("widget", "plain")
            for which in order:
                if which == "plain":
                    plain.append(bare_build(onnx))
                else:
                    widget.append(widget_build(onnx, history_dir))
                print(
                    f"  repeat {i + 1}/{args.repeats} {which}: "
                    f"{(plain if which == 'plain' else widget)[-1]['wall']:.2f} s",
                    flush=True,
                )

    wall_ratio = median([r["wall"] for r in widget]) / median([r["wall"] for r in plain])
    cpu_ratio = median([r["cpu"] for r in widget]) / median([r["cpu"] for r in plain])
    pair_ratios = [w["wall"] / p["wall"] for w, p in zip(widget, plain, strict=True)]
    min_ratio = min(r["wall"] for r in widget) / min(r["wall"] for r in plain)  # least-disturbed runs
    rows = [
        [
            "no monitor",
            f"{median([r['wall'] for r in plain]):.2f}",
            f"{min(r['wall'] for r in plain):.2f}",
            f"{max(r['wall'] for r in plain):.2f}",
            f"{median([r['cpu'] for r in plain]):.2f}",
        ],
        [
            "BuildWidget",
            f"{median([r['wall'] for r in widget]):.2f}",
            f"{min(r['wall'] for r in widget):.2f}",
            f"{max(r['wall'] for r in widget):.2f}",
            f"{median([r['cpu'] for r in widget]):.2f}",
        ],
    ]
    print_table(
        f"P1 deep_residual({args.blocks}) build, {args.repeats} interleaved repeats each",
        ["monitor", "median wall s", "min", "max", "median CPU s"],
        rows,
    )
    print(
        f"wall ratio (median/median) {wall_ratio:.4f} (min/min {min_ratio:.4f})   CPU ratio {cpu_ratio:.4f}   "
        f"per-pair wall ratios {', '.join(f'{r:.3f}' for r in pair_ratios)}"
    )
    own_share = median([r["own_cpu"] / r["wall"] for r in widget])
    print(f"widget sends per build {[r['sends'] for r in widget]}, phase instances {widget[-1]['phases']}")
    print(
        f"CPU of the widget's own threads (pump, resource sampler, history) per build "
        f"{[round(r['own_cpu'], 3) for r in widget]} s = {own_share * 100:.2f}% of build wall (median)"
    )
    emit(
        "p1_build_overhead",
        {
            "P1": figure(
                round(wall_ratio, 4),
                f"<= {TARGET}",
                wall_ratio <= TARGET,
                "ratio",
                f"deep_residual({args.blocks}) wall time, BuildWidget ÷ no monitor, median of "
                f"{args.repeats} interleaved repeats",
                cpu_ratio=round(cpu_ratio, 4),
                min_ratio=round(min_ratio, 4),
                pair_ratios=[round(r, 4) for r in pair_ratios],
                plain_wall_s=[round(r["wall"], 3) for r in plain],
                widget_wall_s=[round(r["wall"], 3) for r in widget],
                plain_cpu_s=[round(r["cpu"], 3) for r in plain],
                widget_cpu_s=[round(r["cpu"], 3) for r in widget],
                widget_sends=[r["sends"] for r in widget],
            ),
            "P1-own": figure(
                round(own_share * 100, 3),
                "no target",
                None,
                "% of build wall",
                "CPU of the widget's own threads (pump, resource sampler, history) ÷ build wall, median",
                own_cpu_s=[round(r["own_cpu"], 3) for r in widget],
            ),
            "P1-cpu": figure(
                round(cpu_ratio, 4),
                "no target",
                None,
                "ratio",
                "process CPU time (all threads), BuildWidget ÷ no monitor, median of the same builds",
            ),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
