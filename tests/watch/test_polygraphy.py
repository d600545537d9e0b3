"""Polygraphy's API (PyPI 0.53.6) building with TensorRT for RTX: trt_widget's monitor through
``CreateConfig(progress_monitor=...)``, and a watch around Polygraphy code (its own monitor chained, Stop → an
exception that says the build was cancelled, no patch left behind)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from fixture_types import WaitUntil

import trt_widget
from trt_widget import BuildCancelled, BuildMonitor
from trt_widget._build import FRAME_PHASES
from trt_widget.models import deep_residual, to_bytes
from trt_widget.watch import alias_tensorrt_rtx, watch, watch_call

from ._unpatched import unpatched

if trt_widget.select_backend()[0] == "rtx":  # before Polygraphy reads POLYGRAPHY_USE_TENSORRT_RTX
    assert alias_tensorrt_rtx()
if os.environ.get("CI"):  # CI installs the dev extra: a missing Polygraphy fails here, as the Ray fixture does
    import polygraphy  # noqa: F401
else:
    pytest.importorskip("polygraphy")
from polygraphy.backend.trt import CreateConfig, engine_bytes_from_network, network_from_onnx_bytes

trt: Any = trt_widget.trt
SMALL = to_bytes(deep_residual(2))


def polygraphy_build(data: bytes, monitor: Any = None) -> Any:
    return engine_bytes_from_network(network_from_onnx_bytes(data), config=CreateConfig(progress_monitor=monitor))


class Counter(trt.IProgressMonitor):  # type: ignore[misc]
    def __init__(self) -> None:
        trt.IProgressMonitor.__init__(self)
        self.starts: list[str] = []

    def phase_start(self, name: str, parent: str | None, num_steps: int) -> None:
        self.starts.append(name)

    def step_complete(self, name: str, step: int) -> bool:
        return True

    def phase_finish(self, name: str) -> None:
        pass


def test_create_config_takes_trt_widgets_monitor() -> None:
    monitor = BuildMonitor()
    engine = polygraphy_build(SMALL, monitor)
    assert len(bytes(engine)) > 0
    rows = monitor.timings()
    assert rows and rows[0]["name"] == "Building engine" and all(r["end_s"] is not None for r in rows)


def test_a_watch_sees_polygraphys_build_and_chains_its_monitor() -> None:
    theirs = Counter()
    with watch(history=False) as w:
        engine = polygraphy_build(SMALL, theirs)
    assert len(bytes(engine)) > 0 and unpatched()
    (build,) = w.builds
    assert build.status == "succeeded" and build.engine_size == len(bytes(engine))
    rows = [r for r in build.timings() if r["name"] not in FRAME_PHASES]  # TensorRT's own phases
    assert theirs.starts == [r["name"] for r in sorted(rows, key=lambda r: r["id"])]


def test_stop_cancels_polygraphys_build_and_its_error_says_so(long_model_bytes: bytes, wait_until: WaitUntil) -> None:
    call = watch_call(polygraphy_build, long_model_bytes)
    wait_until(lambda: call.builds and call.builds[0].model.innermost_running(), what="a running phase")
    call.stop()
    with pytest.raises(BuildCancelled, match="cancelled"):
        call.result(180)
    assert call.builds[0].status == "cancelled" and unpatched()
