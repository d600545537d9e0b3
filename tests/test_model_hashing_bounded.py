"""Issue 35 (13th re-run, S1's second site): the model's provenance hash, read beside a build, opens the model
without blocking and only as a regular file, and a finished build never waits on that hash for ever."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import trt_widget._build as build_module
from trt_widget import Build
from trt_widget._external_data import NotAModelFile
from trt_widget.provenance._hashes import HashCache
from trt_widget.provenance._manifest import _model_file, manifest_path


def test_the_model_hash_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    raised: list[BaseException] = []

    def hash_it() -> None:
        try:
            _model_file(str(fifo), HashCache(None))
        except BaseException as exc:  # what it raised is the assertion
            raised.append(exc)

    worker = threading.Thread(target=hash_it, daemon=True)
    worker.start()
    worker.join(60)  # a refusal takes microseconds; the defect waits in open() for a writer
    if worker.is_alive():
        with open(fifo, "wb"):  # a writer: the blocked open returns, the thread ends
            pass
        pytest.fail("hashing a FIFO as the model blocked in open()")
    assert len(raised) == 1 and isinstance(raised[0], NotAModelFile), raised
    assert "not a regular file" in str(raised[0])


def test_a_finished_build_does_not_wait_for_ever_on_the_model_hash(
    onnx_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hash that never ends (a model on a file system that stopped answering, which cannot be made here: the
    hashing thread is held on an event) costs the manifest, never the build or its engine."""
    release = threading.Event()
    real = Build._provenance_identity

    def held(self: Build) -> object:
        if threading.current_thread().name == "trt_widget-provenance":
            release.wait(600)
        return real(self)

    monkeypatch.setattr(Build, "_provenance_identity", held)
    monkeypatch.setattr(build_module, "HASHING_WAIT_S", 0.5)
    engine = tmp_path / "e.engine"
    build = Build(str(onnx_path), output=str(engine), isolation="thread", history=False, resources=False)
    try:
        build.start()
        build.wait(300)
        assert build.done(), "the build never ended: it waits on the model's hash"
        assert build.status == "succeeded", build.error
        assert engine.stat().st_size == build.engine_size
        assert "hashing the model took more than" in build.status_detail
        assert not manifest_path(engine).exists()
    finally:
        release.set()
