"""P16: what the engine report costs.

P16-resnet50 / P16-deep: build wall time with the engine report (the default: profiling_verbosity detailed, the
            layer record kept from the log) ÷ engine_report=False (TensorRT's default verbosity, nothing kept);
            resnet50() and deep_residual(N) built with default settings, interleaved repeats (alternating which
            goes first), the first build of each kind left out; the ratio of medians.
P16-size:   the engine's size with profiling_verbosity detailed ÷ TensorRT's default (info: DETAILED embeds layer
            names and metadata in the engine).
P16-parse:  reading a 10,000-layer ONELINE record (TensorRT for RTX's, from this machine's resnet50 build, names
            made unique) into an EngineReport and its summary; median of repeats.
"""

from __future__ import annotations

import argparse
import time

from _common import emit, figure, load_avg, median, print_table

from trt_widget import Build, EngineReport, models

BUILD_TARGET = 1.02
PARSE_TARGET_S = 0.2


def timed_build(onnx: bytes, report: bool) -> tuple[float, int]:
    start = time.perf_counter()
    build = Build(onnx, history=False, engine_report=report).start()
    status = build.wait(600)
    assert status == "succeeded", (status, build.status_detail)
    took = time.perf_counter() - start
    if report:
        assert build.engine_report is not None, build.engine_report_reason
    return took, build.engine_size or 0


def ratio_of(onnx: bytes, repeats: int) -> tuple[dict[bool, list[float]], dict[bool, int]]:
    times: dict[bool, list[float]] = {True: [], False: []}
    sizes: dict[bool, int] = {}
    timed_build(onnx, True)  # warm-up: left out
    timed_build(onnx, False)
    for i in range(repeats):
        for report in (True, False) if i % 2 == 0 else (False, True):
            took, sizes[report] = timed_build(onnx, report)
            times[report].append(took)
    return times, sizes


def record_of(layers: int, blocks: int | None = None) -> str:
    """A 10,000-layer ``Layers:`` record made of a real resnet50 build's layer lines (TensorRT for RTX), or of a
    deep_residual(``blocks``) build's (smoke runs: a smaller build)."""
    model = models.resnet50() if blocks is None else models.deep_residual(blocks)
    build = Build(model, history=False, verbose=True).start()
    assert build.wait(600) == "succeeded"
    record = next(r["message"] for r in build.logs if r["message"].startswith("Layers:"))
    lines = [line for line in record.split("\n") if line.startswith("Name: ")]
    return "Layers:\n" + "\n".join(lines[i % len(lines)].replace("Name: ", f"Name: l{i}_", 1) for i in range(layers))


def parse_figure(layers: int, repeats: int, record_blocks: int | None = None) -> dict[str, object]:
    """P16-parse: wall and CPU time of reading a ``layers``-layer record with its summary (and without)."""
    text = record_of(layers, record_blocks)
    walls, cpus, reads = [], [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        report = EngineReport.from_text(text)
        report.summary()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        start = time.perf_counter()
        EngineReport.from_text(text)  # the layers' other fields are read on first use: without the summary
        reads.append(time.perf_counter() - start)
    assert len(report.layers) == layers
    parse_s = median(walls)
    print_table(
        f"P16-parse: a {layers:,}-layer record ({len(text) / 1e6:.1f} MB)",
        ["median s", "min s", "CPU s (median)", "without summary (median s)"],
        [[parse_s, min(walls), median(cpus), median(reads)]],
    )
    return figure(
        round(parse_s, 4),
        f"<= {PARSE_TARGET_S} s",
        parse_s <= PARSE_TARGET_S,
        "s",
        f"EngineReport.from_text + summary() of a {layers:,}-layer record ({len(text) / 1e6:.1f} MB), wall time, "
        f"median of {repeats} (CPU time beside it: on a loaded machine the wall time is mostly waiting)",
        runs_s=walls,
        cpu_s=round(median(cpus), 4),
        cpu_runs_s=cpus,
        without_summary_s=round(median(reads), 4),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=1000)
    parser.add_argument("--layers", type=int, default=10_000)
    parser.add_argument("--parses", type=int, default=5)
    parser.add_argument("--parse-only", action="store_true", help="only P16-parse (no builds timed)")
    parser.add_argument(
        "--record-blocks", type=int, default=None, help="P16-parse: deep_residual(N)'s layers, not resnet50's (smoke)"
    )
    args = parser.parse_args()
    load_start = load_avg()
    results = {}
    builds = [
        ("resnet50", models.resnet50().SerializeToString()),
        (f"deep_residual({args.blocks})", models.deep_residual(args.blocks).SerializeToString()),
    ]
    for name, onnx in [] if args.parse_only else builds:
        times, sizes = ratio_of(onnx, args.repeats)
        results[name] = (median(times[True]) / median(times[False]), times, sizes)
        print_table(
            f"P16: {name} build wall time (s)",
            ["engine report", "median", "min", "max", "n", "engine B"],
            [[k, median(v), min(v), max(v), len(v), sizes[k]] for k, v in times.items()],
        )
    parse = parse_figure(args.layers, args.parses, args.record_blocks)
    if args.parse_only:
        emit("p16_parse", {"P16-parse": parse}, load_avg_start=load_start)
        return
    (r_ratio, r_times, r_sizes), (d_ratio, d_times, _d_sizes) = results.values()
    deep = list(results)[1]
    emit(
        "p16",
        {
            "P16-resnet50": figure(
                round(r_ratio, 4),
                f"<= {BUILD_TARGET}",
                r_ratio <= BUILD_TARGET,
                "ratio",
                "resnet50 build wall time, engine report on (default) ÷ engine_report=False, ratio of medians of "
                f"{args.repeats} interleaved repeats after a warm-up",
                on_s=r_times[True],
                off_s=r_times[False],
            ),
            "P16-deep": figure(
                round(d_ratio, 4),
                f"<= {BUILD_TARGET}",
                d_ratio <= BUILD_TARGET,
                "ratio",
                f"{deep} build wall time, engine report on ÷ off, ratio of medians of {args.repeats} interleaved "
                "repeats after a warm-up",
                on_s=d_times[True],
                off_s=d_times[False],
            ),
            "P16-size": figure(
                round(r_sizes[True] / r_sizes[False], 4),
                "no target",
                None,
                "ratio",
                "resnet50 engine size, profiling_verbosity detailed (engine report on) ÷ TensorRT's default",
                on_bytes=r_sizes[True],
                off_bytes=r_sizes[False],
            ),
            "P16-parse": parse,
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
