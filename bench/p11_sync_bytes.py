"""P11: bytes the widget sends to the front end while a GPU-shaped build plays (issue "GPU-sized builds").

A synthetic recording shaped like a real TensorRT 10 GPU build (``trt_widget.runners.gpu_shaped_events``: ~1,200
phase instances at depth 8, ~1,100 "Measuring tactic time" under long "Evaluating tactic times" parents) is
replayed at its recorded pace (~16 s) into a ``BuildWidget``. Every send of the pump (the one writer of synced
traits) is measured as the JSON text of the traits it changes, as the kernel would put it on the wire.
P11-total: bytes over the whole build; P11-update: median bytes per send; P11-full: what the same sends would
have cost if every send carried the whole row list (the protocol before row deltas), for comparison.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from _common import emit, figure, load_avg, median, percentile, print_table

import trt_widget._widget
from trt_widget import BuildWidget
from trt_widget.runners import gpu_shaped_events

trt_widget._widget._in_notebook = lambda: True  # as in a kernel: no terminal view printed beside the numbers

TOTAL_TARGET = 2_000_000
UPDATE_TARGET = 20_000


def measure(measurements: int, seconds: float) -> dict[str, Any]:
    events = list(gpu_shaped_events(measurements=measurements, seconds=seconds, threads=2))
    widget = BuildWidget.from_events(events, speed=1.0)
    sends: list[int] = []
    full_sends: list[int] = []
    apply = widget._apply

    def counting(changed: dict[str, Any]) -> None:
        sends.append(len(json.dumps(changed)))
        full_sends.append(
            len(json.dumps({k: v for k, v in changed.items() if k != "phases_delta"}))
            + len(widget._pump._rows.text()) * ("phases_json" not in changed)
        )
        apply(changed)

    widget._apply = counting  # type: ignore[method-assign]
    widget._pump.send = counting
    widget.start()
    status = widget.wait(seconds * 4 + 60)
    widget._pump.join(10)
    assert status == "succeeded", (status, widget.status_detail)
    return {
        "instances": len(widget.build.model.rows()),
        "sends": len(sends),
        "total": sum(sends),
        "median": median(sends),
        "p95": percentile(sends, 95),
        "full_total": sum(full_sends),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--measurements", type=int, default=1_100)
    parser.add_argument("--seconds", type=float, default=16.0)
    args = parser.parse_args()
    load_start = load_avg()
    r = measure(args.measurements, args.seconds)
    print_table(
        f"P11: bytes to the front end, GPU-shaped replay ({r['instances']} instances, {args.seconds:g} s)",
        ["sends", "total B", "median B/send", "p95 B/send", "whole list every send, total B"],
        [[r["sends"], r["total"], round(r["median"]), round(r["p95"]), r["full_total"]]],
    )
    emit(
        "p11_sync_bytes",
        {
            "P11-total": figure(
                r["total"],
                f"<= {TOTAL_TARGET:,} B",
                r["total"] <= TOTAL_TARGET,
                "B",
                "bytes sent over a ~16 s GPU-shaped build",
                sends=r["sends"],
                instances=r["instances"],
            ),
            "P11-update": figure(
                r["median"],
                f"<= {UPDATE_TARGET:,} B",
                r["median"] <= UPDATE_TARGET,
                "B",
                "median bytes per send",
                p95=r["p95"],
            ),
            "P11-full": figure(r["full_total"], "", None, "B", "the same sends with the whole row list in each"),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
