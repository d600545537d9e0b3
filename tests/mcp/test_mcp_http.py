"""The MCP server over streamable HTTP with the SDK's own client: real RTX builds, progress, cancel, budget, bad
input as tool errors, concurrent calls, start/poll/stop, timings, and the bearer token. One server per module."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from fixture_types import RunAnyio, WaitUntil
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from trt_widget._backend import select_backend
from trt_widget._build import AFTER_PHASE
from trt_widget._engine import BEFORE_PHASES
from trt_widget.mcp import HttpServerThread
from trt_widget.runners import START_PHASE

ROOTS = (BEFORE_PHASES["model"], START_PHASE, "Building engine", AFTER_PHASE)  # top-level phases of a build


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServerThread]:
    with HttpServerThread() as running:
        yield running


@contextlib.asynccontextmanager
async def connect(server: HttpServerThread, token: str | None = None) -> AsyncIterator[Client]:
    """An SDK client session; its HTTP client is closed with it (the SDK leaves a client it was given open)."""
    headers = {"Authorization": f"Bearer {token or server.token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
        Client(streamable_http_client(server.url, http_client=http)) as client,
    ):
        yield client


class Progress:
    """A progress callback that keeps (client time, progress, message); ``first`` is set by the first message
    holding ``until``."""

    def __init__(self, until: str = "") -> None:
        self.seen: list[tuple[float, float, str | None]] = []
        self.first = anyio.Event()
        self.until = until

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((time.time(), progress, message))
        if self.until in (message or ""):
            self.first.set()


def test_a_build_reports_increasing_progress_and_a_structured_result(
    server: Any, agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path
) -> None:
    progress = Progress()
    engine = tmp_path / "long.engine"

    async def main() -> Any:
        async with connect(server) as client:
            return await client.call_tool(
                "build_engine", {"model": str(agent_models["long"]), "output": str(engine)}, progress_callback=progress
            )

    result = run_async(main)
    assert not result.is_error, result.content
    out = result.structured_content
    assert out["status"] == "succeeded"
    assert out["engine_path"] == str(engine) and engine.stat().st_size == out["engine_bytes"] > 0
    assert out["top_phases"] and out["top_phases"][0]["self_s"] > 0
    assert sum(p["self_s"] for p in out["top_phases"]) <= out["build_s"] + 0.01
    assert "succeeded" in result.content[0].text and str(engine) in result.content[0].text
    values = [p for _, p, _ in progress.seen]
    assert len(values) >= 3
    assert all(b > a for a, b in itertools.pairwise(values)), values  # strictly increasing
    # <= 10 a second: sends are 0.1 s apart; each value is the build time read a moment after its send began, and
    # that moment varies (a thread paused by a loaded runner reads later: the next value then comes sooner after
    # it). So: no two close together, and over the whole span no more than one per 0.1 s (a late first read aside)
    assert all(b - a >= 0.05 for a, b in itertools.pairwise(values)), values
    assert values[-1] - values[0] >= 0.1 * (len(values) - 1) - 0.5, values
    messages = [m for _, _, m in progress.seen]
    assert all(m and m.startswith(ROOTS) for m in messages), messages
    if select_backend()[0] == "rtx":  # RTX's own phase; NVIDIA TensorRT has none of that name
        assert any(" › " in m and "Determining refit engines" in m for m in messages if m), messages


@pytest.mark.rtx_long_step
def test_a_cancelled_call_stops_the_build_within_a_second_and_the_server_keeps_serving(
    server: Any, agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path
) -> None:
    progress = Progress(until="Determining refit engines")  # one step of seconds: no step boundary to stop at

    async def main() -> tuple[dict[str, Any], Any]:
        async with connect(server) as client:
            async with anyio.create_task_group() as group:
                group.start_soon(
                    lambda: client.call_tool(
                        "build_engine",
                        {"model": str(agent_models["long"]), "output": str(tmp_path / "x.engine")},
                        progress_callback=progress,
                    )
                )
                await progress.first.wait()  # a fixed sleep after the first could land anywhere on a loaded machine
                group.cancel_scope.cancel()
            builds = (await client.call_tool("list_builds", {})).structured_content["builds"]
            build_id = next(b["build_id"] for b in builds if b["model"] == str(agent_models["long"]))
            status = await client.call_tool("build_status", {"build_id": build_id, "wait_s": 30})
            after = await client.call_tool(
                "build_engine", {"model": str(agent_models["small"]), "output": str(tmp_path / "small.engine")}
            )
            return status.structured_content, after

    status, after = run_async(main)
    assert status["status"] == "cancelled", status
    assert "cancelled the call" in status["detail"]
    # the builder process was terminated inside the step, not waited for to its end (not timed: a loaded 2-core
    # runner stretches any bound)
    assert "terminated" in status["detail"], status
    assert not (tmp_path / "x.engine").exists()
    assert not after.is_error and after.structured_content["status"] == "succeeded"


def test_a_budget_cancels_the_build(
    server: Any, agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path
) -> None:
    async def main() -> Any:
        async with connect(server) as client:
            return await client.call_tool(
                "build_engine",
                {"model": str(agent_models["long"]), "budget": 0.5, "output": str(tmp_path / "x.engine")},
            )

    result = run_async(main)
    out = result.structured_content
    assert out["status"] == "cancelled" and "time budget of 0.5 s exceeded" in out["detail"], out
    assert not result.is_error  # the tool did what was asked: the result says cancelled, and why
    assert out["build_s"] <= 0.5 + 1.0 and out["engine_path"] is None
    assert not (tmp_path / "x.engine").exists()


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"model": "/nonexistent/model.onnx"}, "ONNX file not found: /nonexistent/model.onnx"),
        ({"model": "{text}"}, "could not parse"),
        ({"model": "{refused}"}, "node 'frob_1' (Frobnicate)"),
        (
            {"model": "{small}", "options": {"opt_level": 3}},
            "unknown build option 'opt_level'; did you mean 'optimization_level'?",
        ),
        ({"model": "{small}", "options": {"optimization_level": 9}}, "optimization_level must be an integer 0..5"),
        ({"model": "{small}", "options": {"isolation": "thread"}}, "cannot be set here"),
        ({"model": "{small}", "budget": -1}, "budget"),
        ({"model": "{small}", "output": "{small}"}, "is the model file itself"),
    ],
)
def test_bad_input_is_a_readable_tool_error(
    server: Any, agent_models: dict[str, Path], run_async: RunAnyio, arguments: dict[str, Any], says: str
) -> None:
    def fill(value: Any) -> Any:
        return str(agent_models[value[1:-1]]) if isinstance(value, str) and value.startswith("{") else value

    arguments = {k: fill(v) for k, v in arguments.items()}
    before = agent_models["small"].read_bytes()

    async def main() -> tuple[Any, Any]:
        async with connect(server) as client:
            bad = await client.call_tool("build_engine", arguments)
            return bad, await client.call_tool("list_builds", {})

    bad, still = run_async(main)
    assert bad.is_error
    assert says in bad.content[0].text, bad.content[0].text
    assert not still.is_error  # the server still serves
    assert agent_models["small"].read_bytes() == before


def test_two_concurrent_calls_build_two_engines(
    server: Any, agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path
) -> None:
    results: dict[str, Any] = {}

    async def main() -> None:
        async with connect(server) as client:

            async def build(name: str) -> None:
                arguments = {"model": str(agent_models["small"]), "output": str(tmp_path / f"{name}.engine")}
                results[name] = await client.call_tool("build_engine", arguments, progress_callback=Progress())

            async with anyio.create_task_group() as group:
                group.start_soon(build, "a")
                group.start_soon(build, "b")

    run_async(main)
    a, b = results["a"].structured_content, results["b"].structured_content
    assert a["status"] == b["status"] == "succeeded"
    assert a["build_id"] != b["build_id"]
    assert (tmp_path / "a.engine").stat().st_size == a["engine_bytes"]
    assert (tmp_path / "b.engine").stat().st_size == b["engine_bytes"]
    overlap = min(a["ended_at"], b["ended_at"]) - max(a["created_at"], b["created_at"])
    assert overlap > 0  # they ran at the same time, not one after the other


def test_start_poll_stop_for_clients_that_do_not_keep_a_request_open(
    server: Any, agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path, wait_until: WaitUntil
) -> None:
    async def main() -> tuple[Any, ...]:
        async with connect(server) as client:
            started = (
                await client.call_tool(
                    "start_build", {"model": str(agent_models["long"]), "output": str(tmp_path / "x.engine")}
                )
            ).structured_content
            build_id = started["build_id"]
            deadline = time.monotonic() + 60
            while True:  # poll until a phase runs
                polled = (await client.call_tool("build_status", {"build_id": build_id})).structured_content
                if polled["phase"] or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.05)
            early = await client.call_tool("build_timings", {"build_id": build_id})
            stopped = (await client.call_tool("stop_build", {"build_id": build_id})).structured_content
            final = (await client.call_tool("build_status", {"build_id": build_id, "wait_s": 30})).structured_content
            again = (await client.call_tool("stop_build", {"build_id": build_id})).structured_content
            unknown = await client.call_tool("build_status", {"build_id": "b999"})
            return started, polled, early, stopped, final, again, unknown

    started, polled, early, stopped, final, again, unknown = run_async(main)
    assert started["status"] in ("queued", "running") and started["ended_at"] is None
    assert polled["phase"].startswith(ROOTS)
    assert early.is_error and "still running" in early.content[0].text
    assert stopped["stopping"] is True and stopped["build"]["status"] == "cancelling"
    assert final["status"] == "cancelled" and "stopped by the MCP client" in final["detail"]
    assert again["stopping"] is False and again["build"]["status"] == "cancelled"
    assert unknown.is_error and "no build with id 'b999'" in unknown.content[0].text


def test_timings_compare_with_the_last_matching_build(
    server: Any, agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path
) -> None:
    async def main() -> tuple[Any, Any]:
        async with connect(server) as client:
            arguments = {"model": str(agent_models["small"]), "output": str(tmp_path / "s.engine")}
            first = await client.call_tool("build_engine", arguments)
            second = await client.call_tool("build_engine", arguments)
            build_id = second.structured_content["build_id"]
            return first, await client.call_tool("build_timings", {"build_id": build_id, "top": 3})

    first, timings = run_async(main)
    out = timings.structured_content
    assert not timings.is_error and out["status"] == "succeeded"
    assert 1 <= len(out["top_phases"]) <= 3
    selfs = [p["self_s"] for p in out["top_phases"]]
    assert selfs == sorted(selfs, reverse=True)
    comparison = out["comparison"]
    assert comparison is not None, "the first build of the same model and options is the match"
    assert comparison["previous_s"] == pytest.approx(first.structured_content["build_s"], abs=0.01)
    assert comparison["delta_s"] == pytest.approx(out["build_s"] - comparison["previous_s"], abs=0.01)
    assert comparison["phases"] and all(p["path"] for p in comparison["phases"])


@pytest.mark.parametrize("header", [None, "Bearer wrong-token", "Basic dXNlcjpwYXNz"])
def test_http_refuses_a_missing_or_wrong_token(server: Any, header: str | None) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if header is not None:
        headers["Authorization"] = header
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    response = httpx.post(server.url, json=ping, headers=headers, timeout=10)
    assert response.status_code == 401
    assert "token" in response.json()["error"]
    assert response.headers["www-authenticate"].startswith('Bearer realm="trt-widget"')


def test_the_sdk_client_with_a_wrong_token_cannot_connect(server: Any, run_async: RunAnyio) -> None:
    async def main() -> None:
        async with connect(server, token="wrong-token-wrong-token") as client:
            await client.list_tools()

    with pytest.raises(BaseException) as caught:  # an ExceptionGroup from the client's task group
        run_async(main)
    assert "MCPError" in repr(caught.value) and "Server returned an error response" in repr(caught.value)


def test_a_request_whose_id_is_not_a_string_or_an_integer_is_refused_and_runs_nothing(
    agent_models: dict[str, Path], tmp_path: Path
) -> None:
    """The SDK took a request whose id is an object, a fraction, null or a bool for a notification: 202 and no
    answer, while the client waits for one. It is refused with JSON-RPC's -32600 (id null); no tool runs."""
    with HttpServerThread() as fresh:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "Authorization": f"Bearer {fresh.token}"}  # fmt: skip
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        first = httpx.post(fresh.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
                           headers=headers, timeout=30)  # fmt: skip
        assert first.status_code == 200, first.text
        headers["mcp-session-id"] = first.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = "2025-06-18"
        ready = httpx.post(fresh.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                           headers=headers, timeout=30)  # fmt: skip
        assert ready.status_code == 202
        output = tmp_path / "x.engine"
        start = {"name": "start_build", "arguments": {"model": str(agent_models["small"]), "output": str(output)}}
        for bad in [{"a": 1}, 1.5, None, True]:
            refused = httpx.post(fresh.url, json={"jsonrpc": "2.0", "id": bad, "method": "tools/call", "params": start},
                                 headers=headers, timeout=30)  # fmt: skip
            assert refused.status_code == 400, refused.text
            answer = refused.json()
            assert (answer["jsonrpc"], answer["id"], answer["error"]["code"]) == ("2.0", None, -32600), answer
            assert "id must be a string or an integer" in answer["error"]["message"]
        listed = httpx.post(fresh.url, headers=headers, timeout=30, json={"jsonrpc": "2.0", "id": 2,
                            "method": "tools/call", "params": {"name": "list_builds", "arguments": {}}})  # fmt: skip
        assert listed.status_code == 200 and '"builds":[]' in listed.text.replace(" ", ""), listed.text
    assert not output.exists()
