"""P15: what watching costs a build the user's own code makes (issue 26's "watched ÷ unwatched").

The user's code is bench/baselines.py's ``plain_build`` (parse + ``build_serialized_network``, knowing nothing of
trt_widget). Unwatched: called as is. Watched: called inside ``with trt_widget.watch():`` (the Builder patched,
trt_widget's monitor on the config, phase model, history and resource sampling as by default). The two kinds
alternate (rotating order), the first of each left out; P15 is the ratio of the median wall times.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from _common import emit, figure, load_avg, median, print_table
from baselines import plain_build

from trt_widget import models
from trt_widget.watch import watch

TARGET = 1.02


def run_kind(kind: str, onnx: bytes, history: str) -> float:
    t0 = time.perf_counter()
    if kind == "unwatched":
        plain_build(onnx)
    else:
        with watch(history=history, display=False) as w:
            plain_build(onnx)
        (build,) = w.builds
        if build.status != "succeeded":
            raise RuntimeError(f"the watched build ended {build.status}")
    wall = time.perf_counter() - t0
    if kind == "watched" and build.history is not None:  # written after the build: awaited, not timed
        build.history.recorded.wait(60)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="measured builds of each kind (after one warm-up)")
    parser.add_argument("--blocks", type=int, default=400, help="deep_residual(N): a build of a few seconds")
    args = parser.parse_args()
    load_start = load_avg()
    onnx = models.deep_residual(args.blocks).SerializeToString()
    kinds = ["unwatched", "watched"]
    walls: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        history = os.path.join(tmp, "history.sqlite")
        for i in range(args.repeats + 1):
            for kind in kinds if i % 2 == 0 else kinds[::-1]:
                wall = run_kind(kind, onnx, history)
                if i > 0:
                    walls[kind].append(wall)
    med = {k: median(v) for k, v in walls.items()}
    ratio = round(med["watched"] / med["unwatched"], 4)
    print_table(
        f"P15: deep_residual({args.blocks}) built by the user's own code, median of {args.repeats} interleaved (s)",
        ["kind", "median", "min", "max"],
        [[k, med[k], min(walls[k]), max(walls[k])] for k in kinds],
    )
    emit(
        "p15_watch",
        {
            "P15": figure(
                ratio,
                f"<= {TARGET}",
                ratio <= TARGET,
                "ratio",
                f"deep_residual({args.blocks}) wall time of the user's own build code, inside `with "
                f"trt_widget.watch()` ÷ the same code unwatched, medians of {args.repeats} interleaved",
                wall_s={k: round(v, 4) for k, v in med.items()},
            )
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
