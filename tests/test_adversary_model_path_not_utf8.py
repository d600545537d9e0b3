"""Seventeenth adversarial re-run (issue 35): a model whose path is not UTF-8 (a folder or file named with a Latin-1
byte, a valid Linux name: an old archive, a colleague's share). Python holds it with a lone surrogate
(``d\\udcff``); ``_engine._parse_file`` passes that str to TensorRT's ``OnnxParser.parse(view, path)``, whose
pybind11 binding cannot convert it: the build fails as "unexpected TypeError in the build process: parse():
incompatible function arguments" with the worker's traceback (``--isolation thread`` the same), and the history
store warns "UnicodeEncodeError ... surrogates not allowed". The output, ``--report`` and external-data names that
are not UTF-8 are handled; the model's own path should be too: built (the parser can be given the path as bytes,
or the folder another way), or refused in one clear line. A real RTX build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from trt_widget.models import deep_residual, to_bytes


def _build(tmp_path: Path, model: str | bytes, output: str | bytes = "m.engine", *more: str) -> tuple[int, str]:
    """``trt-widget build MODEL -o OUTPUT --plain ...`` run in ``tmp_path``: its exit status and what it said."""
    command: list[str | bytes] = [sys.executable, "-m", "trt_widget", "build", model, "-o", output, "--plain", *more]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=300)
    return done.returncode, (done.stdout + done.stderr).decode("utf-8", "replace")


def test_a_model_in_a_folder_whose_name_is_not_utf8_builds(tmp_path: Path) -> None:
    folder = os.path.join(os.fsencode(tmp_path), b"d\xff")  # a valid Linux name; no UTF-8 text
    os.mkdir(folder)
    with open(os.path.join(folder, b"m.onnx"), "wb") as handle:
        handle.write(to_bytes(deep_residual(2)))
    code, said = _build(tmp_path, b"d\xff/m.onnx")
    assert "Traceback" not in said and "unexpected" not in said, said[-1500:]
    assert "surrogates not allowed" not in said, said[-1500:]
    assert code == 0, said[-1500:]  # it builds (U1's fix), as the report test's model does
    assert (tmp_path / "m.engine").stat().st_size > 0


def test_an_engine_whose_name_is_not_utf8_gets_its_manifest_and_is_reused(tmp_path: Path) -> None:
    """The weakness beside U1: the manifest of ``o\\xff.engine`` failed to encode ("surrogates not allowed"), so
    ``--reuse`` found none. Written with the name escaped (the same JSON value), it is read back as written."""
    (tmp_path / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    saids: list[str] = []
    for _ in range(2):
        code, said = _build(tmp_path, "m.onnx", b"o\xff.engine", "--reuse")
        saids.append(said)
        assert code == 0, saids[-1][-1500:]
    assert all("surrogates not allowed" not in s and "manifest could not" not in s for s in saids), saids
    with open(os.path.join(os.fsencode(tmp_path), b"o\xff.engine.manifest.json"), "rb") as handle:
        manifest = json.loads(handle.read())  # valid JSON (UTF-8), the name read back as the file system gives it
    assert manifest["engine"]["file"] == os.fsdecode(b"o\xff.engine"), manifest["engine"]
    assert "Reused engine" in saids[1], saids[1][-1500:]


def test_a_model_with_external_data_in_a_folder_whose_name_is_not_utf8_builds(tmp_path: Path) -> None:
    """The parser finds the data through the folder's descriptor: no log line of TensorRT's fails its decoding."""
    import onnx

    saved = tmp_path / "q"
    saved.mkdir()
    onnx.save_model(
        deep_residual(2), str(saved / "m.onnx"), save_as_external_data=True, location="w.bin", size_threshold=0
    )
    folder = os.path.join(os.fsencode(tmp_path), b"e\xff")
    os.rename(saved, folder)  # onnx cannot save into such a folder itself
    assert os.path.isfile(os.path.join(folder, b"w.bin"))  # the weights the build must read there
    code, said = _build(tmp_path, b"e\xff/m.onnx")
    assert code == 0, said[-1500:]
    assert "Exception caught in log()" not in said and "Traceback" not in said, said[-1500:]
    assert (tmp_path / "m.engine").stat().st_size > 0


def test_a_model_whose_file_name_is_not_utf8_builds(tmp_path: Path) -> None:
    """A file name (not its folder) that is not UTF-8 reaches the parser as bytes, which the bindings take."""
    with open(os.path.join(os.fsencode(tmp_path), b"m\xff.onnx"), "wb") as handle:
        handle.write(to_bytes(deep_residual(2)))
    code, said = _build(tmp_path, b"m\xff.onnx")
    assert code == 0 and "Traceback" not in said and "unexpected" not in said, said[-1500:]
    assert (tmp_path / "m.engine").stat().st_size > 0
