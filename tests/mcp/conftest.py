"""MCP test helpers: a way to run a client off the main thread (the ONNX files on disk: ``agent_models``)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import pytest
from fixture_types import RunAnyio

T = TypeVar("T")


@pytest.fixture
def run_async() -> RunAnyio:
    """``run_async(fn)``: ``anyio.run(fn)`` on a fresh thread (the e2e session's Playwright may hold a loop here)."""

    def run(fn: Callable[[], Awaitable[T]]) -> T:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(anyio.run, fn).result()

    return run
