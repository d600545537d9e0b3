"""MCP test helpers: ONNX files on disk (good, long, not ONNX, refused by the parser) and a way to run a client."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from onnx import TensorProto, helper

from trt_widget.models import deep_residual, to_bytes


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, long_model_bytes: bytes) -> dict[str, Path]:
    """small (builds in ~0.3 s), medium (~1 s), long (a few seconds), text (not ONNX), refused (an op the parser has no
    importer for, on node 'frob_1')."""
    where = tmp_path_factory.mktemp("models")
    paths = {name: where / f"{name}.onnx" for name in ("small", "medium", "long", "text", "refused")}
    paths["small"].write_bytes(to_bytes(deep_residual(4)))
    paths["medium"].write_bytes(to_bytes(deep_residual(100)))
    paths["long"].write_bytes(long_model_bytes)
    paths["text"].write_text("hello, this is not an ONNX model\n")
    node = helper.make_node("Frobnicate", ["x"], ["y"], name="frob_1")
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("x", "y")]
    graph = helper.make_graph([node], "refused", [io[0]], [io[1]])
    paths["refused"].write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    return paths


@pytest.fixture
def run_async() -> Callable[[Callable[[], Awaitable[Any]]], Any]:
    """``run_async(fn)``: ``anyio.run(fn)`` on a fresh thread (the e2e session's Playwright may hold a loop here)."""

    def run(fn: Callable[[], Awaitable[Any]]) -> Any:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(anyio.run, fn).result()

    return run
