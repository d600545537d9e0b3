"""P1-small / P1-cli: what trt_widget adds to a short build (resnet50, ~0.7 s of TensorRT here).

P1-small:  ``Build(model).start().wait()`` with default settings (warm builder process, history, resource
           sampling) ÷ a bare TensorRT build in this process (bench/baselines.py: parse + build, no monitor), wall
           time; P1-small-cpu the same for CPU time (this process + the builder process). P1-small-widget: a
           ``BuildWidget`` (notebook mode, every state message JSON-encoded). Diagnostics beside them: the thread
           runner, and default without history / resources. All kinds interleaved (rotating order), the first
           build of each kind left out; ratios of medians.
P1-cli:    ``trt-widget build model.onnx -o engine`` as a whole fresh process ÷ a fresh ``python`` process running
           a bare build script that writes the engine (both import TensorRT; the CLI also starts its builder
           process), wall time, median of interleaved repeats. ``vs_bare_tuned``: the same with the bare script
           given the builder process's malloc settings (trt_widget/_pool.py WORKER_MALLOC), like with like.
The builder process runs TensorRT with glibc malloc tuned for its large buffers, which a bare script does not: the
ratios compare what a user gets, the ``vs_bare_tuned`` diagnostic what trt_widget itself adds. Both processes
run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` removed, as users run Python): with it off, every
start recompiles trt_widget's modules, which no installed copy does.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, emit, figure, load_avg, median, print_table
from baselines import plain_build

from trt_widget import Build, BuildWidget, _widget, models
from trt_widget._pool import WORKER_MALLOC

WALL_TARGET = 1.05
CPU_TARGET = 1.08
CLI_TARGET = 1.15
HERE = Path(__file__).resolve().parent

BARE_SCRIPT = """
import sys, time
sys.path.insert(0, {bench!r})
from baselines import plain_build
engine, _ = plain_build(open(sys.argv[1], "rb").read())
open(sys.argv[2], "wb").write(engine)
"""


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class WorkerCpu:
    """CPU seconds the builder processes spent since the last reading (they outlive a build: read /proc)."""

    def __init__(self) -> None:
        self._seen: dict[int, float] = {}
        self._tick = os.sysconf("SC_CLK_TCK")

    def _cpu(self, pid: int) -> float | None:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / self._tick

    def delta(self) -> float:
        from trt_widget.runners import pool

        total = 0.0
        pids = set(pool.idle_pids()) | set(self._seen)
        for pid in pids:
            now = self._cpu(pid)
            if now is None:
                continue
            total += now - self._seen.get(pid, 0.0)
            self._seen[pid] = now
        return total


def spread(runs: list[dict[str, float]]) -> list[float]:
    return [min(r["wall"] for r in runs), max(r["wall"] for r in runs)]


def run_kind(kind: str, onnx: bytes, history: str, workers: WorkerCpu) -> dict[str, float]:
    workers.delta()
    c0, t0 = own_cpu_s(), time.perf_counter()
    if kind == "bare":
        plain_build(onnx)
    else:
        options: dict[str, Any] = {"history": history}
        if kind == "thread":
            options["isolation"] = "thread"
        elif kind == "bare-options":
            options.update(history=False, resources=False)
        if kind == "widget":
            widget = BuildWidget(onnx, **options)
            widget.start()
            status, build = widget.wait(600), widget.build
        else:
            build = Build(onnx, **options).start()
            status = build.wait(600)
        if status != "succeeded":
            raise RuntimeError(f"{kind} build ended {status}")
    wall, cpu = time.perf_counter() - t0, own_cpu_s() - c0
    measured = {"wall": wall, "cpu": cpu + workers.delta()}
    if kind != "bare" and build.history is not None:  # written after wait() returned: not timed, but awaited
        build.history.recorded.wait(60)
    return measured


def cli_runs(onnx: bytes, repeats: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"cli": [], "bare": [], "bare-tuned": []}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run Python: imports from cached bytecode, not recompiled
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "model.onnx")
        Path(model).write_bytes(onnx)
        script = os.path.join(tmp, "bare.py")
        Path(script).write_text(BARE_SCRIPT.format(bench=str(HERE)))
        env["TRT_WIDGET_HISTORY"] = os.path.join(tmp, "history.sqlite")
        commands = {
            "cli": [sys.executable, "-m", "trt_widget", "build", model, "-o", os.path.join(tmp, "a.engine"), "--plain"],
            "bare": [sys.executable, script, model, os.path.join(tmp, "b.engine")],
        }
        commands["bare-tuned"] = commands["bare"]  # the same script with the builder process's malloc settings
        tuned = {**env, **WORKER_MALLOC}
        kinds = list(commands)
        for i in range(repeats + 1):
            for kind in kinds[i % 3 :] + kinds[: i % 3]:
                t0 = time.perf_counter()
                done = subprocess.run(
                    commands[kind], env=tuned if kind == "bare-tuned" else env, capture_output=True, text=True,
                    timeout=600,
                )  # fmt: skip
                wall = time.perf_counter() - t0
                if done.returncode != 0:
                    raise RuntimeError(f"{kind} process exited {done.returncode}: {done.stderr[-2000:]}")
                if i > 0:  # the first pair warms the disk cache
                    times[kind].append(wall)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="measured builds of each kind (after one warm-up)")
    parser.add_argument("--cli-repeats", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=None, help="deep_residual(N) instead of resnet50 (smoke runs)")
    args = parser.parse_args()
    name = "resnet50" if args.blocks is None else f"deep_residual({args.blocks})"
    load_start = load_avg()
    _widget._in_notebook = lambda: True  # as in a notebook: no terminal view
    onnx = (models.resnet50() if args.blocks is None else models.deep_residual(args.blocks)).SerializeToString()
    kinds = ["bare", "default", "widget", "thread", "bare-options"]
    results: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
    workers = WorkerCpu()
    with tempfile.TemporaryDirectory() as tmp:
        history = os.path.join(tmp, "history.sqlite")
        for i in range(args.repeats + 1):
            order = kinds[i % len(kinds) :] + kinds[: i % len(kinds)]
            for kind in order:
                measured = run_kind(kind, onnx, history, workers)
                if i > 0:
                    results[kind].append(measured)
    wall = {k: median([r["wall"] for r in v]) for k, v in results.items()}
    cpu = {k: median([r["cpu"] for r in v]) for k, v in results.items()}
    print_table(
        f"P1-small: {name} builds, median of {args.repeats} interleaved (s)",
        ["kind", "wall", "÷ bare", "cpu", "÷ bare", "min wall", "max wall"],
        [[k, wall[k], wall[k] / wall["bare"], cpu[k], cpu[k] / cpu["bare"], *spread(results[k])] for k in kinds],
    )
    cli = cli_runs(onnx, args.cli_repeats)
    cli_ratio = median(cli["cli"]) / median(cli["bare"])
    print_table(
        "P1-cli: whole process (s)",
        ["process", "median", "min", "max"],
        [[k, median(v), min(v), max(v)] for k, v in cli.items()],
    )

    def ratio(kind: str, of: dict[str, float]) -> float:
        return round(of[kind] / of["bare"], 4)

    emit(
        "p1_small",
        {
            "P1-small": figure(
                ratio("default", wall),
                f"<= {WALL_TARGET}",
                ratio("default", wall) <= WALL_TARGET,
                "ratio",
                f"{name} wall time, Build default ÷ bare TensorRT, medians of {args.repeats} interleaved",
                wall_s={k: round(v, 4) for k, v in wall.items()},
                thread=ratio("thread", wall),
                no_history_no_resources=ratio("bare-options", wall),
            ),
            "P1-small-cpu": figure(
                ratio("default", cpu),
                f"<= {CPU_TARGET}",
                ratio("default", cpu) <= CPU_TARGET,
                "ratio",
                "the same builds' CPU time (this process + builder process), Build default ÷ bare",
                cpu_s={k: round(v, 4) for k, v in cpu.items()},
            ),
            "P1-small-widget": figure(
                ratio("widget", wall),
                f"<= {WALL_TARGET}",
                ratio("widget", wall) <= WALL_TARGET,
                "ratio",
                f"{name} wall time, BuildWidget (notebook mode) ÷ bare TensorRT",
                cpu_ratio=ratio("widget", cpu),
            ),
            "P1-cli": figure(
                round(cli_ratio, 4),
                f"<= {CLI_TARGET}",
                cli_ratio <= CLI_TARGET,
                "ratio",
                f"`trt-widget build` of {name} as a whole process ÷ a bare build script's, medians of "
                f"{args.cli_repeats}",
                cli_s=cli["cli"],
                bare_s=cli["bare"],
                bare_tuned_s=cli["bare-tuned"],
                vs_bare_tuned=round(median(cli["cli"]) / median(cli["bare-tuned"]), 4),
            ),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
