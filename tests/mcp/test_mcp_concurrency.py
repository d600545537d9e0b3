"""The MCP server builds at most ``--max-concurrent`` models at once (default 2); further builds wait with status
``queued`` (no builder process) in the order they came, and a stop ends a queued build at once. The LSP shares it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fixture_types import RunAnyio, WaitUntil
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from trt_widget import Build
from trt_widget.__main__ import main
from trt_widget.mcp import BadInput, BuildRegistry, HttpServerThread, create_server


async def _start_builds(server: HttpServerThread, count: int, model: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """``start_build`` ``count`` times over one MCP session (engines ``tmp_path/<i>.engine``): the replies."""
    headers = {"Authorization": f"Bearer {server.token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0)) as http,
        Client(streamable_http_client(server.url, http_client=http)) as client,
    ):
        started = []
        for i in range(count):
            arguments = {"model": str(model), "output": str(tmp_path / f"{i}.engine")}
            started.append((await client.call_tool("start_build", arguments)).structured_content)
        return started


@contextlib.contextmanager
def _stopped_at_the_end(builds: list[Build]) -> Iterator[None]:
    """Stop every build in ``builds`` (as the list is then) when the block ends, and wait for each to end."""
    try:
        yield
    finally:
        for build in builds:
            build.stop("test over")
        for build in builds:
            assert build.wait(60)


@pytest.mark.deadline  # two real builds must outlast the checks
def test_builds_beyond_the_limit_wait_queued_without_a_builder_process(
    agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path, wait_until: WaitUntil
) -> None:
    registry = BuildRegistry()  # the default limit
    assert registry.max_concurrent == 2
    with HttpServerThread(create_server(registry)) as server:
        started = run_async(lambda: _start_builds(server, 5, agent_models["long"], tmp_path))
        entries = {e.id: e for e in registry.entries()}
        builds = [entries[s["build_id"]].build for s in started]
        with _stopped_at_the_end(builds):
            wait_until(lambda: [b.status for b in builds[2:]] == ["queued"] * 3, what="three builds queued")
            assert [b.status for b in builds[:2]] == ["running"] * 2
            assert all(b.child_pid is None for b in builds[2:])  # no builder process for a waiting build
            running = [b.child_pid for b in builds[:2]]
            assert all(pid is not None and os.path.exists(f"/proc/{pid}") for pid in running)
            assert builds[4].stop("not needed") and builds[4].wait(5) and builds[4].status == "cancelled"
            assert builds[0].stop("make room")
            wait_until(lambda: builds[2].status == "running", what="the first queued build to start")
            assert [b.status for b in builds[3:4]] == ["queued"]  # in the order they came
    assert not any(tmp_path.glob("*.engine"))


@pytest.mark.parametrize("command", ["mcp", "lsp"])
def test_max_concurrent_below_one_is_refused(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--max-concurrent", "0"]) == 2
    assert "--max-concurrent must be at least 1" in capsys.readouterr().err


def test_a_second_build_onto_a_running_builds_engine_file_is_refused(
    agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path
) -> None:
    """Issue 35, defect 16: two builds of one model (its default output, ``<model>.engine``) wrote one file and the
    last won without a word. The second is refused, naming why, and leaves no build behind in the list."""
    registry = BuildRegistry()
    output = str(tmp_path / "one.engine")
    with HttpServerThread(create_server(registry)) as server:
        headers = {"Authorization": f"Bearer {server.token}"}

        async def start_two() -> tuple[Any, Any, list[dict[str, Any]]]:
            async with (
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0)) as http,
                Client(streamable_http_client(server.url, http_client=http)) as client,
            ):
                arguments = {"model": str(agent_models["long"]), "output": output}
                first = await client.call_tool("start_build", arguments)
                second = await client.call_tool("start_build", {**arguments, "options": {"optimization_level": 1}})
                listed = (await client.call_tool("list_builds", {})).structured_content["builds"]
                return first, second, listed

        first, second, listed = run_async(start_two)
        build = registry.entry(first.structured_content["build_id"]).build
        with _stopped_at_the_end([build]):
            assert not first.is_error and second.is_error
            assert "is being written by another build that is still running" in second.content[0].text
            assert [b["build_id"] for b in listed] == [first.structured_content["build_id"]]


def test_builds_beyond_the_waiting_limit_are_refused(agent_models: dict[str, Path], tmp_path: Path) -> None:
    registry = BuildRegistry(max_concurrent=1, max_waiting=2)
    started: list[Build] = []
    with _stopped_at_the_end(started):
        for i in range(3):
            _, build = registry.create(str(agent_models["long"]), output=str(tmp_path / f"{i}.engine"))
            started.append(build.start())
        with pytest.raises(BadInput, match=r"too many builds: 3 running or queued \(at most 1 at once and 2 waiting"):
            registry.create(str(agent_models["long"]), output=str(tmp_path / "refused.engine"))
        assert started[2].stop("make room") and started[2].wait(10)
        _, build = registry.create(str(agent_models["small"]), output=str(tmp_path / "later.engine"))
        started.append(build.start())


def test_start_build_replies_with_the_status_the_build_has_then(
    agent_models: dict[str, Path], run_async: RunAnyio, tmp_path: Path
) -> None:
    """Issue 35 (second re-run): start_build read the status before the build's thread had asked for a slot, so a
    build that waits for the concurrency limit was told ``running``. The reply says ``queued`` now."""
    registry = BuildRegistry(max_concurrent=1)
    with HttpServerThread(create_server(registry)) as server:
        started = run_async(lambda: _start_builds(server, 3, agent_models["long"], tmp_path))
        builds = [registry.entry(s["build_id"]).build for s in started]
        with _stopped_at_the_end(builds):
            assert [s["status"] for s in started] == ["running", "queued", "queued"], started


def test_a_finished_build_its_command_still_waits_on_is_not_forgotten(
    agent_models: dict[str, Path], tmp_path: Path
) -> None:
    """The registry keeps the newest builds: 1,000 ``trtWidget.build`` requests at once to ``trt-widget lsp`` made
    newer builds push out a finished one before its own command had described it, and that command answered
    "no build with id 'b1'" for a build that had succeeded. A build that a command (LSP build, MCP build_engine)
    waits on is kept until the command lets it go; then the bound holds again."""
    builds = BuildRegistry(keep=2, max_concurrent=1)
    waited, build = builds.create(str(agent_models["small"]), output=str(tmp_path / "w.engine"), held=True)
    builds.start(waited)
    assert build.wait(120) and build.status == "succeeded", build.status_detail
    for n in range(3):  # created, never started: newer than it, never forgotten themselves (not finished)
        builds.create(str(agent_models["small"]), output=str(tmp_path / f"{n}.engine"))
    assert builds.describe(waited)["status"] == "succeeded"  # its command describes it now
    builds.release(waited)
    builds.create(str(agent_models["small"]), output=str(tmp_path / "last.engine"))
    with pytest.raises(BadInput, match="no build with id"):
        builds.describe(waited)  # let go: forgotten as the oldest finished one
