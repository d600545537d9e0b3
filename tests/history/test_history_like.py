"""Like with like: the GPU (name, compute capability, driver) and the timing cache's warmth are part of the history
key, so ETA and "Δ last build" compare only matching builds, and say what matched. There is no GPU here: the
GPU facts NVML would give are set directly (as measured on an H200), and the warmth, which only NVIDIA TensorRT
has (TensorRT for RTX ignores timing caches), is shown with the backend reported as NVIDIA's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trt_widget import Build, _backend, _gpu, models
from trt_widget import history as hist
from trt_widget.history._keys import build_key, like_facts

H200 = {"name": "NVIDIA H200", "compute_capability": "9.0", "driver": "580.159.04"}
A100 = {"name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0", "driver": "580.159.04"}


@pytest.fixture
def on_gpu(monkeypatch: pytest.MonkeyPatch) -> Any:
    def use(facts: dict[str, str] | None) -> None:
        monkeypatch.setattr(_gpu, "_identity", {0: facts})  # device 0: the builds here name no device=

    return use


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return models.to_bytes(models.deep_residual(1))


def test_the_gpu_is_part_of_the_key_and_no_gpu_keeps_the_old_key(on_gpu: Any, model_bytes: bytes) -> None:
    build = Build(model_bytes, history=False)
    on_gpu(None)
    plain = build_key(build)
    assert plain == build_key(build, {})  # without GPU facts the key is what it always was
    on_gpu(H200)
    on_h200 = build_key(build)
    on_gpu(A100)
    assert len({plain[0], on_h200[0], build_key(build)[0]}) == 3
    assert on_h200[1] == plain[1]  # the model hash is the model's alone


def test_a_warm_timing_cache_is_not_compared_with_a_cold_one(
    on_gpu: Any, model_bytes: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_gpu(H200)
    _kind, module = _backend.select_backend()
    monkeypatch.setattr(_backend, "select_backend", lambda: ("tensorrt", module))  # the backend with timing caches
    cache = tmp_path / "t.cache"
    build = Build(model_bytes, timing_cache=cache, history=False)
    assert like_facts(build) == {"gpu": H200, "timing_cache": "cold"}
    cold = build_key(build)
    cache.write_bytes(b"entries")
    assert like_facts(build)["timing_cache"] == "warm"
    assert build_key(build) != cold
    monkeypatch.setattr(_backend, "select_backend", lambda: ("rtx", module))
    assert "timing_cache" not in like_facts(build)  # RTX ignores the cache: warm and cold builds are alike


def test_eta_only_against_a_build_on_the_same_gpu(on_gpu: Any, model_bytes: bytes, tmp_path: Path) -> None:
    store = hist.HistoryStore(tmp_path / "h.sqlite")
    on_gpu(H200)
    first = Build(model_bytes, history=store, isolation="thread").start()
    assert first.history is not None
    assert first.wait(180) == "succeeded" and first.history.recorded.wait(60)
    on_gpu(A100)
    other = Build(model_bytes, history=store, isolation="thread")
    assert other.history is not None
    assert other.history.ready.wait(60) and other.history.match is None  # another GPU: nothing to compare with
    on_gpu(H200)
    same = Build(model_bytes, history=store, isolation="thread")
    assert same.history is not None
    assert same.history.ready.wait(60) and same.history.match is not None
    assert same.history.match["id"] == first.history.recorded_id
    assert same.history.based_on is not None
    assert same.history.based_on.endswith(", same NVIDIA H200 (compute 9.0, driver 580.159.04)")
    assert same.history.key is not None
    record = store.latest(same.history.key)
    assert record is not None and record["gpu"] == H200  # the record says which GPU it was built on


def test_the_report_says_which_builds_eta_and_deltas_come_from(on_gpu: Any, model_bytes: bytes, tmp_path: Path) -> None:
    on_gpu(H200)
    build = Build(model_bytes, history=hist.HistoryStore(tmp_path / "h.sqlite"), isolation="thread").start()
    assert build.wait(180) == "succeeded", build.error
    assert build.history is not None
    assert build.history.ready.wait(60)
    page = build.to_html()
    assert (
        "<th>ETA and Δ from</th><td>earlier builds with the same model, options, backend, NVIDIA H200 "
        "(compute 9.0, driver 580.159.04)</td>"
    ) in page
