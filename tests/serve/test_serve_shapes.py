"""A shape dimension TensorRT cannot hold, sent as a build option to a real server: a 400 that says why, with no
build started and none of the server's paths in the reply (issue 35, defect 19)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import trt_widget
from trt_widget.models import deep_residual, to_bytes
from trt_widget.serve import ServerThread


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    with ServerThread(data=tmp_path_factory.mktemp("serve"), max_concurrent=1) as server:
        headers = {"Authorization": f"Bearer {server.token}"}
        with httpx.Client(base_url=server.url, timeout=60, headers=headers) as http:
            yield http


@pytest.mark.parametrize("dim", [2**63, 2**31, 10**40])
def test_a_huge_profile_dimension_is_a_bad_request(client: httpx.Client, dim: int) -> None:
    profiles = {"input": [[1, 8, 8, 8], [1, 8, 8, 8], [dim, 8, 8, 8]]}
    reply = client.post(
        "/builds", content=to_bytes(deep_residual(2, batch="N")), params={"options": json.dumps({"profiles": profiles})}
    )
    assert reply.status_code == 400, reply.text
    assert "is too large (at most 2**31-1" in reply.text
    assert str(Path(trt_widget.__file__).parent) not in reply.text
    assert client.get("/builds").json()["builds"] == []  # nothing started


@pytest.mark.parametrize("dim", ["Infinity", "1.5", "true"])
def test_a_profile_dimension_that_is_not_a_whole_number_is_a_bad_request(client: httpx.Client, dim: str) -> None:
    options = '{"profiles": {"input": [[' + dim + ", 8, 8, 8], [1, 8, 8, 8], [2, 8, 8, 8]]}}"  # Infinity: Python's
    reply = client.post("/builds", content=to_bytes(deep_residual(2, batch="N")), params={"options": options})
    assert reply.status_code == 400, reply.text  # Infinity was a 500 (OverflowError); 1.5 and true were built as 1
    assert "must be (min, opt, max) shapes" in reply.text
    assert client.get("/builds").json()["builds"] == []  # nothing started
