"""Fifteenth adversarial re-run (issue 35): the manifest written beside a build's engine records the timing cache's
sha256, and ``make_manifest`` hashes the file named by ``timing_cache`` whole (``file_sha256(cache)``, no bound),
though docs/security.md says the timing cache's reads ("to load it, to merge it on save, to hash it for the
manifest") take at most 1 GiB, and TensorRT for RTX neither reads nor writes the file. An agent's ``timing_cache``
(an option agents may set) naming a sparse file of terabytes (or a link to ``/proc/self/pagemap``: 256 GiB) keeps
the finished build "running" at full CPU for hours, a stop leaves it "cancelling", and it holds one of the server's
build slots. Driven through a real ``trt-widget mcp`` over stdio and a real RTX build."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from attacks import HUGE, sparse_file
from mcp_wire import HELLO, mcp_server

from trt_widget import models

BOUND_S = 90.0  # a tiny RTX build through the server takes seconds
FINAL = ("succeeded", "failed", "cancelled")


def test_an_agents_huge_timing_cache_does_not_hold_the_build(tmp_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(models.to_bytes(models.deep_residual(2)))
    sparse_file(tmp_path / "tc.cache")
    options = {"timing_cache": str(tmp_path / "tc.cache")}
    start: dict[str, object] = {
        "model": str(tmp_path / "m.onnx"),
        "output": str(tmp_path / "m.engine"),
        "options": options,
    }
    ids = iter(range(1, 10_000))
    status = ""
    # the server is killed at the end, its hashing thread with it
    with mcp_server(tmp_path, {**os.environ, "TRT_WIDGET_HISTORY": "off"}) as server:
        assert server.stdin is not None and server.stdout is not None

        def call(message: dict[str, object]) -> dict[str, object]:
            number = next(ids)
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": number, **message}) + "\n")
            server.stdin.flush()
            for line in server.stdout:  # ends at the server's exit if it never answers
                if line.strip() and json.loads(line).get("id") == number:
                    answer: dict[str, object] = json.loads(line)
                    return answer
            raise AssertionError("the server ended without answering")

        def tool(name: str, arguments: dict[str, object]) -> dict[str, object]:
            result = call({"method": "tools/call", "params": {"name": name, "arguments": arguments}})["result"]
            assert isinstance(result, dict) and not result.get("isError"), result
            content = result["structuredContent"]
            assert isinstance(content, dict)
            return content

        call({"method": "initialize", "params": HELLO})
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        build_id = tool("start_build", start)["build_id"]
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            status = str(tool("build_status", {"build_id": build_id})["status"])
            if status in FINAL:
                break
            time.sleep(1.0)
    assert status in FINAL, f"the build was still {status!r} after {BOUND_S:.0f} s (hashing the timing cache)"
    assert status == "succeeded"
    assert (tmp_path / "tc.cache").stat().st_size == HUGE
    recorded = json.loads((tmp_path / "m.engine.manifest.json").read_text())["timing_cache"]
    assert recorded["sha256"] is None and recorded["size"] == HUGE and "larger than" in recorded["not_hashed"]
