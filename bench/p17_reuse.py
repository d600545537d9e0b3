"""P17: reuse (issue 40). P17: a reuse=True build of resnet50 that finds its engine (at output=) ÷ the full build of
the same model, wall time from start() to the end, medians of interleaved repeats; the reused build hashes the
~100 MB model and the engine and copies nothing. P17-hash: seconds to hash 1 GiB (the cost per GiB of model and
external data a reuse=True build pays before it can skip TensorRT), read from a file of that size.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, figure, load_avg, median, print_table

from trt_widget import Build
from trt_widget.models import resnet50, to_bytes
from trt_widget.provenance import file_sha256

RATIO_TARGET = 0.15


def timed(model: str, **options: Any) -> tuple[float, Build]:
    build = Build(model, history=False, resources=False, **options)
    began = time.perf_counter()
    build.start()
    build.wait()
    elapsed = time.perf_counter() - began
    assert build.status == "succeeded", build.status_detail
    return elapsed, build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hash-mib", type=int, default=1024)
    args = parser.parse_args()
    load_start = load_avg()
    with tempfile.TemporaryDirectory(prefix="p17-") as folder:
        model = os.path.join(folder, "resnet50.onnx")
        Path(model).write_bytes(to_bytes(resnet50()))
        engine, cache = os.path.join(folder, "r.engine"), os.path.join(folder, "cache")
        full: list[float] = []
        reused: list[float] = []
        size = 0
        for n in range(args.repeats):
            seconds, build = timed(model, output=os.path.join(folder, f"full{n}.engine"))
            full.append(seconds)
            size = build.engine_size or 0
            if n == 0:
                timed(model, output=engine, reuse=True, reuse_dir=cache)  # the engine to reuse
            seconds, build = timed(model, output=engine, reuse=True, reuse_dir=cache)
            assert build.reused_from == engine, build.status_detail
            reused.append(seconds)
        big = os.path.join(folder, "big.bin")
        with open(big, "wb") as handle:
            block = os.urandom(1 << 20)
            for _ in range(args.hash_mib):
                handle.write(block)
        began = time.perf_counter()
        file_sha256(big)
        hash_s = (time.perf_counter() - began) * 1024 / args.hash_mib
    ratio = median(reused) / median(full)
    print_table(
        "P17: reused resnet50 build vs full build",
        ["full s (median)", "reused s (median)", "ratio", "engine MB", "hash s/GiB"],
        [[median(full), median(reused), ratio, size / 1e6, hash_s]],
    )
    emit(
        "p17_reuse",
        {
            "P17": figure(
                ratio,
                f"<= {RATIO_TARGET}",
                ratio <= RATIO_TARGET,
                "x",
                "reuse=True build of resnet50 that finds its engine ÷ the full build",
                full_s=median(full),
                reused_s=median(reused),
                engine_bytes=size,
            ),
            "P17-hash": figure(hash_s, "info", None, "s", "seconds to hash 1 GiB of model / external data"),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
