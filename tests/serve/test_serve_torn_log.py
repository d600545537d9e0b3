"""The service restarts on a ``--data`` directory whose event logs end inside a line, even inside a multi-byte UTF-8
character (a kill or a full disk mid-write; the log is written with ``ensure_ascii=False``): the torn line is left
out with a note, and every stored build stays reachable."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import httpx
import pytest

from trt_widget.models import deep_residual, to_bytes
from trt_widget.serve import ServerThread
from trt_widget.serve._client import sse_messages

TORN = '{"event": "log", "severity": "WARNING", "message": "naïve café ✓'.encode()[:-2]  # inside '✓'


def _events(client: httpx.Client, build_id: str) -> list[dict[str, object]]:
    with client.stream("GET", f"/builds/{build_id}/events") as reply:
        assert reply.status_code == 200
        return [json.loads(d) for _, kind, d in sse_messages(reply.iter_lines()) if kind == "message"]


@pytest.mark.parametrize("killed", [False, True], ids=["ended", "killed-mid-build"])
def test_a_torn_multibyte_last_line_does_not_stop_a_restart(
    tmp_path: Path, killed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with ServerThread(data=tmp_path) as first, httpx.Client(base_url=first.url, timeout=60) as client:
        client.headers["Authorization"] = f"Bearer {first.token}"
        build_id = client.post("/builds", content=to_bytes(deep_residual(4)), params={"name": "naïve ✓"}).json()["id"]
        stored = _events(client, build_id)
    assert stored[-1]["status"] == "succeeded"
    directory = tmp_path / "builds" / build_id
    log = directory / "events.jsonl"
    lines = log.read_bytes().split(b"\n")[:-1]
    if killed:  # the server died before the build's end: no build_end, meta still says running
        meta = json.loads((directory / "meta.json").read_text())
        (directory / "meta.json").write_text(json.dumps({**meta, "status": "running"}))
        log.write_bytes(b"\n".join(lines[:-1]) + b"\n" + TORN)
    else:  # the end's line itself was cut
        log.write_bytes(b"\n".join(lines[:-1]) + b"\n" + lines[-1][:-3] + TORN)
    with pytest.raises(UnicodeDecodeError):
        log.read_bytes().decode("utf-8")

    with (
        caplog.at_level(logging.WARNING, logger="trt_widget"),
        ServerThread(data=tmp_path) as second,
        httpx.Client(base_url=second.url, timeout=60) as client,
    ):
        client.headers["Authorization"] = f"Bearer {second.token}"
        (listed,) = client.get("/builds").json()["builds"]
        events = _events(client, build_id)
    assert listed["id"] == build_id and listed["name"] == "naïve ✓"
    assert listed["status"] == ("failed" if killed else "succeeded"), listed
    assert events[0]["event"] == "build_start" and events[-1]["event"] == "build_end"
    assert events[:-1] == stored[: len(events) - 1]  # what was whole is kept as it was
    assert any("torn last line" in r.getMessage() and build_id in r.getMessage() for r in caplog.records)


def test_a_stored_build_with_a_damaged_creation_time_is_skipped_not_fatal(tmp_path: Path) -> None:
    with ServerThread(data=tmp_path) as first, httpx.Client(base_url=first.url, timeout=60) as client:
        client.headers["Authorization"] = f"Bearer {first.token}"
        build_id = client.post("/builds", content=to_bytes(deep_residual(4))).json()["id"]
        _events(client, build_id)
    damaged = tmp_path / "builds" / ("B" * 22)
    shutil.copytree(tmp_path / "builds" / build_id, damaged)
    meta = json.loads((damaged / "meta.json").read_text())
    (damaged / "meta.json").write_text(json.dumps({**meta, "id": damaged.name, "created": "yesterday"}))
    with ServerThread(data=tmp_path) as second, httpx.Client(base_url=second.url, timeout=60) as client:
        client.headers["Authorization"] = f"Bearer {second.token}"
        reply = client.get("/builds")
    assert reply.status_code == 200, reply.text
    assert [b["id"] for b in reply.json()["builds"]] == [build_id]
