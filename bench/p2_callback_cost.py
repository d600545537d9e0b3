"""P2: cost per progress callback of trt_widget's BuildMonitor, relative to a no-op Python monitor.

Three measurements of the same callback sequence (phase_start, many step_complete, phase_finish):
  python  - the monitors' Python methods called in a tight loop from Python (the Python body + call);
  trt     - the same calls made through TensorRT's C++ vtable and pybind11 trampoline (what the builder pays);
  build   - inside a real RTX build: time spent in each callback's Python body, and its share of the build.
The BuildMonitor is the one a BuildWidget uses (fed into the widget's own phase model).
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from _common import emit, figure, load_avg, median, percentile, print_table
from baselines import AnsiMonitor, NoopMonitor, plain_build

from trt_widget import BuildWidget, _engine, _monitor, _widget, models
from trt_widget._monitor import BuildMonitor

TARGET = 3.0
REPEATS = 7


def widget_monitor() -> BuildMonitor:
    """A BuildMonitor on a (not started) BuildWidget's phase model: the pump's wake hook is installed."""
    widget = BuildWidget(models.deep_residual(2), history=False, resources=False)
    return BuildMonitor(widget.build.model, widget.build._cancel)


def make(kind: str) -> Any:
    return {"noop": NoopMonitor, "widget": widget_monitor, "ansi": lambda: AnsiMonitor(io.StringIO())}[kind]()


def drive_python(monitor: Any, steps: int) -> float:
    """Seconds per callback for phase_start x2, ``steps`` step_complete, phase_finish x2, from Python."""
    step = monitor.step_complete
    start = time.perf_counter()
    monitor.phase_start("Building engine", None, 1)
    monitor.phase_start("Cloning network graph", "Building engine", steps)
    for i in range(steps):
        step("Cloning network graph", i)
    monitor.phase_finish("Cloning network graph")
    monitor.phase_finish("Building engine")
    return (time.perf_counter() - start) / (steps + 4)


def drive_native(monitor: Any, steps: int) -> float:
    """The same sequence through TensorRT's C++ callback path."""
    from _trt_path import NativeCaller

    native = NativeCaller(monitor)
    step = native.step_complete_fn
    this = native.this
    name = b"Cloning network graph"
    start = time.perf_counter()
    native.phase_start(b"Building engine", None, 1)
    native.phase_start(name, b"Building engine", steps)
    for i in range(steps):
        step(this, name, i)
    native.phase_finish(name)
    native.phase_finish(b"Building engine")
    return (time.perf_counter() - start) / (steps + 4)


def per_callback(driver: Callable[[Any, int], float], steps: dict[str, int]) -> dict[str, float]:
    """Median seconds per callback over REPEATS fresh monitors, interleaving the kinds."""
    samples: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(REPEATS):
        for kind, n in steps.items():
            samples[kind].append(driver(make(kind), n))
    return {k: median(v) for k, v in samples.items()}


class _Timed:
    """Mixin: record the time spent inside each callback body (inside a real build)."""

    def _init_timer(self) -> None:
        self.durations_ns: list[int] = []

    def phase_start(self, *args: Any) -> None:
        t = time.perf_counter_ns()
        super().phase_start(*args)  # type: ignore[misc]
        self.durations_ns.append(time.perf_counter_ns() - t)

    def step_complete(self, *args: Any) -> bool:
        t = time.perf_counter_ns()
        result = super().step_complete(*args)  # type: ignore[misc]
        self.durations_ns.append(time.perf_counter_ns() - t)
        return result

    def phase_finish(self, *args: Any) -> None:
        t = time.perf_counter_ns()
        super().phase_finish(*args)  # type: ignore[misc]
        self.durations_ns.append(time.perf_counter_ns() - t)


class TimedNoop(_Timed, NoopMonitor):
    def __init__(self) -> None:
        NoopMonitor.__init__(self)
        self._init_timer()


class TimedAnsi(_Timed, AnsiMonitor):
    def __init__(self) -> None:
        AnsiMonitor.__init__(self, io.StringIO())
        self._init_timer()


class TimedBuildMonitor(_Timed, BuildMonitor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        BuildMonitor.__init__(self, *args, **kwargs)
        self._init_timer()


def timer_overhead_ns() -> float:
    """What the clock reads and the list append of _Timed cost by themselves (subtracted below)."""
    best = float("inf")
    for _ in range(5):
        sink: list[int] = []
        start = time.perf_counter_ns()
        for _ in range(100_000):
            t = time.perf_counter_ns()
            sink.append(time.perf_counter_ns() - t)
        best = min(best, (time.perf_counter_ns() - start) / 100_000)
    return best


def timed_log(original_log: Callable[[Any, Any, str], None], log_ns: list[int]) -> Callable[[Any, Any, str], None]:
    """``original_log`` (TensorRT log lines) timed like the monitor callbacks, each body time appended to ``log_ns``."""

    def log(router: Any, severity: Any, msg: str) -> None:
        t = time.perf_counter_ns()
        original_log(router, severity, msg)
        log_ns.append(time.perf_counter_ns() - t)

    return log


def in_build(blocks: int) -> dict[str, dict[str, float]]:
    """Callback body times inside real builds: a BuildWidget build, and plain builds with no-op / ANSI."""
    onnx = models.deep_residual(blocks).SerializeToString()
    out: dict[str, dict[str, float]] = {}
    overhead = timer_overhead_ns()
    for kind in ("noop", "widget", "ansi"):
        start = time.perf_counter()
        log_ns: list[int] = []
        if kind == "widget":
            _monitor.BuildMonitor = TimedBuildMonitor  # the thread runner makes its monitor from this name
            original_log = _engine._LogRouter.log
            _engine._LogRouter.log = timed_log(original_log, log_ns)
            try:
                widget = BuildWidget(onnx, history=False, isolation="thread")
                widget.start()
                if widget.wait(timeout=900) != "succeeded":
                    raise RuntimeError(f"widget build failed: {widget.build.error}")
                monitor = widget.build.runner.monitor  # type: ignore[attr-defined]  # the thread runner's
                if not isinstance(monitor, TimedBuildMonitor):
                    raise RuntimeError("the build did not use the timed monitor: how the runner makes it changed")
            finally:
                _monitor.BuildMonitor = BuildMonitor
                _engine._LogRouter.log = original_log
        else:
            monitor = TimedNoop() if kind == "noop" else TimedAnsi()
            plain_build(onnx, monitor)
        wall = time.perf_counter() - start
        body = monitor.durations_ns  # raw: each includes the timer's own ``overhead`` ns
        out[kind] = {
            "timer_overhead_ns": overhead,
            "calls": len(body),
            "median_ns": median(body),
            "p99_ns": percentile(body, 99),
            "max_ns": max(body),
            "total_ms": sum(body) / 1e6,
            "wall_s": wall,
            "share": sum(body) / 1e9 / wall,
        }
        if log_ns:
            out[kind].update(
                {"log_calls": len(log_ns), "log_median_ns": median(log_ns), "log_total_ms": sum(log_ns) / 1e6}
            )
    return out


def native_feasible() -> str | None:
    """Check the vtable path in a child process first: a wrong layout could crash, not just fail."""
    child = subprocess.run(
        [sys.executable, __file__, "--verify-native"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    )
    if child.returncode != 0:
        return f"probe exited {child.returncode}: {(child.stdout + child.stderr).strip()[-300:]}"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--blocks", type=int, default=400, help="deep_residual size for the in-build figure")
    parser.add_argument("--verify-native", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.verify_native:
        from _trt_path import verify

        problem = verify()
        print(problem or "ok")
        sys.exit(1 if problem else 0)

    load_start = load_avg()
    _widget._in_notebook = lambda: True
    steps = {"noop": args.steps, "widget": args.steps, "ansi": max(args.steps // 10, 1000)}
    py = per_callback(drive_python, steps)
    why_not = native_feasible()
    native = per_callback(drive_native, steps) if why_not is None else None
    build = in_build(args.blocks)

    rows = [
        [
            "python loop",
            *(f"{py[k] * 1e9:.0f}" for k in ("noop", "widget", "ansi")),
            f"{py['widget'] / py['noop']:.2f}",
            f"{py['widget'] / py['ansi']:.3f}",
        ]
    ]
    if native is not None:
        rows.append(
            [
                "TensorRT C++ path",
                *(f"{native[k] * 1e9:.0f}" for k in ("noop", "widget", "ansi")),
                f"{native['widget'] / native['noop']:.2f}",
                f"{native['widget'] / native['ansi']:.3f}",
            ]
        )
    b_ratio = build["widget"]["median_ns"] / build["noop"]["median_ns"]
    rows.append(
        [
            "real build, body+timer",
            *(f"{build[k]['median_ns']:.0f}" for k in ("noop", "widget", "ansi")),
            f"{b_ratio:.2f}",
            f"{build['widget']['median_ns'] / build['ansi']['median_ns']:.3f}",
        ]
    )
    print_table(
        "P2 cost per callback (ns, median)",
        ["driver", "no-op", "BuildMonitor", "ANSI redraw", "BM ÷ no-op", "BM ÷ ANSI"],
        rows,
    )
    print_table(
        f"P2 inside real deep_residual({args.blocks}) builds",
        ["monitor", "callbacks", "median ns", "p99 ns", "max ns", "total ms", "share of build wall"],
        [
            [
                k,
                v["calls"],
                f"{v['median_ns']:.0f}",
                f"{v['p99_ns']:.0f}",
                f"{v['max_ns']:.0f}",
                f"{v['total_ms']:.2f}",
                f"{v['share'] * 100:.3f}%",
            ]
            for k, v in build.items()
        ],
    )
    print(f"(real-build body times include the timer's own ~{build['noop']['timer_overhead_ns']:.0f} ns)")
    if why_not:
        print(f"TensorRT C++ path not measured: {why_not}")

    py_ratio = py["widget"] / py["noop"]
    figures = {
        "P2": figure(
            round(py_ratio, 2),
            f"<= {TARGET:g}x no-op",
            py_ratio <= TARGET,
            "ratio",
            "ns per callback, BuildMonitor ÷ no-op Python monitor, called from a Python loop",
            ns={k: round(v * 1e9, 1) for k, v in py.items()},
            vs_ansi=round(py["widget"] / py["ansi"], 4),
        ),
        "P2-build": figure(
            round(build["widget"]["share"] * 100, 4),
            "no target",
            None,
            "% of build wall",
            f"time inside BuildMonitor callbacks during a real deep_residual({args.blocks}) widget build",
            median_body_ratio_vs_noop=round(b_ratio, 2),
            per_monitor={k: {kk: round(vv, 4) for kk, vv in v.items()} for k, v in build.items()},
        ),
    }
    wb = build["widget"]
    if "log_calls" in wb:
        crossing_ns = native["noop"] * 1e9 if native is not None else 0.0  # C++ -> Python, measured above
        log_ms = wb["log_calls"] * crossing_ns / 1e6 + wb["log_total_ms"]
        print(
            f"TensorRT log lines into Python during the widget build: {wb['log_calls']:,} "
            f"(body median {wb['log_median_ns']:.0f} ns, total {wb['log_total_ms']:.1f} ms; with the measured "
            f"{crossing_ns:.0f} ns C++->Python crossing each ≈ {log_ms:.0f} ms = "
            f"{log_ms / 1000 / wb['wall_s'] * 100:.2f}% of the build wall)"
        )
        figures["P2-log"] = figure(
            round(log_ms / 1000 / wb["wall_s"] * 100, 3),
            "no target",
            None,
            "% of build wall",
            "TensorRT log callbacks into the widget's Python logger during the same build "
            "(body time measured + calls × the measured C++->Python crossing)",
            calls=wb["log_calls"],
            body_median_ns=round(wb["log_median_ns"], 1),
            body_total_ms=round(wb["log_total_ms"], 2),
            crossing_ns=round(crossing_ns, 1),
        )
    if native is not None:
        n_ratio = native["widget"] / native["noop"]
        figures["P2-trt"] = figure(
            round(n_ratio, 2),
            f"<= {TARGET:g}x no-op",
            n_ratio <= TARGET,
            "ratio",
            "ns per callback through TensorRT's C++ vtable + pybind11 trampoline, BuildMonitor ÷ no-op",
            ns={k: round(v * 1e9, 1) for k, v in native.items()},
            vs_ansi=round(native["widget"] / native["ansi"], 4),
        )
    else:
        figures["P2-trt"] = figure(None, f"<= {TARGET:g}x no-op", False, "ratio", f"not feasible: {why_not}")
    emit("p2_callback_cost", figures, load_avg_start=load_start)


if __name__ == "__main__":
    main()
