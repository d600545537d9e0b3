"""History stays off a build's path: a large model's key is computed from samples of it (not re-read and hashed
whole), and ``wait()`` returns before the record is written to SQLite."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import pytest

from trt_widget import Build
from trt_widget._engine import ModelSource
from trt_widget.history import HistoryStore
from trt_widget.history._keys import SAMPLE_BYTES, SAMPLES, WHOLE_MAX, model_digest


def test_a_small_model_is_hashed_whole_from_bytes_or_file(tmp_path: Path) -> None:
    data = bytes(range(256)) * 1000
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    whole = hashlib.sha256(data).hexdigest()
    assert model_digest(ModelSource.of(data)) == model_digest(ModelSource.of(str(path))) == whole


def test_a_large_model_is_keyed_by_its_size_and_sampled_blocks(tmp_path: Path) -> None:
    size = WHOLE_MAX + 12345
    data = bytearray(size)
    path = tmp_path / "big.onnx"
    path.write_bytes(data)
    digest = model_digest(ModelSource.of(bytes(data)))
    assert digest == model_digest(ModelSource.of(str(path)))  # the file read by blocks, the bytes alike
    assert digest != hashlib.sha256(data).hexdigest()

    stride = (size - SAMPLE_BYTES) // (SAMPLES - 1)
    inside = bytearray(data)
    inside[stride * 7 + 3] = 1  # a byte within the 8th sampled block
    assert model_digest(ModelSource.of(bytes(inside))) != digest
    assert model_digest(ModelSource.of(bytes(data + b"\0"))) != digest  # another size
    assert model_digest(ModelSource.of(lambda network: None)) is None  # a callable: keyed by its source


def test_wait_returns_before_the_record_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_model: Any
) -> None:
    store = HistoryStore(tmp_path / "h.sqlite")
    writing, release = threading.Event(), threading.Event()
    original = store.add

    def slow_add(record: Any, **kwargs: Any) -> int:
        writing.set()
        assert release.wait(60)
        return original(record, **kwargs)

    monkeypatch.setattr(store, "add", slow_add)
    build = Build(small_model, history=store, isolation="thread").start()
    assert build.wait(120) == "succeeded"  # while the record waits to be written
    assert build.history is not None
    assert writing.wait(60) and not build.history.recorded.is_set()
    release.set()
    assert build.history.recorded.wait(60) and build.history.recorded_id is not None
    assert [r["id"] for r in store.records()] == [build.history.recorded_id]
