"""``trt-widget serve --executor ray``: a real RTX build in a Ray task (one local Ray instance for the session,
``ray_session``), watched and cancelled over HTTP through RemoteBuild."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fixture_types import WaitUntil

from trt_widget.models import deep_residual, to_bytes
from trt_widget.serve import ServerThread
from trt_widget.serve._client import RemoteBuild


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, ray_session: Any) -> Iterator[ServerThread]:
    data = tmp_path_factory.mktemp("serve-ray")
    with ServerThread(data=data, executor="ray", max_concurrent=2) as running:
        yield running


@pytest.mark.rtx_long_step
def test_ray_executor_builds_and_cancels(server: ServerThread, wait_until: WaitUntil) -> None:
    build = RemoteBuild(server.url, server.token, deep_residual(5)).start()
    assert build.wait(120) == "succeeded", build.status_detail
    assert len(build.result()) > 0
    remote = build.info()
    timings = remote["timings"]
    assert isinstance(timings, list) and all(isinstance(r, dict) for r in timings) and remote["status"] == "succeeded"
    assert [r["name"] for r in build.timings()] == [r["name"] for r in timings if isinstance(r, dict)]

    long = RemoteBuild(server.url, server.token, to_bytes(deep_residual(1000))).start()

    def in_long_step() -> bool:
        phase = long.model.innermost_running()
        return phase is not None and phase.name == "Determining refit engines"

    wait_until(in_long_step, what="the long step on a Ray worker")
    assert long.stop()
    assert long.wait(30) == "cancelled", long.status_detail
    assert long.info()["status"] == "cancelled"
