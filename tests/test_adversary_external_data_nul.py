"""Seventeenth adversarial re-run (issue 35): a model naming external data whose ``location`` holds a NUL byte
(protobuf strings may). ``check_external_data`` and ``allowed_file`` (``_external_data.py``) pass the name to
``os.path.realpath``, which raises ValueError ("embedded null byte"): the build fails as "unexpected ValueError in
the build process" with a worker traceback, the provenance thread prints an unhandled-exception traceback, and
``--reuse`` ends in "unexpected ValueError" with the build's traceback; ``bundle --include-model`` blames the
write ("cannot write the bundle: embedded null byte"). The model is untrusted: a location it names is refused in
one line, as one naming ``..`` or a missing file is. The real CLI; the build stops before TensorRT's parse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from trt_widget.models import deep_residual


def _model_naming(folder: Path, location: str) -> Path:
    """deep_residual(2) with its weights in ``w.bin`` beside it, every tensor's location then set to ``location``."""
    path = folder / "m.onnx"
    onnx.save_model(
        deep_residual(2), str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin",
        size_threshold=0,
    )  # fmt: skip
    model = onnx.load(str(path), load_external_data=False)
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = location
    path.write_bytes(model.SerializeToString())
    return path


def _build(folder: Path, *extra: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", "m.onnx", "-o", "m.engine", "--plain", *extra],
        cwd=folder,
        capture_output=True,
        timeout=300,
    )
    return done.returncode, (done.stdout + done.stderr).decode("utf-8", "replace")


@pytest.mark.parametrize("extra", [(), ("--reuse",)], ids=["build", "build --reuse"])
@pytest.mark.xfail(strict=True, reason="17th re-run X1: an external-data location with a NUL: unexpected ValueError")
def test_an_external_data_location_holding_a_nul_is_refused_in_one_line(tmp_path: Path, extra: tuple[str, ...]) -> None:
    _model_naming(tmp_path, "w\x00.bin")
    code, said = _build(tmp_path, *extra)
    assert code == 1, said[-1500:]
    assert "Traceback" not in said and "unexpected" not in said, said[-1500:]
    assert "names external data" in said, said[-1500:]
    assert not (tmp_path / "m.engine").exists()


def test_the_same_model_naming_its_real_file_builds(tmp_path: Path) -> None:
    """The control: only the NUL differs."""
    _model_naming(tmp_path, "w.bin")
    code, said = _build(tmp_path)
    assert code == 0, said[-1500:]
    assert (tmp_path / "m.engine").stat().st_size > 0
