"""MCP test helpers: a way to run a client off the main thread (the ONNX files on disk: ``agent_models``)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest


@pytest.fixture
def run_async() -> Callable[[Callable[[], Awaitable[Any]]], Any]:
    """``run_async(fn)``: ``anyio.run(fn)`` on a fresh thread (the e2e session's Playwright may hold a loop here)."""

    def run(fn: Callable[[], Awaitable[Any]]) -> Any:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(anyio.run, fn).result()

    return run
