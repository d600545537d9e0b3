"""P1-default / P4-default: what the default runner (a warm builder process) costs and how fast Stop ends a build.

P1-default: resnet50() builds (~1 s), default settings ÷ isolation="thread", interleaved (alternating which
            goes first), the first build of each kind left out; the ratio of medians. P1-first is the very
            first default build of this fresh process (it starts the worker) ÷ the median thread build.
            (--p1-blocks N: deep_residual(N) builds instead, for smoke runs.)
P4-default: deep_residual(1000) builds with default settings, each stopped at a random moment between the
            first phase and ~6 s in; the time from stop() to wait() returning, p95 over the trials, and how
            many ended gracefully (at a step boundary, keeping the warm worker) rather than terminated.
P5-default: the longest main-thread stall (10 ms sleep overshoot) while a default build runs.
"""

from __future__ import annotations

import argparse
import random
import time

from _common import emit, figure, load_avg, median, percentile, print_table, wait_for

from trt_widget import Build, BuildWidget, models

P1_TARGET = 1.10
P4_TARGET_S = 0.25
P5_TARGET_MS = 50.0


def timed_build(onnx: bytes, isolation: str) -> float:
    start = time.perf_counter()
    build = Build(onnx, history=False, isolation=isolation).start()
    status = build.wait(600)
    assert status == "succeeded", (status, build.status_detail)
    return time.perf_counter() - start


def p1(onnx: bytes, repeats: int) -> tuple[dict[str, list[float]], float]:
    first = timed_build(onnx, "process")  # a fresh process: this one starts the worker
    times: dict[str, list[float]] = {"process": [], "thread": []}
    timed_build(onnx, "thread")  # the first thread build warms TensorRT in this process: left out too
    for i in range(repeats):
        order = ["process", "thread"] if i % 2 == 0 else ["thread", "process"]
        for isolation in order:
            times[isolation].append(timed_build(onnx, isolation))
    return times, first


def stop_trial(onnx: bytes, rng: random.Random, window_s: float) -> dict[str, float]:
    build = Build(onnx, history=False).start()
    wait_for(lambda: build.model.innermost_running() is not None or build.done(), 120, "the first phase")
    time.sleep(rng.uniform(0.0, window_s))
    phase = build.model.innermost_running()
    stop_at = time.perf_counter()
    build.stop()
    status = build.wait(60)
    returned = time.perf_counter()
    return {
        "latency_s": returned - stop_at,
        "status": status,
        "phase": phase.name if phase else "-",
        "terminated": "terminated" in build.status_detail,
    }


def stall_during_default_build(onnx: bytes) -> float:
    widget = BuildWidget(onnx, history=False)
    stalls: list[float] = []
    widget.start()
    while not widget.build.done():
        t = time.perf_counter()
        time.sleep(0.01)
        stalls.append(time.perf_counter() - t - 0.01)
    widget.wait(60)
    return max(stalls) * 1000 if stalls else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--blocks", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--window", type=float, default=6.0, help="stop at a random moment up to this many s in")
    parser.add_argument("--stall-blocks", type=int, default=600, help="deep_residual size of the P5-default build")
    parser.add_argument(
        "--p1-blocks", type=int, default=None, help="P1: deep_residual(N) instead of resnet50 (smoke runs)"
    )
    args = parser.parse_args()
    load_start = load_avg()
    name = "resnet50" if args.p1_blocks is None else f"deep_residual({args.p1_blocks})"
    model = models.resnet50() if args.p1_blocks is None else models.deep_residual(args.p1_blocks)
    times, first = p1(model.SerializeToString(), args.repeats)
    ratio = median(times["process"]) / median(times["thread"])
    print_table(
        f"P1-default: {name} build wall time (s)",
        ["isolation", "median", "min", "max", "n"],
        [[k, median(v), min(v), max(v), len(v)] for k, v in times.items()],
    )

    rng = random.Random(args.seed)
    onnx = models.deep_residual(args.blocks).SerializeToString()
    trials = [stop_trial(onnx, rng, args.window) for _ in range(args.trials)]
    print_table(
        "P4-default: stop() -> wait() returned",
        ["latency s", "status", "phase at stop", "terminated"],
        [[t["latency_s"], t["status"], t["phase"], t["terminated"]] for t in trials],
    )
    latencies = [t["latency_s"] for t in trials]
    p95 = percentile(latencies, 95)
    stall = stall_during_default_build(models.deep_residual(args.stall_blocks).SerializeToString())
    emit(
        "p8",
        {
            "P1-default": figure(
                round(ratio, 4),
                f"<= {P1_TARGET}",
                ratio <= P1_TARGET,
                "ratio",
                f"{name} wall time, default (warm builder process) ÷ isolation='thread', ratio of "
                f"medians of {args.repeats} interleaved repeats after the first",
                process_s=times["process"],
                thread_s=times["thread"],
            ),
            "P1-first": figure(
                round(first / median(times["thread"]), 4),
                "no target",
                None,
                "ratio",
                "the first default build of a fresh process (starts the worker) ÷ median thread build",
                first_s=first,
            ),
            "P4-default": figure(
                round(p95, 3),
                f"<= {P4_TARGET_S} s",
                p95 <= P4_TARGET_S,
                "s",
                f"deep_residual({args.blocks}), default settings: stop() -> wait() returned, p95 of "
                f"{len(trials)} stops at random moments ({sum(not t['terminated'] for t in trials)} graceful)",
                max_s=max(latencies),
                median_s=median(latencies),
                terminated=sum(bool(t["terminated"]) for t in trials),
                graceful=sum(not t["terminated"] for t in trials),
            ),
            "P5-default": figure(
                round(stall, 2),
                f"<= {P5_TARGET_MS} ms",
                stall <= P5_TARGET_MS,
                "ms",
                "longest main-thread stall (10 ms sleep overshoot) during a default "
                f"deep_residual({args.stall_blocks}) BuildWidget build",
            ),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
