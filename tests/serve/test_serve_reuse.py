"""``serve`` with ``reuse: true`` in a request: the engine cache is the service's own, under ``--data``
(``<data>/engine-cache``), never the server user's ``~/.cache`` (issue 35, second re-run: there it had no
full-disk 507 and no bound, outside what the operator gave the service). Real RTX builds over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from trt_widget.models import deep_residual, to_bytes
from trt_widget.serve import ServerThread

MODEL = to_bytes(deep_residual(2))


def _build(client: httpx.Client) -> dict[str, object]:
    """POST the model with reuse: true, follow its events to the end; the build's record."""
    reply = client.post("/builds", content=MODEL, params={"options": json.dumps({"reuse": True})})
    assert reply.status_code == 201, reply.text
    build_id = reply.json()["id"]
    with client.stream("GET", f"/builds/{build_id}/events") as events:
        events.read()
    record: dict[str, object] = client.get(f"/builds/{build_id}").json()
    return record


def test_a_reuse_over_http_writes_nothing_outside_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, cache = tmp_path / "home", tmp_path / "xdg-cache"
    home.mkdir()
    cache.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    data = tmp_path / "data"
    with ServerThread(data=data) as server, httpx.Client(base_url=server.url, timeout=120) as client:
        client.headers["Authorization"] = f"Bearer {server.token}"
        first = _build(client)
        assert first["status"] == "succeeded", first
        second = _build(client)
        assert second["status"] == "succeeded", second
        assert "reused the engine" in str(second["detail"]), second
        assert str(tmp_path) not in json.dumps(second), second  # the cache's path is the server's own
    assert list(home.rglob("*")) == [] and list(cache.rglob("*")) == [], (list(home.rglob("*")), list(cache.rglob("*")))
    kept = [p.name for p in (data / "engine-cache").iterdir()]
    assert any(name.endswith(".engine") for name in kept), kept
