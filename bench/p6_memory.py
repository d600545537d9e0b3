"""P6: memory growth (tracemalloc) of the monitor + phase model + widget state.

steps:     1,000,000 step_complete callbacks into one phase through a BuildMonitor, with the widget's pump
           flushing (snapshot, diff, trait write, JSON-encoded message) every 10,000 steps: growth must stay
           under 1 MB, i.e. memory must not grow with steps.
instances: 1,000 / 10,000 / 30,000 phase instances (start, step, finish) with cached rows and one widget
           flush: bytes per instance should be the same at every size (linear growth).
The callbacks are a synthetic driver (no TensorRT build): memory per callback does not depend on the builder.
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from typing import Any

from _common import FakeBuild, emit, figure, load_avg, print_table
from _probe import SendProbe

from trt_widget import BuildWidget, _widget
from trt_widget._monitor import BuildMonitor

STEP_TARGET = 1 << 20  # 1 MB
LINEAR_BAND = (0.8, 1.25)  # bytes/instance at a size ÷ at the smallest size


def traced(fn: Any) -> tuple[int, int]:
    """(growth, peak above start) in bytes of what ``fn()`` leaves allocated."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    keep = fn()
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del keep
    return current - before, peak - before


def million_steps(steps: int, flush_every: int) -> tuple[int, int, int]:
    fake = FakeBuild()
    widget = BuildWidget(None, build=fake)  # type: ignore[arg-type]
    SendProbe(widget)
    monitor = BuildMonitor(fake.model)
    monitor.phase_start("Building engine", None, 1)
    monitor.phase_start("Cloning network graph", "Building engine", steps)
    for i in range(1000):  # warm: the first ints, the first sends, traitlets' caches
        monitor.step_complete("Cloning network graph", i)
    widget._pump.flush()

    def run() -> Any:
        step = monitor.step_complete
        for i in range(1000, steps):
            step("Cloning network graph", i)
            if i % flush_every == 0:
                fake.elapsed_s = i * 1e-5
                widget._pump.flush()
        widget._pump.flush()
        return None

    growth, peak = traced(run)
    return growth, peak, fake.model.phases()[1].step


def instances(n: int) -> int:
    def run() -> Any:
        fake = FakeBuild()
        widget = BuildWidget(None, build=fake)  # type: ignore[arg-type]
        monitor = BuildMonitor(fake.model)
        monitor.phase_start("Building engine", None, n)
        for i in range(n - 1):
            monitor.phase_start("Measuring tactic time", "Building engine", 4)
            monitor.step_complete("Measuring tactic time", 3)
            monitor.phase_finish("Measuring tactic time")
            monitor.step_complete("Building engine", i)
        widget._pump.flush()  # row dicts cached, the widget's traits hold the tree
        return widget, monitor

    def empty() -> Any:
        fake = FakeBuild()
        return BuildWidget(None, build=fake), BuildMonitor(fake.model)  # type: ignore[arg-type]

    return traced(run)[0] - traced(empty)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 30_000])
    args = parser.parse_args()
    load_start = load_avg()
    _widget._in_notebook = lambda: True

    growth, peak, reached = million_steps(args.steps, 10_000)
    per_size = {n: instances(n) for n in args.sizes}
    base = per_size[args.sizes[0]] / args.sizes[0]
    print_table(
        f"P6 memory, {args.steps:,} steps in one phase (widget flush every 10,000 steps)",
        ["growth", "peak above start", "steps recorded"],
        [[f"{growth:,} B", f"{peak:,} B", f"{reached:,}"]],
    )
    print_table(
        "P6 memory per phase instance (monitor + model + cached rows + widget state)",
        ["instances", "growth", "bytes/instance", f"÷ at {args.sizes[0]:,}"],
        [[f"{n:,}", f"{b:,} B", f"{b / n:,.0f}", f"{b / n / base:.3f}"] for n, b in per_size.items()],
    )
    ratios = {n: b / n / base for n, b in per_size.items()}
    linear = all(LINEAR_BAND[0] <= r <= LINEAR_BAND[1] for r in ratios.values())
    emit(
        "p6_memory",
        {
            "P6": figure(
                growth,
                "< 1 MB",
                growth < STEP_TARGET and reached == args.steps,
                "bytes",
                f"tracemalloc growth over {args.steps:,} step_complete calls in one phase",
                peak_bytes=peak,
            ),
            "P6-linear": figure(
                round(max(ratios.values()), 3),
                f"bytes/instance ÷ at {args.sizes[0]:,} within {LINEAR_BAND[0]}..{LINEAR_BAND[1]}",
                linear,
                "ratio",
                "memory per phase instance stays constant as instances grow (linear)",
                bytes_per_instance={str(n): round(b / n, 1) for n, b in per_size.items()},
            ),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
