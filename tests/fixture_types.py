"""The types of tests/conftest.py's helper fixtures, for the tests' signatures (a conftest.py cannot be imported:
a plain module, as tests/attacks.py says why)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class WaitUntil(Protocol):
    """``wait_until(predicate, timeout=..., what=...)``: the predicate's first truthy value (never None), or the test
    fails."""

    def __call__(self, predicate: Callable[[], T | None], timeout: float = ..., what: str = ...) -> T: ...


class RunAsync(Protocol):
    """``run_async(coro, timeout=...)``: the coroutine's value, run by ``asyncio.run`` on a fresh thread."""

    def __call__(self, coro: Coroutine[Any, Any, T], timeout: float = ...) -> T: ...


class RunAnyio(Protocol):
    """tests/mcp's ``run_async(fn)``: the value of ``anyio.run(fn)``, run on a fresh thread."""

    def __call__(self, fn: Callable[[], Awaitable[T]]) -> T: ...
