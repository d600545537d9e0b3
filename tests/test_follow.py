"""trt_widget._follow: the running phase path, its label and percentage, and the asyncio follower's wake-ups
(on a real phase model fed by hand: no build needed for these)."""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import TYPE_CHECKING, Any, cast

from trt_widget._follow import Follower, path_fraction, path_label, running_path
from trt_widget._phases import PhaseModel, PhaseRow
from trt_widget._subscribe import BuildEvent

if TYPE_CHECKING:
    from trt_widget import Build


class Fake:
    """What Follower and running_path read of a build: model, subscribe, done."""

    def __init__(self) -> None:
        self.model = PhaseModel()
        self.listeners: list[Any] = []
        self.ended = threading.Event()

    def subscribe(self, fn: Any, steps: bool = True) -> Any:
        self.listeners.append(fn)
        return lambda: self.listeners.remove(fn)

    def emit(self, kind: str) -> None:
        for fn in list(self.listeners):
            fn(BuildEvent(kind))  # type: ignore[arg-type]

    def done(self) -> bool:
        return self.ended.is_set()


def stand_in(fake: Fake) -> Build:
    """``fake`` as the Build that Follower and running_path take: they read only what Fake has."""
    return cast("Build", fake)


def test_the_path_runs_from_the_root_to_the_innermost_running_phase() -> None:
    build = Fake()
    model = build.model
    assert running_path(stand_in(build)) == [] and path_fraction([]) == 0.0
    model.phase_start("Building engine", None, 6)
    model.step_complete("Building engine", 3)  # 4 of 6 done
    model.phase_start("Building engine from subgraph", "Building engine", 1)
    model.phase_start("Determining refit engines", "Building engine from subgraph", 0)
    path = running_path(stand_in(build))
    assert [r["name"] for r in path] == [
        "Building engine",
        "Building engine from subgraph",
        "Determining refit engines",
    ]
    assert path_label(path) == "Building engine 4/6 › Building engine from subgraph 0/1 › Determining refit engines"
    assert path_fraction(path) == 4 / 6  # the step-less leaf and the 0/1 child add nothing yet
    model.phase_finish("Determining refit engines")
    model.step_complete("Building engine from subgraph", 0)
    assert path_fraction(running_path(stand_in(build))) == 5 / 6  # (4 + 1/1) / 6


def test_the_fraction_stays_within_0_and_1_for_odd_step_counts() -> None:
    row: PhaseRow = {
        "id": 0, "name": "a", "parent": None, "depth": 0, "step": 9, "num_steps": 3,
        "start_s": 0.0, "end_s": None, "duration_s": None, "status": "running",
    }  # fmt: skip
    assert path_fraction([row]) == 1.0


def test_a_burst_of_events_is_one_wake_up_and_updates_are_throttled() -> None:
    build = Fake()

    async def main() -> list[float]:
        follower = Follower(stand_in(build), interval=0.05)
        woke: list[float] = []
        loop = asyncio.get_running_loop()

        def burst() -> None:
            for _ in range(1000):
                build.emit("step")

        async def consume() -> None:
            async for _ in follower.changes():
                woke.append(loop.time())

        task = asyncio.ensure_future(consume())
        await loop.run_in_executor(None, burst)  # from another thread, as the builder's events come
        await asyncio.sleep(0.02)
        await loop.run_in_executor(None, burst)
        await asyncio.sleep(0.1)
        build.ended.set()
        build.emit("end")
        await asyncio.wait_for(task, 5)
        follower.close()
        assert build.listeners == []
        return woke

    woke = asyncio.run(main())
    assert 1 <= len(woke) < 50, woke  # 2,000 events coalesced into a few wake-ups
    # 0.05 apart, less how long the consumer waited to run after its wake-up (the burst thread holds the GIL, and a
    # loaded runner's scheduler adds more than the 5 ms switch interval): unthrottled wake-ups would be ~0 apart
    assert all(b - a >= 0.025 for a, b in itertools.pairwise(woke)), woke
