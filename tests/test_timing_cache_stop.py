"""A stopped build keeps the timing cache it gathered until the stop (issue 40), so a long build can resume: the
cache the application owns stays serializable after ``build_serialized_network`` returns None for a cancel. Here
RTX's timing-cache calls (no-ops: the file holds an empty cache) stand in for NVIDIA's, on a thread (the
``nvidia_timing_cache`` fake: RTX builds skip the file); whether NVIDIA TensorRT's cache holds the entries timed
before the stop (in a builder process, the default) is checked by the contract suite (tests/test_gpu_contract.py,
``test_a_stopped_build_keeps_what_it_timed``)."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import pytest

from trt_widget import Build, models, trt
from trt_widget._engine import CaptureLogger, routed_logs


def _blank_cache() -> bytes:
    with routed_logs(CaptureLogger()) as router, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        config = trt.Builder(router).create_builder_config()
        return bytes(memoryview(config.create_timing_cache(b"").serialize()))


@pytest.mark.usefixtures("nvidia_timing_cache")
def test_a_stopped_build_writes_its_timing_cache(tmp_path: Path) -> None:
    path = tmp_path / "t.cache"
    build = Build(models.deep_residual(40), timing_cache=str(path), history=False, isolation="thread")
    stepped = threading.Event()
    build.model.subscribe(lambda event, phase: stepped.set() if event == "step" else None)
    build.start()
    assert stepped.wait(180), "no step"
    build.stop("test: stop")
    assert build.wait(180) == "cancelled", build.status_detail
    assert path.is_file(), "the stopped build's timing cache was not written"
    assert path.read_bytes()[:4] == _blank_cache()[:4]  # a TensorRT timing cache (RTX: an empty one)
    assert any("what TensorRT timed until then is kept" in record["message"] for record in build.logs)
