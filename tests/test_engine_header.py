"""check_engine without a manifest: what a TensorRT for RTX engine's own first bytes say (its backend, version and
size), read from real engines built here. NVIDIA TensorRT documents no engine header: its engines are not read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trt_widget import Build
from trt_widget._backend import backend_info
from trt_widget.models import deep_residual, to_bytes
from trt_widget.provenance import check_engine, manifest_path, read_engine_header
from trt_widget.provenance._check import HEADER_BYTES

pytestmark = pytest.mark.skipif(
    backend_info()["backend"] != "rtx", reason="reads TensorRT for RTX engines (NVIDIA's header is not documented)"
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real engine of this TensorRT for RTX, with no manifest beside it."""
    build = Build(to_bytes(deep_residual(2)), history=False, resources=False).start()
    assert build.wait() == "succeeded", build.status_detail
    assert build.engine
    path = tmp_path_factory.mktemp("header") / "e.engine"
    path.write_bytes(build.engine)
    assert not manifest_path(path).exists()
    return path


def test_the_header_names_the_backend_version_and_size(engine: Path) -> None:
    header = read_engine_header(engine)
    assert header is not None
    assert header.backend == "rtx" and header.version == backend_info()["version"]
    assert header.size == engine.stat().st_size


def test_an_engine_of_this_tensorrt_matches_by_its_header_but_is_not_said_to_load(engine: Path) -> None:
    """Issue 35 (second re-run): 28 bytes say nothing of the rest of the file, so the verdict says what was read
    (``header matches``, ``loads`` None), never ``loads``."""
    result = check_engine(engine)
    assert result.loads is None and result.verdict == "header matches", result.reason
    assert result.reason.startswith(f"header matches this TensorRT for RTX {backend_info()['version']} (not loaded:")
    assert "no manifest" in result.reason


def test_a_file_that_copies_the_header_and_the_size_is_not_said_to_load(engine: Path, tmp_path: Path) -> None:
    """The adversary's fake: a real engine's first 28 bytes, then zeros to the size they state. It "loaded"."""
    fake = tmp_path / "fake.engine"
    fake.write_bytes(engine.read_bytes()[:HEADER_BYTES].ljust(engine.stat().st_size, b"\0"))
    assert read_engine_header(fake) == read_engine_header(engine)
    result = check_engine(fake)
    assert result.loads is not True and not result.reason.startswith("compatible"), result.reason
    assert result.verdict == "header matches"


def test_its_header_says_why_nvidia_tensorrt_cannot_load_it(engine: Path) -> None:
    result = check_engine(engine, backend={"backend": "tensorrt", "module": "tensorrt", "version": "10.13.0"})
    assert result.loads is False
    assert "TensorRT for RTX" in result.reason and "NVIDIA TensorRT, which cannot load it" in result.reason


def test_another_version_cannot_be_told_without_a_manifest(engine: Path) -> None:
    result = check_engine(engine, backend={"backend": "rtx", "module": "tensorrt_rtx", "version": "1.8.0.1"})
    assert result.loads is None
    assert backend_info()["version"] in result.reason and "1.8.0.1" in result.reason
    assert "version_compatible" in result.reason


def test_a_truncated_engine_does_not_load(engine: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.engine"
    data = engine.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    result = check_engine(cut)
    assert result.loads is False and "truncated" in result.reason
    assert f"{len(data):,} bytes" in result.reason


@pytest.mark.parametrize(
    "head", [b"", b"vtrt", b"ptrtd\x00\x00\x00" + bytes(40), b"\x08\x07\x12\x07pytorch" + bytes(40)], ids=repr
)
def test_any_other_file_cannot_be_told(tmp_path: Path, head: bytes) -> None:
    path = tmp_path / "x.engine"
    path.write_bytes(head)  # empty, too short, a timing cache, an ONNX model
    assert read_engine_header(path) is None
    result = check_engine(path)
    assert result.loads is None and "documents no engine header" in result.reason


def test_the_check_command_reads_the_header(engine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trt_widget.__main__ import main

    assert main(["check", str(engine), "--json"]) == 1  # only "compatible" is 0: the header is all that was read
    said = json.loads(capsys.readouterr().out)
    assert said["loads"] is None and said["verdict"] == "header matches", said
    assert said["reason"].startswith("header matches this TensorRT for RTX")
    assert os.path.basename(said["engine"]) == "e.engine"
