"""Slow and failing event sinks, with real RTX builds: ``wait()`` never waits for the sink, and a sink failure is
reported once (a WARNING in ``build.problems`` and a RuntimeWarning) while the writer thread carries on."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fixture_types import WaitUntil

from trt_widget import Build, models


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Holds a blocking sink shut for the test; opened at teardown so no writer thread lingers."""
    event = threading.Event()
    yield event
    event.set()


@pytest.mark.deadline  # wait() returns within 4 s of the end
@pytest.mark.parametrize("how", ["wait", "await"])
def test_a_blocking_sink_does_not_delay_wait(how: str, gate: threading.Event) -> None:
    received: list[dict[str, Any]] = []

    def stuck(event: dict[str, Any]) -> None:  # blocks up to 30 s on the first event, then records
        gate.wait(30)
        received.append(event)

    build = Build(models.deep_residual(4), history=False, events=stuck)
    assert build.events is not None
    began = time.perf_counter()
    build.start()
    status = build.wait(120) if how == "wait" else asyncio.run(build.wait_async(poll=0.01))
    after_end = time.perf_counter() - began - build.elapsed_s
    assert status == "succeeded"
    # returned with the build, not after the sink (30 s) or a join timeout (5 s before); the bound leaves a loaded
    # runner room short of those 5 s (it was 2.5 s)
    assert after_end < 4.0, after_end
    assert not received and not build.events.flush(0.05)  # the sink is still stuck on build_start ...
    gate.set()
    assert build.events.flush(30) and build.events.join(30)  # ... and flush()/join() wait for it on request
    assert received[0]["event"] == "build_start" and received[-1]["event"] == "build_end"
    assert not build.events.errors and not [p for p in build.problems if "events sink" in p["message"]]


def _closed_file(tmp_path: Path) -> Any:
    with open(tmp_path / "closed.jsonl", "w", encoding="utf-8") as handle:
        pass
    return handle


def _raising(exc: BaseException, times: int, into: list[dict[str, Any]]) -> Callable[[dict[str, Any]], None]:
    """A callable sink that raises ``exc`` on its first ``times`` calls, then records the events."""
    calls = [0]

    def sink(event: dict[str, Any]) -> None:
        calls[0] += 1
        if calls[0] <= times:
            raise exc
        into.append(event)

    return sink


SINKS = [
    "closed file",
    "binary file",
    "/dev/full",
    "callable raising always",
    "callable KeyboardInterrupt",
    "callable SystemExit",
]


@pytest.mark.parametrize("kind", SINKS)
def test_a_failing_sink_is_reported_once_and_the_writer_lives_on(
    kind: str, tmp_path: Path, wait_until: WaitUntil
) -> None:
    if kind == "/dev/full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    received: list[dict[str, Any]] = []
    opened: list[Any] = []
    if kind == "closed file":
        sink: Any = _closed_file(tmp_path)
    elif kind == "binary file":
        sink = open(tmp_path / "events.bin", "wb")  # noqa: SIM115  (closed at the end); writes of str raise TypeError
        opened.append(sink)
    elif kind == "/dev/full":
        sink = "/dev/full"  # every flush raises OSError(ENOSPC)
    elif kind == "callable raising always":
        sink = _raising(RuntimeError("sink is broken"), 10**9, received)
    elif kind == "callable KeyboardInterrupt":
        sink = _raising(KeyboardInterrupt(), 1, received)
    else:
        sink = _raising(SystemExit(3), 1, received)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            build = Build(models.deep_residual(4), history=False, events=sink).start()
            assert build.events is not None
            assert build.wait(120) == "succeeded"
            wait_until(
                lambda: any("events sink" in p["message"] for p in build.problems),
                timeout=30,
                what="the sink failure in build.problems",
            )
            assert build.events.join(30)  # the writer thread survived the failure and got to build_end
    finally:
        for handle in opened:
            handle.close()
    ours = [w for w in caught if issubclass(w.category, RuntimeWarning) and "events sink" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    problems = [p for p in build.problems if "events sink" in p["message"]]
    assert len(problems) == 1 and problems[0]["severity"] == "WARNING"
    assert str(ours[0].message) == problems[0]["message"]
    assert build.events.errors and build.status == "succeeded"
    if kind in ("callable KeyboardInterrupt", "callable SystemExit"):  # later events still reach the callable
        assert received and received[-1]["event"] == "build_end"
        assert "later events are still passed" in problems[0]["message"]
    elif kind != "callable raising always":
        assert "later events are dropped" in problems[0]["message"]
