"""``trt_widget.serve.RemoteBuild`` against one real uvicorn server on 127.0.0.1 (real RTX builds): the Build
API, the server's timings, BuildWidget showing a remote build, stop and force stop, following someone else's
build, the server's refusals and a queue while it is busy."""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from fixture_types import RunAsync, WaitUntil

from trt_widget import BuildCancelled, BuildError, BuildWidget
from trt_widget._events import schema
from trt_widget.models import deep_residual, to_bytes
from trt_widget.serve import ServerThread
from trt_widget.serve._client import RemoteBuild

MAX_UPLOAD = 4 << 20
LONG = to_bytes(deep_residual(1000))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    data = tmp_path_factory.mktemp("serve-client")
    with ServerThread(data=data, max_upload=MAX_UPLOAD, max_concurrent=1) as running:
        yield running


@pytest.fixture
def http(server: ServerThread) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=60) as c:
        yield c
    server.store.stop_running(timeout=30)


def server_rows(value: object) -> list[Mapping[str, object]]:
    """The rows of a server's JSON reply (``timings``): a list of objects."""
    assert isinstance(value, list) and all(isinstance(row, dict) for row in value), value
    return [row for row in value if isinstance(row, dict)]


def in_long_step(build: RemoteBuild) -> bool:
    phase = build.model.innermost_running()
    return phase is not None and phase.name == "Determining refit engines"


def test_remote_build_has_the_build_api(server: ServerThread, http: httpx.Client, tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(to_bytes(deep_residual(6)))
    local_events: list[dict[str, Any]] = []
    build = RemoteBuild(
        server.url, server.token, model, optimization_level=1, output=tmp_path / "m.engine", events=local_events.append
    )
    assert build.status == "idle" and not build.done() and build.remote_id is None
    assert build.start() is build
    assert build.wait(60) == "succeeded", build.status_detail
    assert build.done() and not build.running() and not build.cancelled() and build.exception() is None
    engine = build.result()
    assert http.get(f"/builds/{build.remote_id}/engine").content == engine
    assert (tmp_path / "m.engine").read_bytes() == engine  # output= is a local file, written atomically
    remote = build.info()
    assert remote["status"] == "succeeded" and remote["name"] == "model.onnx"  # the label, never a path
    assert json.loads(http.get(f"/builds/{build.remote_id}").text)["events"] > 10
    local = build.timings()
    timings = server_rows(remote["timings"])
    assert [(r["id"], r["name"], r["parent"], r["depth"], r["step"]) for r in local] == [
        (r["id"], r["name"], r["parent"], r["depth"], r["step"]) for r in timings
    ]
    for mine, theirs in zip(local, timings, strict=True):  # the server's times, not this process's
        assert mine["start_s"] == pytest.approx(theirs["start_s"], abs=1e-5)
        assert mine["duration_s"] == pytest.approx(theirs["duration_s"], abs=1e-5)
    assert build.options.optimization_level == 1
    assert build.events is not None
    build.events.join(10)
    validator = jsonschema.Draft202012Validator(schema())
    for event in local_events:
        validator.validate(event)
    assert local_events[-1]["status"] == "succeeded" and local_events[-1]["engine_bytes"] == len(engine)


def test_build_widget_shows_a_remote_build(server: ServerThread, http: httpx.Client) -> None:
    remote = RemoteBuild(server.url, server.token, deep_residual(6), name="shown")
    widget = BuildWidget(remote)
    assert widget.build is remote
    assert widget.start().wait(60) == "succeeded"
    assert widget.status == "succeeded" and widget.engine_size == len(remote.result())
    timings = http.get(f"/builds/{remote.remote_id}").json()["timings"]
    assert [row["name"] for row in widget.phases] == [row["name"] for row in timings]
    assert repr(widget) == "BuildWidget('onnx.ModelProto deep_residual')"
    assert RemoteBuild(server.url, server.token, deep_residual(3)).widget().build.status == "idle"


@pytest.mark.rtx_long_step
def test_stop_then_force_stop_and_a_follower(server: ServerThread, http: httpx.Client, wait_until: WaitUntil) -> None:
    build = RemoteBuild(server.url, server.token, LONG, force_after=30).start()
    wait_until(lambda: build.remote_id, what="the upload")
    assert build.remote_id is not None
    follower = RemoteBuild.follow(server.url, server.token, build.remote_id).start()
    wait_until(lambda: in_long_step(build) and in_long_step(follower), what="both in the long step")
    assert build.stop() is True and build.status == "cancelling"
    assert build.wait(0.5) == "cancelling"  # graceful: the step runs on (force_after=30)
    assert build.stop() is True  # a second stop forces
    assert build.wait(60) == "cancelled"  # bounds a hang only: a loaded runner stretches the terminate and relay
    with pytest.raises(BuildCancelled):
        build.result()
    assert "stopped by user" in build.status_detail and "force stopped" in build.status_detail
    assert follower.wait(60) == "cancelled" and "cancelled on the server" in follower.status_detail
    assert follower.source.label.startswith(f"build {build.remote_id} on ")
    assert http.get(f"/builds/{build.remote_id}").json()["status"] == "cancelled"
    assert len(follower.timings()) == len(build.timings())


def test_await_of_a_remote_build_raises_what_result_raises(
    server: ServerThread, http: httpx.Client, wait_until: WaitUntil, run_async: RunAsync
) -> None:
    async def awaited(build: RemoteBuild) -> bytes:
        return await build

    bad = RemoteBuild(server.url, server.token, b"not onnx").start()
    with pytest.raises(BuildError, match="ONNX"):
        run_async(awaited(bad))
    long = RemoteBuild(server.url, server.token, LONG).start()
    wait_until(lambda: long.remote_id, what="the upload")
    long.stop()
    long.stop()  # forced
    with pytest.raises(BuildCancelled):
        run_async(awaited(long))
    good = RemoteBuild(server.url, server.token, deep_residual(3)).start()
    assert list(concurrent.futures.as_completed([good], timeout=60)) == [good]
    assert run_async(awaited(good)) == good.engine and good.engine


def test_refusals(server: ServerThread) -> None:
    wrong = RemoteBuild(server.url, "wrong-token", deep_residual(3)).start()
    assert wrong.wait(30) == "failed" and "401" in wrong.status_detail and "invalid token" in wrong.status_detail
    big = RemoteBuild(server.url, server.token, b"\0" * (MAX_UPLOAD + 1)).start()
    assert big.wait(30) == "failed" and f"at most {MAX_UPLOAD:,}" in str(big.error)
    nowhere = RemoteBuild("http://127.0.0.1:9", server.token, deep_residual(3), timeout=2).start()
    assert nowhere.wait(30) == "failed" and "cannot reach" in nowhere.status_detail
    bad = RemoteBuild(server.url, server.token, b"not onnx").start()
    assert bad.wait(30) == "failed" and isinstance(bad.error, BuildError) and "ONNX" in str(bad.error)
    with pytest.raises(TypeError, match="timing_cache= is not available for a remote build"):
        RemoteBuild(server.url, server.token, deep_residual(3), timing_cache="x.cache")
    with pytest.raises(TypeError, match="isolation= is not available"):
        RemoteBuild(server.url, server.token, deep_residual(3), isolation="thread")
    with pytest.raises(TypeError, match="did you mean 'optimization_level'"):
        RemoteBuild(server.url, server.token, deep_residual(3), optimisation_level=3)  # type: ignore[call-arg]  # misspelt on purpose
    with pytest.raises(TypeError, match="needs ONNX"):
        RemoteBuild(server.url, server.token, lambda network: None)
    with pytest.raises(ValueError, match=r"0\.\.5"):
        RemoteBuild(server.url, server.token, deep_residual(3), optimization_level=7)


def test_busy_server_refuses_or_queues(server: ServerThread, http: httpx.Client, wait_until: WaitUntil) -> None:
    first = RemoteBuild(server.url, server.token, LONG).start()
    wait_until(lambda: first.remote_id, what="the first build on the server")
    refused = RemoteBuild(server.url, server.token, deep_residual(3)).start()
    assert refused.wait(30) == "failed" and "busy" in refused.status_detail and "429" in refused.status_detail
    queued = RemoteBuild(server.url, server.token, deep_residual(3), queue=60).start()
    wait_until(lambda: queued.status == "queued", what="the queued status")
    gone = RemoteBuild(server.url, server.token, deep_residual(3), queue=60).start()
    wait_until(lambda: gone.status == "queued", what="the queued status")
    assert gone.stop() and gone.wait(10) == "cancelled" and gone.remote_id is None  # never reached the server
    first.stop()
    first.stop()
    assert first.wait(10) == "cancelled"
    assert queued.wait(60) == "succeeded"  # it got the free slot


def test_trtexec_settings_travel_to_the_server_build(server: ServerThread, http: httpx.Client) -> None:
    """The options a request may set follow BuildOptions' metadata: the newer ones reach the server's build."""
    batch = ((1, 8, 8, 8), (2, 8, 8, 8), (4, 8, 8, 8))
    build = RemoteBuild(
        server.url,
        server.token,
        deep_residual(3, batch="N"),
        profiles=[{"input": batch}, {"input": ((4, 8, 8, 8), (6, 8, 8, 8), (8, 8, 8, 8))}],
        tactic_sources="-JIT_CONVOLUTIONS",
        max_aux_streams=1,
        tf32=False,
        workspace="64MiB",
    ).start()
    assert build.wait(120) == "succeeded", build.status_detail
    record = server.store.get(str(build.remote_id))
    assert record is not None
    frames, _, _ = record.read(0)
    start = json.loads(frames[0].decode().split("data: ", 1)[1])
    assert start["event"] == "build_start"
    options = start["options"]
    assert options["tactic_sources"] == "-JIT_CONVOLUTIONS" and options["max_aux_streams"] == 1
    assert options["tf32"] is False and options["workspace"] == 64 << 20
    assert options["profiles"] == [
        {"input": [list(s) for s in batch]},
        {"input": [[4, 8, 8, 8], [6, 8, 8, 8], [8, 8, 8, 8]]},
    ]
    with pytest.raises(TypeError, match="configure= is not available for a remote build: a request cannot send code"):
        RemoteBuild(server.url, server.token, deep_residual(3), configure=lambda b, n, c: None)
    with pytest.raises(TypeError, match="device= is not available for a remote build: the server decides which GPU"):
        RemoteBuild(server.url, server.token, deep_residual(3), device=0)
