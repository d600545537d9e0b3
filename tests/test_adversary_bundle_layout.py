"""Tenth adversarial re-run (issue 35): ``bundle --include-model`` packed each file as ``model/<base name>`` of its
real path, so a model whose external data lives in subfolders (``a/w.bin``, ``b/w.bin``) got two ``model/w.bin``
members and could not be rebuilt from the bundle ("names external data 'a/w.bin', which is not a file next to the
model"), and a linked model or data file (a Hugging Face cache's ``model.onnx`` -> ``blobs/<sha256>``) was packed
under its target's name."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _two_matmuls() -> onnx.ModelProto:
    weights = [numpy_helper.from_array(np.full((8, 8), k, np.float32), f"W{k}") for k in (1, 2)]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("MatMul", ["h", "W2"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _model_with_data_in_subfolders(folder: Path) -> Path:
    model = _two_matmuls()
    for tensor, location in zip(model.graph.initializer, ("a/w.bin", "b/w.bin"), strict=True):
        (folder / location).parent.mkdir(exist_ok=True)
        (folder / location).write_bytes(tensor.raw_data)
        onnx.external_data_helper.set_external_data(tensor, location=location, offset=0, length=len(tensor.raw_data))
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
    path = folder / "m.onnx"
    onnx.save(model, path)
    return path


ENV = {**os.environ, "TRT_WIDGET_HISTORY": "off"}


def _bundle_and_rebuild(model: Path, tmp_path: Path) -> tuple[list[str], str]:
    """Bundle ``model`` with its files, unpack the zip, build ``model/<its name>`` from it: the member names and the
    bundle's README."""
    bundle = tmp_path / "r.zip"
    made = subprocess.run(
        [sys.executable, "-m", "trt_widget", "bundle", str(model), "-o", str(bundle), "--include-model"],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        readme = archive.read("README.txt").decode()
        archive.extractall(tmp_path / "unpacked")
    rebuilt = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", str(tmp_path / "unpacked" / "model" / model.name),
         "-o", str(tmp_path / "e.engine")],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    assert (tmp_path / "e.engine").stat().st_size > 0
    return names, readme


def test_a_bundle_keeps_the_external_data_layout_so_its_model_builds_again(tmp_path: Path) -> None:
    model = _model_with_data_in_subfolders(tmp_path)
    names, readme = _bundle_and_rebuild(model, tmp_path)  # raised: 'a/w.bin' is not a file next to the model
    assert len(names) == len(set(names)), names
    assert {"model/m.onnx", "model/a/w.bin", "model/b/w.bin"} <= set(names), names
    assert "model/a/w.bin" in readme and "model/b/w.bin" in readme, readme


def test_a_linked_model_and_linked_data_are_packed_under_the_names_the_model_uses(tmp_path: Path) -> None:
    """As a Hugging Face cache lays them out: ``model.onnx`` a link to ``blobs/<sha256>`` (outside the model's
    folder: the model itself was given), each weight a link inside the folder, two of them to one file (each
    tensor at its own offset). Each goes in under the name the model uses, not the link target's."""
    model = _two_matmuls()
    folder = tmp_path / "snapshot"
    (folder / ".blobs").mkdir(parents=True)
    blob = folder / ".blobs" / "9f2c"
    blob.write_bytes(b"".join(tensor.raw_data for tensor in model.graph.initializer))
    for k, tensor in enumerate(model.graph.initializer):
        (folder / f"w{k}.bin").symlink_to(".blobs/9f2c")
        size = len(tensor.raw_data)
        onnx.external_data_helper.set_external_data(tensor, location=f"w{k}.bin", offset=k * size, length=size)
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
    (tmp_path / "blobs").mkdir()
    onnx.save(model, tmp_path / "blobs" / "5e1a")
    (folder / "model.onnx").symlink_to("../blobs/5e1a")
    names, readme = _bundle_and_rebuild(folder / "model.onnx", tmp_path)
    packed = sorted(name for name in names if name.startswith("model/"))
    assert packed == ["model/model.onnx", "model/w0.bin", "model/w1.bin"], names  # was model/5e1a, model/9f2c
    assert "model/w1.bin" in readme and "5e1a" not in readme and "9f2c" not in readme, readme


def test_a_bundles_readme_escapes_the_names_a_model_gives_its_files(tmp_path: Path) -> None:
    """Eleventh re-run: a data file named with ESC sequences (an OSC title, a clear screen) reached README.txt raw,
    in its name column and (the model file's own name) its header, where the log and the README's own description
    column escape it. U+202E (which shows ``x\\u202egnp.exe`` as "xexe.png") is escaped the same way."""
    model = _two_matmuls()
    for tensor, location in zip(model.graph.initializer, ("w\x1b]0;OWNED\x07.bin", "v\x1b[2J.bin"), strict=True):
        (tmp_path / location).write_bytes(tensor.raw_data)
        onnx.external_data_helper.set_external_data(tensor, location=location, offset=0, length=len(tensor.raw_data))
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
    onnx.save(model, tmp_path / "m\x1b[1m\u202e.onnx")
    bundle = tmp_path / "r.zip"
    made = subprocess.run(
        [sys.executable, "-m", "trt_widget", "bundle", str(tmp_path / "m\x1b[1m\u202e.onnx"), "-o", str(bundle),
         "--include-model"],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    with zipfile.ZipFile(bundle) as archive:
        readme = archive.read("README.txt").decode()
        log = archive.read("log.txt").decode()
    assert "\\x1b]0;OWNED" in log  # the log names the file, escaped
    assert "\x1b" not in readme and "\x07" not in readme and "\u202e" not in readme, readme
    assert "model/w\\x1b]0;OWNED\\x07.bin" in readme and "model/v\\x1b[2J.bin" in readme, readme  # named, escaped
    assert "m\\x1b[1m\\u202e.onnx" in readme, readme  # the header's model and the model file's entry
    with zipfile.ZipFile(bundle) as archive:  # the members keep the files' own names (unpacked, the model builds)
        assert "model/w\x1b]0;OWNED\x07.bin" in archive.namelist(), archive.namelist()


def test_a_redacted_bundle_of_a_recording_carries_no_path_of_yours(tmp_path: Path) -> None:
    """Eleventh re-run: ``bundle REC.jsonl --include-model --redact`` packs the recording itself as
    ``model/REC.jsonl``, unredacted, beside the redacted ``events.jsonl`` (docs/reuse.md: "in every text file")."""
    model = _model_with_data_in_subfolders(tmp_path)
    recording = tmp_path / "rec.jsonl"
    with recording.open("wb") as out:
        built = subprocess.run(
            [sys.executable, "-m", "trt_widget", "build", str(model), "-o", str(tmp_path / "e.engine"), "--json"],
            stdout=out, stderr=subprocess.PIPE, timeout=300, env=ENV,
        )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    assert str(tmp_path).encode() in recording.read_bytes()
    bundle = tmp_path / "r.zip"
    made = subprocess.run(
        [sys.executable, "-m", "trt_widget", "bundle", str(recording), "-o", str(bundle),
         "--include-model", "--redact"],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    with zipfile.ZipFile(bundle) as archive:
        leaking = [name for name in archive.namelist() if str(tmp_path).encode() in archive.read(name)]
        readme = archive.read("README.txt").decode()
        assert "events.jsonl" in archive.namelist()  # the recording's events, redacted
    assert leaking == [], leaking
    assert "left out: the recording itself" in readme, readme
