"""Resource sampling during real builds: RSS samples, TensorRT's peak line, the sampler thread's life cycle."""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fixture_types import WaitUntil

from trt_widget import Build
from trt_widget import history as hist
from trt_widget._resources import MAX_SENT, MAX_STORED, ResourceSampler

psutil = pytest.importorskip("psutil")

TRT_PEAK = re.compile(r"^CPU \d+(\.\d+)? MiB, GPU \d+(\.\d+)? MiB$")


def _column(samples: Sequence[Sequence[float | None]], i: int) -> list[float]:
    """Column ``i`` of the resource samples (0: time, 1: RSS), present in each."""
    values = [s[i] for s in samples]
    assert all(v is not None for v in values), samples
    return [v for v in values if v is not None]


@pytest.fixture(autouse=True)
def private_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the real user cache."""
    monkeypatch.setenv(hist.ENV, str(tmp_path / "history.sqlite"))


def _sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "trt_widget-resources"]


def test_samples_during_a_real_build(resnet50_bytes: bytes, wait_until: WaitUntil) -> None:
    build = Build(resnet50_bytes, history=False, isolation="thread")  # the builder in this process
    sampler = build.resources
    assert isinstance(sampler, ResourceSampler)
    assert sampler.snapshot() is None and not sampler.running  # nothing before start
    build.start()
    wait_until(lambda: sampler.running or build.done(), what="the sampler to start")
    assert build.wait(300) == "succeeded"
    wait_until(lambda: not sampler.running, timeout=30, what="the sampler thread to stop")
    assert not _sampler_threads()

    snap = sampler.snapshot()
    assert snap is not None and snap is sampler.snapshot()  # cached while nothing changes
    samples = snap["samples"]
    assert len(samples) >= 2  # one at the start, one at the end
    times, rss = _column(samples, 0), _column(samples, 1)
    assert times == sorted(times) and times[0] >= 0 and times[-1] <= build.elapsed_s + 0.01
    assert all(r > 0 for r in rss) and snap["peak_rss"] == max(rss) > 0
    if sampler._gpu is None or sampler._gpu.nvml is None:  # no NVML (no NVIDIA driver): no GPU figures at all
        assert snap["peak_gpu_mem"] is None and all(s[2] is None and s[3] is None for s in samples)
    else:
        assert snap["peak_gpu_mem"] is not None and all(s[2] is not None for s in samples)
    assert snap["trt_peak"] and TRT_PEAK.match(snap["trt_peak"]), snap["trt_peak"]

    summary = sampler.summary()
    assert summary["sampled_pids"] == [os.getpid()]
    assert summary["trt_peak_cpu_bytes"] == int(float(snap["trt_peak"].split()[1]) * (1 << 20))
    assert summary["samples"] == len(sampler.samples)
    assert "peak RSS" in sampler.report() and snap["trt_peak"] in sampler.report()
    count = len(sampler.samples)
    sampler.stop()  # again: harmless
    assert len(sampler.samples) == count


def test_process_isolation_samples_the_child(resnet50_bytes: bytes, wait_until: WaitUntil) -> None:
    build = Build(resnet50_bytes, history=False, isolation="process").start()
    assert build.wait(300) == "succeeded"
    sampler = build.resources
    assert sampler is not None
    wait_until(lambda: not sampler.running, timeout=30, what="the sampler thread to stop")
    child = getattr(build, "child_pid", None)
    assert child and child != os.getpid()
    assert child in sampler.summary()["sampled_pids"]
    snap = sampler.snapshot()
    assert snap is not None and snap["peak_rss"] > 0 and snap["trt_peak"] and TRT_PEAK.match(snap["trt_peak"])


def test_history_records_the_resource_peaks(resnet50_bytes: bytes, tmp_path: Path) -> None:
    store = hist.HistoryStore(tmp_path / "h.sqlite")
    build = Build(resnet50_bytes, history=store).start()
    assert build.wait(300) == "succeeded"
    assert build.history is not None
    assert build.history.recorded.wait(60)
    recorded = hist.list_builds(store)[0]["resources"]
    assert build.resources is not None and recorded is not None
    summary = build.resources.summary()
    assert recorded["peak_rss"] == summary["peak_rss"] and (summary["peak_rss"] or 0) > 0
    assert recorded["trt_peak"] == summary["trt_peak"]


def test_snapshot_stays_bounded_and_keeps_the_peak(small_model: Any) -> None:
    """Synthetic driver: many samples of the real process without a build, to check the downsampling."""
    build = Build(small_model, history=False)
    sampler = build.resources
    assert sampler is not None
    for _ in range(2 * MAX_STORED + 5):
        sampler._sample()
    assert len(sampler.samples) <= MAX_STORED and sampler.interval > 0.5  # merged, and sampling slowed
    snap = sampler.snapshot()
    assert snap is not None and 0 < len(snap["samples"]) <= MAX_SENT
    assert max(_column(snap["samples"], 1)) == snap["peak_rss"] == sampler.peak_rss


def test_no_psutil_means_no_resources(small_model: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil now raises ImportError
    assert Build(small_model, history=False).resources is None
    assert Build(small_model, history=False, resources=False).resources is None
