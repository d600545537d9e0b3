"""P3: widget sync messages per second during a 100k-steps/s callback storm, and the delay of the final state.

A real deep residual build runs with a BuildWidget attached (notebook mode: no terminal view). While it
runs, a synthetic driver thread opens a "Synthetic storm" phase in the widget's phase model and completes
steps at a paced 100,000 per second; every ``send_state`` is counted (and JSON-encoded as a kernel would).
At the end: the time from the build's end (its recorded end time) to the return of the send that carried the
final status. Also: what one pump send costs with large trees (1,200 and 10,000 phase instances).
"""

from __future__ import annotations

import argparse
import itertools
import threading
import time
from typing import Any

from _common import FakeBuild, emit, figure, load_avg, median, percentile, print_table, wait_for
from _probe import SendProbe

from trt_widget import Build, BuildWidget, _widget, models
from trt_widget._phases import PhaseModel

RATE_TARGET = 10.0
FINAL_TARGET_MS = 200.0


def storm(model: PhaseModel, rate: float, duration: float, out: dict[str, float]) -> None:
    """Complete steps of one phase at ``rate`` per second for ``duration`` s (paced in 1 ms slices)."""
    name = "Synthetic storm"
    model.phase_start(name, None, int(rate * duration) + 1)
    step = model.step_complete
    done = 0
    start = time.perf_counter()
    out["start"] = start
    while True:
        now = time.perf_counter()
        if now - start >= duration:
            break
        due = int((now - start) * rate)
        while done < due:
            step(name, done)
            done += 1
        if done >= due:
            time.sleep(0.0005)
    out["end"] = time.perf_counter()
    model.phase_finish(name)
    out["steps"] = done


def max_in_window(times: list[float], window: float, start: float, end: float) -> int:
    inside = [t for t in times if start <= t <= end]
    best, j = 0, 0
    for i, t in enumerate(inside):
        while inside[j] <= t - window:  # half-open window (t - 1 s, t]
            j += 1
        best = max(best, i - j + 1)
    return best


def storm_during_build(blocks: int, rate: float, duration: float) -> dict[str, Any]:
    build = Build(models.deep_residual(blocks).SerializeToString(), history=False, isolation="thread")
    ended: list[float] = []
    build.add_done_callback(lambda _b: ended.append(time.perf_counter()))  # registered before the pump's hook
    widget = BuildWidget(None, build=build)
    probe = SendProbe(widget)
    statuses: list[tuple[float, str]] = []
    widget.observe(lambda change: statuses.append((time.perf_counter(), change["new"])), names=["status"])
    widget.start()
    wait_for(lambda: len(build.model) >= 1, 300, "the first phase")
    out: dict[str, float] = {}
    driver = threading.Thread(target=storm, args=(build.model, rate, duration, out), name="storm")
    driver.start()
    driver.join()
    status = widget.wait(timeout=900)
    if status != "succeeded":
        raise RuntimeError(f"build ended {status}: {build.error}")
    end_perf = build.model._t0 + build.elapsed_s  # the build's own recorded end, on the perf_counter axis
    end = min([end_perf, *ended])
    # strict=False: SendProbe appends a send's time just before its keys, so a racing send may differ by one
    final_sends = [t for t, keys in zip(probe.times, probe.keys, strict=False) if "status" in keys]
    final_ms = (final_sends[-1] - end) * 1000 if final_sends and final_sends[-1] >= end else float("nan")
    storm_s = out["end"] - out["start"]
    build_start = build.model._t0
    return {
        "steps": out["steps"],
        "storm_s": storm_s,
        "achieved_rate": out["steps"] / storm_s,
        "sends_in_storm": probe.between(out["start"], out["end"]),
        "sends_per_s": probe.between(out["start"], out["end"]) / storm_s,
        # the final state is exempt from the throttle by design, so it is left out of the window count
        "max_sends_any_1s": max_in_window(probe.times[:-1], 1.0, build_start, end + 1.0),
        "min_gap_ms": min(b - a for a, b in itertools.pairwise(probe.times[:-1])) * 1000,  # final send left out
        "sends_total": probe.count,
        "build_s": build.elapsed_s,
        "final_ms": final_ms,
        "mean_bytes": sum(probe.bytes) / max(len(probe.bytes), 1),
    }


def pump_cost(n: int, changed_per_send: int = 50) -> dict[str, float]:
    """ms per pump send (snapshot + diff + traitlets + JSON encode) for an ``n``-instance tree."""
    fake = FakeBuild(n, elapsed_s=1.0)
    widget = BuildWidget(None, build=fake)  # type: ignore[arg-type]
    probe = SendProbe(widget)
    pump = widget._pump
    costs = []
    for _round in range(20):
        for _ in range(changed_per_send):  # new instances, as a live build adds them
            fake.model.phase_start("Measuring tactic time", "Building engine", 4)
            fake.model.phase_finish("Measuring tactic time")
        fake.elapsed_s += 0.1
        start = time.perf_counter()
        pump.flush()
        costs.append(time.perf_counter() - start)
    return {
        "instances": n,
        "median_ms": median(costs) * 1000,
        "p95_ms": percentile(costs, 95) * 1000,
        "bytes": probe.bytes[-1],
        "encode_ms": probe.encode_s / max(probe.count, 1) * 1000,
        "gil_share_at_10hz": median(costs) * 10,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=400)
    parser.add_argument("--rate", type=float, default=100_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    load_start = load_avg()
    _widget._in_notebook = lambda: True

    run = storm_during_build(args.blocks, args.rate, args.seconds)
    large = [pump_cost(n) for n in (1_200, 10_000)]

    print_table(
        f"P3 storm into a live deep_residual({args.blocks}) widget build",
        [
            "storm s",
            "steps",
            "achieved steps/s",
            "sends in storm",
            "sends/s",
            "max in any 1 s",
            "min gap",
            "final state after end",
        ],
        [
            [
                f"{run['storm_s']:.2f}",
                run["steps"],
                f"{run['achieved_rate']:,.0f}",
                run["sends_in_storm"],
                f"{run['sends_per_s']:.2f}",
                run["max_sends_any_1s"],
                f"{run['min_gap_ms']:.1f} ms",
                f"{run['final_ms']:.1f} ms",
            ]
        ],
    )
    print_table(
        "P3 one pump send with a large tree (snapshot + diff + trait set + JSON encode)",
        ["instances", "median ms", "p95 ms", "JSON encode ms", "message bytes", "GIL share at 10 Hz"],
        [
            [
                r["instances"],
                f"{r['median_ms']:.2f}",
                f"{r['p95_ms']:.2f}",
                f"{r['encode_ms']:.2f}",
                f"{r['bytes']:,}",
                f"{r['gil_share_at_10hz'] * 100:.1f}%",
            ]
            for r in large
        ],
    )

    rate_ok = run["sends_per_s"] <= RATE_TARGET and run["max_sends_any_1s"] <= RATE_TARGET
    emit(
        "p3_sync_rate",
        {
            "P3": figure(
                round(run["sends_per_s"], 2),
                f"<= {RATE_TARGET:g}/s",
                rate_ok,
                "messages/s",
                f"send_state calls per second during a {run['achieved_rate']:,.0f} steps/s storm into a live "
                "widget build",
                **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in run.items()},
            ),
            "P3-final": figure(
                round(run["final_ms"], 1),
                f"<= {FINAL_TARGET_MS:g} ms",
                run["final_ms"] <= FINAL_TARGET_MS,
                "ms",
                "build end -> the send carrying the final status returned",
            ),
            "P3-large": figure(
                round(large[-1]["median_ms"], 2),
                "no target",
                None,
                "ms per send",
                "pump send cost with 10,000 phase instances (1,200 in details)",
                sizes=[{k: round(v, 3) for k, v in r.items()} for r in large],
            ),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
