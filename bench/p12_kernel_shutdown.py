"""P12: how long a Jupyter kernel takes to shut down ("Shut down" / "Restart") after trt_widget builds in it.

A kernel that built with the default runner keeps a warm builder process. P12 is the median time of
``shutdown_kernel(now=False)`` for such a kernel ÷ the same for a kernel that built with isolation="thread"
(no worker); P12-s is that median in seconds. Kernels are started one at a time, interleaved.
"""

from __future__ import annotations

import argparse
import time

from _common import emit, figure, load_avg, median, print_table
from jupyter_client.manager import start_new_kernel

P12_TARGET = 1.5
CODE = """
from trt_widget import Build, models
assert Build(models.to_bytes(models.deep_residual(4)), history=False, isolation={isolation!r}).start().wait(300) \\
    == "succeeded"
"""


def shutdown_time(isolation: str) -> float:
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        reply = client.execute_interactive(CODE.format(isolation=isolation), timeout=300, output_hook=lambda m: None)
        assert reply["content"]["status"] == "ok", reply["content"]
        start = time.perf_counter()
        manager.shutdown_kernel(now=False)
        return time.perf_counter() - start
    finally:
        client.stop_channels()
        if manager.is_alive():
            manager.shutdown_kernel(now=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load_start = load_avg()
    times: dict[str, list[float]] = {"process": [], "thread": []}
    for i in range(args.repeats):
        for isolation in ("process", "thread") if i % 2 == 0 else ("thread", "process"):
            times[isolation].append(shutdown_time(isolation))
    process, thread = median(times["process"]), median(times["thread"])
    ratio = process / thread
    print_table(
        "P12: kernel shutdown after a build (median s)",
        ["runner", "median s", "all s"],
        [[name, round(median(ts), 3), [round(t, 3) for t in ts]] for name, ts in times.items()],
    )
    emit(
        "p12_kernel_shutdown",
        {
            "P12": figure(
                ratio,
                f"<= {P12_TARGET}",
                ratio <= P12_TARGET,
                "×",
                "kernel shutdown with a warm builder process ÷ after a thread build",
            ),
            "P12-s": figure(process, "", None, "s", "kernel shutdown with a warm builder process, median"),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
