"""P4: Stop -> build returned, minus the rest of the step in progress (a Stop can only act at a step boundary).

synthetic: a *synthetic step driver* (a Build whose builder thread sleeps known step durations and calls the
           real BuildMonitor's step_complete after each) under a BuildWidget; Stop goes through the widget's
           stop message. Measured from max(stop, end of the step in progress) to: the driver seeing False, the
           Build being done, the widget's wait() returning with the final state sent.
real:      real RTX deep residual builds under a BuildWidget, stopped at different moments; the last
           step_complete before the return is recorded, and latency = done - max(stop, last step end).
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from typing import Any

from _common import emit, figure, load_avg, median, print_table, wait_for
from _probe import SendProbe

from trt_widget import Build, BuildWidget, _widget, models
from trt_widget import _engine as _runner  # the thread runner imports build_engine from here at each build
from trt_widget._monitor import BuildMonitor

_returns: dict[int, float] = {}  # builder thread id -> when TensorRT's build call returned
_build_engine = _runner.build_engine


def _timed_build_engine(*args: Any, **kwargs: Any) -> Any:
    """Instrumentation: note when the TensorRT build returns (splits TensorRT's unwind from ours)."""
    try:
        return _build_engine(*args, **kwargs)
    finally:
        _returns[threading.get_ident()] = time.perf_counter()


TARGET_MS = 50.0


class SyntheticStepBuild(Build):
    """A synthetic step driver in place of TensorRT: steps of known duration (sleeping, GIL released)."""

    def __init__(self, step_s: list[float], **kwargs: Any) -> None:
        super().__init__(b"synthetic step driver", history=False, isolation="thread", **kwargs)
        self.step_s = step_s
        self.step_ends: list[float] = []  # perf_counter when each step ended (just before step_complete)
        self.saw_false_at: float | None = None

    def _execute(self) -> bytes | None:
        monitor = self.monitor = BuildMonitor(self.model, self._cancel)
        monitor.phase_start("Synthetic build", None, 1)
        monitor.phase_start("Known steps", "Synthetic build", len(self.step_s))
        try:
            for i, seconds in enumerate(self.step_s):
                time.sleep(seconds)
                self.step_ends.append(time.perf_counter())
                if not monitor.step_complete("Known steps", i):
                    self.saw_false_at = time.perf_counter()
                    return None
            return b"engine"
        finally:
            monitor.phase_finish("Known steps")
            monitor.phase_finish("Synthetic build")


def synthetic_trial(rng: random.Random) -> dict[str, float]:
    step = rng.uniform(0.01, 0.4)
    build = SyntheticStepBuild([step] * 40)
    widget = BuildWidget(None, build=build)
    probe = SendProbe(widget)
    widget.start()
    first_steps = rng.randint(1, 3)
    wait_for(lambda: len(build.step_ends) >= first_steps, 60, "the first steps")
    time.sleep(rng.uniform(0, step))  # Stop somewhere inside a step
    stop_at = time.perf_counter()
    widget._handle_custom_msg({"type": "stop"}, [])  # the path a click on Stop takes
    status = widget.wait(timeout=60)
    returned = time.perf_counter()
    assert status == "cancelled", status
    ended = build.model._t0 + build.elapsed_s  # the Build's own recorded end, on the perf_counter axis
    assert build.saw_false_at is not None
    boundary = max(stop_at, build.step_ends[-1])
    # strict=False: SendProbe appends a send's time just before its keys, so a racing send may differ by one
    final_send = [t for t, keys in zip(probe.times, probe.keys, strict=False) if "status" in keys][-1]
    return {
        "step_ms": step * 1000,
        "remaining_ms": (build.step_ends[-1] - stop_at) * 1000,
        "false_ms": (build.saw_false_at - boundary) * 1000,
        "done_ms": (ended - boundary) * 1000,
        "final_sent_ms": (final_send - boundary) * 1000,
        "wait_ms": (returned - boundary) * 1000,
    }


def calibrate(onnx: bytes) -> float:
    """Duration of one unstopped widget build, to place the stops inside it."""
    widget = BuildWidget(onnx, history=False, isolation="thread")
    widget.start()
    if widget.wait(timeout=900) != "succeeded":
        raise RuntimeError(f"calibration build failed: {widget.build.error}")
    return widget.build.elapsed_s


def _cloning(build: Build) -> bool:
    running = build.model.innermost_running()
    return running is not None and running.name == "Cloning network graph"


def real_trial(onnx: bytes, stop_after: float | None) -> dict[str, Any]:
    """Stop at ``stop_after`` s into the build, or (None) while "Cloning network graph" runs (short steps)."""
    build = Build(onnx, history=False, isolation="thread")
    steps: list[tuple[float, str]] = []
    build.model.subscribe(
        lambda event, phase: steps.append((time.perf_counter(), phase.name)) if event == "step" else None
    )
    widget = BuildWidget(None, build=build)
    probe = SendProbe(widget)
    widget.start()
    wait_for(lambda: build.status != "idle", 60, "the start")
    if stop_after is None:
        wait_for(lambda: _cloning(build) or build.done(), 300, "the cloning phase")
    else:
        time.sleep(max(stop_after - build.elapsed_s, 0))
    running = build.model.innermost_running()
    stop_at = time.perf_counter()
    widget._handle_custom_msg({"type": "stop"}, [])
    status = widget.wait(timeout=900)
    returned = time.perf_counter()
    ended = build.model._t0 + build.elapsed_s  # the Build's own recorded end, on the perf_counter axis
    last_step = max((t for t, _ in steps if t <= ended), default=float("-inf"))
    boundary = max(stop_at, last_step)
    trt_returned = _returns.get(build._thread.ident if build._thread else -1, float("nan"))
    # strict=False: SendProbe appends a send's time just before its keys, so a racing send may differ by one
    final_send = [t for t, keys in zip(probe.times, probe.keys, strict=False) if "status" in keys][-1]
    return {
        "stop_at_s": stop_at - build.model._t0,
        "phase": running.name if running else "",
        "status": status,
        "waited_for_step_ms": max(last_step - stop_at, 0) * 1000,
        "trt_unwind_ms": (trt_returned - boundary) * 1000,
        "done_ms": (ended - boundary) * 1000,
        "final_sent_ms": (final_send - boundary) * 1000,
        "wait_ms": (returned - boundary) * 1000,
        "build_s": build.elapsed_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=20, help="synthetic trials")
    parser.add_argument("--blocks", type=int, default=400)
    parser.add_argument(
        "--stops",
        type=float,
        nargs="*",
        default=[0.3, 0.7],
        help="fractions of an unstopped build's duration at which real builds are stopped "
        "(plus one stop during the cloning phase)",
    )
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    load_start = load_avg()
    _widget._in_notebook = lambda: True
    rng = random.Random(args.seed)

    synthetic = [synthetic_trial(rng) for _ in range(args.trials)]
    onnx = models.deep_residual(args.blocks).SerializeToString()
    _runner.build_engine = _timed_build_engine
    duration = calibrate(onnx)
    real = [real_trial(onnx, None)] + [real_trial(onnx, f * duration) for f in args.stops]

    keys = ["false_ms", "done_ms", "final_sent_ms", "wait_ms"]
    print_table(
        f"P4 synthetic step driver, {args.trials} stops (ms after max(stop, end of step in progress))",
        ["", "driver sees False", "Build done", "final state sent", "widget.wait() returned"],
        [
            ["median", *(f"{median([t[k] for t in synthetic]):.2f}" for k in keys)],
            ["max", *(f"{max(t[k] for t in synthetic):.2f}" for k in keys)],
        ],
    )
    print(
        f"step durations {min(t['step_ms'] for t in synthetic):.0f}..{max(t['step_ms'] for t in synthetic):.0f} ms,"
        f" remaining step time at Stop up to {max(t['remaining_ms'] for t in synthetic):.0f} ms"
    )
    print_table(
        f"P4 real deep_residual({args.blocks}) builds stopped at different moments",
        [
            "stop at s",
            "phase at stop",
            "status",
            "waited for step ms",
            "TensorRT returned ms",
            "Build done ms",
            "final sent ms",
            "wait() ms",
        ],
        [
            [
                f"{r['stop_at_s']:.2f}",
                r["phase"],
                r["status"],
                f"{r['waited_for_step_ms']:.0f}",
                f"{r['trt_unwind_ms']:.1f}",
                f"{r['done_ms']:.1f}",
                f"{r['final_sent_ms']:.1f}",
                f"{r['wait_ms']:.1f}",
            ]
            for r in real
        ],
    )

    synth_worst = max(t["wait_ms"] for t in synthetic)
    stopped = [r for r in real if r["status"] == "cancelled"]
    real_worst = max((r["wait_ms"] for r in stopped), default=float("nan"))
    emit(
        "p4_stop_latency",
        {
            "P4": figure(
                round(synth_worst, 2),
                f"<= {TARGET_MS:g} ms",
                synth_worst <= TARGET_MS,
                "ms",
                "synthetic step driver: max over stops of widget.wait() return - max(stop, step end)",
                median_ms={k: round(median([t[k] for t in synthetic]), 3) for k in keys},
                max_ms={k: round(max(t[k] for t in synthetic), 3) for k in keys},
            ),
            "P4-real": figure(
                round(real_worst, 1),
                f"<= {TARGET_MS:g} ms",
                bool(stopped) and real_worst <= TARGET_MS,
                "ms",
                f"real deep_residual({args.blocks}) builds: max of widget.wait() return - "
                "max(stop, last step_complete), over the builds that ended cancelled",
                trials=[{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in real],
            ),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
