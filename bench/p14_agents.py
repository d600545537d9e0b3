"""P14: agents and editors — how fast MCP progress notifications follow the builder, and how fast a cancel over
MCP or LSP ends a build (real TensorRT-for-RTX builds in the default builder process).

P14-progress:    ``trt-widget mcp`` over streamable HTTP (uvicorn on a thread of this process, the SDK's client on
                 this thread), --builds deep_residual(--blocks) builds through build_engine: for every phase
                 start, the receipt at the client of the first notification sent after it (its progress value is
                 the build time at sending) minus the phase start in the builder process (the shared monotonic
                 clock): median and p95. Notifications are throttled to 10 a second, so a phase start may wait
                 up to 0.1 s for its turn.
P14-cancel-mcp:  --trials build_engine calls of deep_residual(--long-blocks) cancelled by the client at spread
                 moments of the build: the build's end (server time) minus the moment the client cancelled; p95.
P14-cancel-lsp:  the same through ``trt-widget lsp`` (a subprocess over stdio): window/workDoneProgress/cancel
                 sent -> the build's end; p95.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
from _common import emit, figure, load_avg, median, percentile, print_table
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from trt_widget.mcp import BuildRegistry, HttpServerThread, create_server
from trt_widget.models import deep_residual, to_bytes

PROGRESS_TARGET_MS = 150.0  # the 100 ms throttle plus transport
CANCEL_TARGET_S = 1.0


class TimedRegistry(BuildRegistry):
    """Records every phase start of the builds it creates (build time) and, once ended, the build's clock
    origin on this process's perf_counter."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: dict[str, list[tuple[str, int, float]]] = {}
        self.origin: dict[str, float] = {}

    def create(self, model: str, **kwargs: Any) -> tuple[str, Any]:
        build_id, build = super().create(model, **kwargs)
        starts = self.starts.setdefault(build_id, [])

        def on_event(event: Any) -> None:
            if event.kind == "phase_start":
                starts.append((event.phase.name, event.phase.depth, event.phase.start_s))
            elif event.kind == "end":
                self.origin[build_id] = time.perf_counter() - build.model.now()

        build.subscribe(on_event, steps=False)
        return build_id, build


def connect(server: HttpServerThread) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}, timeout=httpx2.Timeout(30, read=300))
    return Client(streamable_http_client(server.url, http_client=http))


def progress_latencies(
    server: HttpServerThread, registry: TimedRegistry, model: Path, builds: int
) -> tuple[list[float], int]:
    """Per phase start: the first notification the server sent after it (its progress value is the build time
    at sending) -> receipt at the client minus the phase start, ms. Phase starts after the last notification
    (the build ended first: the result shows them) are counted, not timed."""
    latencies: list[float] = []
    unshown = 0
    for _ in range(builds):
        received: list[tuple[float, float]] = []

        async def on_progress(value: float, total: float | None, message: str | None, into: Any = received) -> None:
            into.append((time.perf_counter(), value))

        async def main(progress: Any = on_progress) -> Any:
            async with connect(server) as client:
                arguments = {"model": str(model), "output": str(model) + ".engine"}
                return await client.call_tool("build_engine", arguments, progress_callback=progress)

        result = anyio.run(main)
        build_id = result.structured_content["build_id"]
        origin = registry.origin[build_id]
        for _name, _depth, start in registry.starts[build_id]:
            shown = next((receipt for receipt, sent in received if sent >= start), None)
            if shown is None:
                unshown += 1
            else:
                latencies.append((shown - (origin + start)) * 1000)
    return latencies, unshown


def mcp_cancels(server: HttpServerThread, model: Path, delays: list[float]) -> list[float]:
    out: list[float] = []
    for delay in delays:

        async def main(delay: float = delay) -> float:
            first = anyio.Event()

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                first.set()

            async with connect(server) as client:
                cancelled_at = 0.0
                async with anyio.create_task_group() as group:
                    group.start_soon(
                        lambda: client.call_tool(
                            "build_engine",
                            {"model": str(model), "output": str(model) + ".engine"},
                            progress_callback=on_progress,
                        )
                    )
                    await first.wait()
                    await anyio.sleep(delay)
                    cancelled_at = time.time()
                    group.cancel_scope.cancel()
                builds = (await client.call_tool("list_builds", {})).structured_content["builds"]
                status = await client.call_tool("build_status", {"build_id": builds[0]["build_id"], "wait_s": 60})
                ended = status.structured_content
                assert ended["status"] == "cancelled", ended
                return float(ended["ended_at"]) - cancelled_at

        out.append(anyio.run(main))
    return out


def _send(pipe: Any, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    pipe.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    pipe.flush()


def _receive(pipe: Any) -> dict[str, Any]:
    length = 0
    while (line := pipe.readline().strip()) != b"":
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return dict(json.loads(pipe.read(length)))


def lsp_cancels(model: Path, delays: list[float]) -> list[float]:
    server = subprocess.Popen(
        [sys.executable, "-m", "trt_widget", "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(os.environ)
    )
    out: list[float] = []
    try:
        _send(
            server.stdin,
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"processId": os.getpid(), "capabilities": {"window": {"workDoneProgress": True}}},
            },
        )
        while "result" not in _receive(server.stdout):
            pass
        _send(server.stdin, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        for n, delay in enumerate(delays, start=1):
            arguments = [model.as_uri(), {"output": str(model) + ".engine"}]
            _send(
                server.stdin,
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "workspace/executeCommand",
                    "params": {"command": "trtWidget.build", "arguments": arguments},
                },
            )
            cancel_due: float | None = None
            token = None
            cancelled_at = 0.0
            while True:
                message = _receive(server.stdout)
                if message.get("method") == "window/workDoneProgress/create":
                    token = message["params"]["token"]
                    _send(server.stdin, {"jsonrpc": "2.0", "id": message["id"], "result": None})
                elif message.get("method") == "$/progress" and cancel_due is None:
                    cancel_due = time.monotonic() + delay
                    time.sleep(delay)  # the server keeps writing; the pipe buffers it
                    cancelled_at = time.time()
                    _send(
                        server.stdin,
                        {"jsonrpc": "2.0", "method": "window/workDoneProgress/cancel", "params": {"token": token}},
                    )
                elif message.get("id") == n:
                    result = message["result"]
                    assert result["status"] == "cancelled", result
                    out.append(float(result["ended_at"]) - cancelled_at)
                    break
    finally:
        server.stdin.close()
        server.wait(30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--builds", type=int, default=5, help="builds for the progress latency")
    parser.add_argument("--blocks", type=int, default=100)
    parser.add_argument("--trials", type=int, default=6, help="cancels per protocol")
    parser.add_argument("--long-blocks", type=int, default=400)
    args = parser.parse_args()
    load_start = load_avg()
    delays = [0.1 + 1.4 * i / max(args.trials - 1, 1) for i in range(args.trials)]  # 0.1 .. 1.5 s into the build
    with tempfile.TemporaryDirectory(prefix="p14-") as where:
        model = Path(where) / "model.onnx"
        model.write_bytes(to_bytes(deep_residual(args.blocks)))
        long = Path(where) / "long.onnx"
        long.write_bytes(to_bytes(deep_residual(args.long_blocks)))
        registry = TimedRegistry()
        with HttpServerThread(create_server(registry)) as server:
            latencies, unshown = progress_latencies(server, registry, model, args.builds)
            mcp = mcp_cancels(server, long, delays)
        lsp = lsp_cancels(long, delays)
    print_table(
        f"P14-progress: builder phase start -> MCP progress notification at the client, {args.builds} builds",
        ["phase starts", "after the last notification", "median ms", "p95 ms", "max ms"],
        [[len(latencies), unshown, median(latencies), percentile(latencies, 95), max(latencies)]],
    )
    print_table(
        f"P14-cancel: cancel sent -> build ended (s), {args.trials} trials, 0.1 .. 1.5 s after the first progress",
        ["protocol", "median s", "p95 s", "max s"],
        [[name, median(v), percentile(v, 95), max(v)] for name, v in (("MCP (HTTP)", mcp), ("LSP (stdio)", lsp))],
    )
    emit(
        "p14",
        {
            "P14-progress": figure(
                round(percentile(latencies, 95), 1),
                f"<= {PROGRESS_TARGET_MS:g} ms (p95)",
                percentile(latencies, 95) <= PROGRESS_TARGET_MS,
                "ms",
                f"deep_residual({args.blocks}) builds over MCP (HTTP): builder phase start -> progress notification "
                f"at the client (the first notification sent after it), p95 of {len(latencies)}",
                median_ms=round(median(latencies), 1),
            ),
            "P14-cancel-mcp": figure(
                round(percentile(mcp, 95), 3),
                f"<= {CANCEL_TARGET_S:g} s (p95)",
                percentile(mcp, 95) <= CANCEL_TARGET_S,
                "s",
                f"MCP client cancels build_engine (notifications/cancelled / closed stream) -> build ended, p95 of "
                f"{len(mcp)}",
                median_s=round(median(mcp), 3),
            ),
            "P14-cancel-lsp": figure(
                round(percentile(lsp, 95), 3),
                f"<= {CANCEL_TARGET_S:g} s (p95)",
                percentile(lsp, 95) <= CANCEL_TARGET_S,
                "s",
                f"LSP window/workDoneProgress/cancel -> build ended, p95 of {len(lsp)}",
                median_s=round(median(lsp), 3),
            ),
        },
        load_avg_start=load_start,
    )


if __name__ == "__main__":
    main()
