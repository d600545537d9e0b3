"""The Ray runner's relay of a remote build's events onto this process's clock (no Ray needed)."""

from __future__ import annotations

import time
from typing import Any


def test_relayed_times_never_run_backwards_when_a_later_delivery_moves_the_clock_anchor() -> None:
    """The driver places the remote t=0 by the least delayed delivery so far, so the anchor moves earlier as
    deliveries come in; a phase started under the old anchor and finished under the new one must not end before
    it started (seen in CI: a 'phase_finish' with duration_s -0.09 in the JSON events of a Ray matrix)."""
    from types import SimpleNamespace

    from trt_widget._engine import CaptureLogger
    from trt_widget._phases import PhaseModel
    from trt_widget.ray._runner import RayRunner, _Relay

    ctx = SimpleNamespace(model=PhaseModel(time.perf_counter), logger=CaptureLogger(), shared_clock=True)
    relay = _Relay(RayRunner(), ctx, ray=None)  # type: ignore[arg-type]
    start: dict[str, Any] = {"event": "phase_start", "id": 0, "name": "p", "parent": None, "num_steps": 1, "t": 0.10}
    relay._feed([{"event": "sent", "t": 0.10}, start])  # delivered late: the anchor is too late by the delay
    time.sleep(0.05)
    finish: dict[str, Any] = {"event": "phase_finish", "id": 0, "name": "p", "t": 0.12}
    relay._feed([{"event": "sent", "t": 0.30}, finish])  # delivered sooner: the anchor moves ~0.15 s earlier
    (row,) = ctx.model.rows()
    assert row["end_s"] is not None and row["duration_s"] >= 0, row
