"""P9: the build service (``trt-widget serve``) — how fast events reach an SSE client, and how many per second.

One server on 127.0.0.1 in this process (uvicorn on a thread, as in the tests); the SSE readers are real HTTP
clients on threads of another process (as they would be on other machines).

P9-latency:   real deep_residual(--blocks) RTX builds posted over HTTP, one SSE subscriber each; for every
              phase_start delivered live, receipt at the client minus the builder's phase start (TensorRT's
              callback in the builder process, on the shared monotonic clock): p50 / p95 / max.
P9-fanout:    the same with 20 subscribers on each build (every subscriber's every live phase_start).
P9-rate:      a GPU-shaped recording (~--measurements x 3 events; no real build makes that many) replayed at full
              speed by a Build in the server, with 1 and with 20 live subscribers: events delivered per second to
              each subscriber (from the build's start to its build_end at the client).
P9-replay:    a late subscriber reading the stored log of that finished build: events per second.
P9-builder:   the replaying Build's wall time with 20 live subscribers ÷ with none (the server never holds the
              builder back for its readers).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
import threading
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

import httpx
from _common import emit, figure, load_avg, median, percentile, print_table

from trt_widget._build import Build
from trt_widget._events import attach_events
from trt_widget.models import deep_residual, to_bytes
from trt_widget.runners import gpu_shaped_events
from trt_widget.serve import ServerThread

LATENCY_TARGET_MS = 50.0
BUILDER_TARGET = 1.10


_clients: list[httpx.Client] = []


def read_streams(url: str, token: str, build_id: str, readers: int) -> list[dict[str, Any]]:
    """In a reader process: ``readers`` SSE streams of one build on threads; per stream when it opened, the
    events received, the last receipt time and (receipt, t) of each phase_start (perf_counter: on Linux the
    system-wide monotonic clock, comparable with the server process's)."""
    results: list[dict[str, Any]] = [{} for _ in range(readers)]
    while len(_clients) < readers:  # made once per reader process (making a client costs ~10 ms of CPU)
        _clients.append(httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120))

    def read(slot: int) -> None:
        starts, count, last = [], 0, 0.0
        with _clients[slot].stream("GET", f"/builds/{build_id}/events") as reply:
            opened = time.perf_counter()
            for line in reply.iter_lines():
                if line.startswith("data: "):
                    last = time.perf_counter()
                    event = json.loads(line[6:])
                    count += 1
                    if event["event"] == "phase_start":
                        starts.append((last, event["t"]))
        results[slot] = {"opened": opened, "count": count, "last": last, "starts": starts}

    threads = [threading.Thread(target=read, args=(i,)) for i in range(readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def post(client: httpx.Client, body: bytes) -> str:
    reply = client.post("/builds", content=body)
    reply.raise_for_status()
    return str(reply.json()["id"])


def latencies(
    server: ServerThread, client: httpx.Client, pool: Executor, onnx: bytes, builds: int, fanout: int
) -> list[float]:
    """ms from each live phase_start in the builder to its receipt, over ``builds`` builds x ``fanout`` readers."""
    out: list[float] = []
    for _ in range(builds):
        build_id = post(client, onnx)
        record = server.store.get(build_id)
        assert record is not None and record.build is not None
        model = record.build.model
        t0 = time.perf_counter() - model.now()  # the build's time 0 on the shared monotonic clock
        for reader in pool.submit(read_streams, server.url, server.token, build_id, fanout).result():
            for received, t in reader["starts"]:
                if t0 + t >= reader["opened"]:  # delivered live, not replayed from the log
                    out.append((received - t0 - t) * 1000)
    return out


def rate(server: ServerThread, pool: Executor, events: list[dict[str, Any]], fanout: int) -> dict[str, Any]:
    """A replaying Build in the server with ``fanout`` live readers: its wall time and each reader's events/s."""
    build = Build.from_events(events)
    server.store.reserve()
    build_id, _ = server.store.new_dir()
    started = time.perf_counter()
    record = server.store.launch(build_id, build, name="replay", options={}, attach=attach_events)
    readers = pool.submit(read_streams, server.url, server.token, build_id, fanout) if fanout else None
    build.wait()
    wall = time.perf_counter() - started
    results = readers.result() if readers is not None else []
    build.events.join(60)
    per_reader = [r["count"] / (r["last"] - started) for r in results]
    assert all(r["count"] == record.event_count() for r in results)
    return {"id": build_id, "wall_s": wall, "events": record.event_count(), "rates": per_reader}


def replay_rate(server: ServerThread, pool: Executor, build_id: str) -> tuple[int, float]:
    started = time.perf_counter()
    (reader,) = pool.submit(read_streams, server.url, server.token, build_id, 1).result()
    return reader["count"], reader["count"] / (reader["last"] - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=200, help="deep_residual blocks for the latency builds")
    parser.add_argument("--builds", type=int, default=5, help="builds for P9-latency (and a third of it for fanout)")
    parser.add_argument("--measurements", type=int, default=10000, help="size of the replayed recording")
    args = parser.parse_args()
    load_start = load_avg()
    onnx = to_bytes(deep_residual(args.blocks))
    recording = list(gpu_shaped_events(measurements=args.measurements))
    spawn = multiprocessing.get_context("spawn")
    with (
        tempfile.TemporaryDirectory() as data,
        ServerThread(data=data, max_concurrent=2) as server,
        ProcessPoolExecutor(1, mp_context=spawn) as pool,  # the SSE readers run in their own process
    ):
        headers = {"Authorization": f"Bearer {server.token}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
            warm = post(client, onnx)  # warm: the builder process, TensorRT's first build, the reader process
            pool.submit(read_streams, server.url, server.token, warm, 20).result()
            single = latencies(server, client, pool, onnx, args.builds, 1)
            fanned = latencies(server, client, pool, onnx, max(1, args.builds // 3), 20)
        alone = rate(server, pool, recording, 0)
        one = rate(server, pool, recording, 1)
        twenty = rate(server, pool, recording, 20)
        replayed, replay_per_s = replay_rate(server, pool, twenty["id"])

    print_table(
        "P9-latency: builder phase start -> SSE client (ms)",
        ["readers", "samples", "p50", "p95", "max"],
        [[n, len(v), median(v), percentile(v, 95), max(v)] for n, v in ((1, single), (20, fanned))],
    )
    print_table(
        f"P9-rate: a {len(recording):,}-event recording replayed at full speed in the server",
        ["live readers", "events stored", "builder wall s", "events/s per reader (median)", "slowest reader"],
        [
            [0, alone["events"], alone["wall_s"], "-", "-"],
            [1, one["events"], one["wall_s"], median(one["rates"]), min(one["rates"])],
            [20, twenty["events"], twenty["wall_s"], median(twenty["rates"]), min(twenty["rates"])],
        ],
    )
    print_table("P9-replay: a late reader of the stored log", ["events", "events/s"], [[replayed, replay_per_s]])
    builder_ratio = twenty["wall_s"] / alone["wall_s"]
    emit(
        "p9",
        {
            "P9-latency": figure(
                round(percentile(single, 95), 2),
                f"<= {LATENCY_TARGET_MS} ms (p95)",
                percentile(single, 95) <= LATENCY_TARGET_MS,
                "ms",
                f"real deep_residual({args.blocks}) builds over HTTP: builder phase start -> SSE client, p95 of "
                f"{len(single)} live phase starts",
                median_ms=median(single),
                max_ms=max(single),
            ),
            "P9-fanout": figure(
                round(percentile(fanned, 95), 2),
                f"<= {LATENCY_TARGET_MS} ms (p95)",
                percentile(fanned, 95) <= LATENCY_TARGET_MS,
                "ms",
                f"the same with 20 SSE readers per build, p95 of {len(fanned)} deliveries",
                median_ms=median(fanned),
                max_ms=max(fanned),
            ),
            "P9-rate": figure(
                round(median(one["rates"])),
                "no target",
                None,
                "events/s",
                f"a {one['events']:,}-event replay at full speed, to one live SSE reader",
                twenty_readers_median=round(median(twenty["rates"])),
                twenty_readers_slowest=round(min(twenty["rates"])),
            ),
            "P9-replay": figure(
                round(replay_per_s), "no target", None, "events/s", f"a late reader of a {replayed:,}-event stored log"
            ),
            "P9-builder": figure(
                round(builder_ratio, 3),
                f"<= {BUILDER_TARGET}",
                builder_ratio <= BUILDER_TARGET,
                "ratio",
                "the replaying Build's wall time with 20 live SSE readers ÷ with none",
                alone_s=alone["wall_s"],
                twenty_s=twenty["wall_s"],
            ),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
