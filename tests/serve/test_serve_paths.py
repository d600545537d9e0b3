"""No reply of the service names the server's paths (docs/security.md), even when a build fails inside the builder
process with an unexpected error and its traceback: a shape dimension of 2**63 in an upload's options."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx

import trt_widget
from trt_widget.models import deep_residual, to_bytes
from trt_widget.serve import ServerThread

DYNAMIC = to_bytes(deep_residual(4, batch="N"))


def test_an_out_of_range_shape_dimension_fails_without_server_paths(tmp_path: Path) -> None:
    profile = {"input": [[1, 8, 8, 8], [2, 8, 8, 8], [2**63, 8, 8, 8]]}
    seen: list[str] = []
    with ServerThread(data=tmp_path / "data") as server, httpx.Client(base_url=server.url, timeout=60) as client:
        client.headers["Authorization"] = f"Bearer {server.token}"
        reply = client.post("/builds", content=DYNAMIC, params={"options": json.dumps({"profiles": profile})})
        seen.append(reply.text)
        if reply.status_code == 201:  # else refused at once (400), as the options' own check may do
            build_id = reply.json()["id"]
            with client.stream("GET", f"/builds/{build_id}/events") as events:
                seen.append(events.read().decode())
            seen.append(client.get(f"/builds/{build_id}").text)
            assert json.loads(seen[-1])["status"] == "failed"
        else:
            assert reply.status_code == 400, reply.text
        seen.append(client.get("/builds").text)
    text = "\n".join(seen)
    package = Path(trt_widget.__file__).resolve().parent
    for path in (str(package.parent), str(tmp_path), sys.prefix, sys.base_prefix):
        assert path not in text, (path, text[:4000])
    assert "Traceback (most recent call last)" not in text and '.py", line' not in text, text[:4000]
