"""What TensorRT's parser reads of a model's external data is the file checked (issue 35, D4): each file is opened
once and checked on its descriptor; a folder another user could change is parsed from a private copy of those
files, the user's own folder in place, where a name swapped meanwhile fails the build. Real RTX builds."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import trt_widget._external_data as external_data
from trt_widget import Build

N = 256
WEIGHT = np.full((1, N), 1.5, np.float32).tobytes()
SECRET = (b"root:$6$a-secret-the-model-never-named$:19000:0:99999:7:::\n" * 40)[: N * 4]


def _model(folder: Path) -> Path:
    """``y = x + W`` with W (1.5 everywhere) in ``w.bin`` beside the model."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "W"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, N])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, N])],
        [numpy_helper.from_array(np.frombuffer(WEIGHT, np.float32).reshape(1, N), "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / "m.onnx"
    onnx.save_model(model, path, save_as_external_data=True, location="w.bin", size_threshold=0)
    return path


def _swap_once_held(monkeypatch: pytest.MonkeyPatch, folder: Path, secret: Path) -> list[bool]:
    """After the files are opened and checked (``HeldData.shared`` is asked next), ``w.bin`` becomes a link to
    ``secret``; the list says whether the swap was made and what ``shared`` answered."""
    made: list[bool] = []
    shared = external_data.HeldData.shared
    # files written long ago (their stat stands for their bytes): else a private copy is parsed, shared() unasked
    monkeypatch.setattr(external_data, "RACY_NS", 0)

    def then_swapped(self: external_data.HeldData) -> str:
        if not made:
            os.rename(folder / "w.bin", folder / "w.bin.moved")
            os.symlink(secret, folder / "w.bin")
            made.append(True)
        answer = shared(self)
        made.append(bool(answer))
        return answer

    monkeypatch.setattr(external_data.HeldData, "shared", then_swapped)
    return made


def _build(model: Path, output: Path) -> Build:
    build = Build(str(model), output=str(output), isolation="thread", history=False)
    build.start()
    build.wait(300)
    return build


@pytest.mark.slow
def test_a_folder_others_may_write_is_parsed_from_a_private_copy_of_the_files_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "shared-model"
    folder.mkdir()
    model = _model(folder)
    folder.chmod(0o777)  # no sticky bit: any user may rename its entries
    secret = tmp_path / "shadow"
    secret.write_bytes(SECRET)
    made = _swap_once_held(monkeypatch, folder, secret)
    build = _build(model, tmp_path / "m.engine")
    assert made == [True, True], made  # swapped, and the folder was seen as shared
    assert build.status == "succeeded", build.status_detail
    engine = build.engine or b""
    assert SECRET[:40] not in engine
    assert WEIGHT in engine  # the weights held before the swap, from the copy
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob(f"trt_widget-model-{os.getpid()}-*"))  # removed


@pytest.mark.slow
def test_the_users_own_folder_is_parsed_in_place_and_a_name_swapped_meanwhile_fails_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "own-model"
    folder.mkdir(mode=0o700)
    model = _model(folder)
    secret = tmp_path / "shadow"
    secret.write_bytes(SECRET)
    made = _swap_once_held(monkeypatch, folder, secret)
    output = tmp_path / "m.engine"
    build = _build(model, output)
    assert made == [True, False], made  # swapped; nobody else may write the folder: parsed in place
    assert build.status == "failed", build.status
    assert "was replaced while the model was parsed" in str(build.error), build.error
    assert not output.exists() and not build.engine


@pytest.mark.slow
def test_a_folder_others_may_write_builds_its_external_data(tmp_path: Path) -> None:
    folder = tmp_path / "shared-model"
    folder.mkdir()
    model = _model(folder)
    folder.chmod(0o777)
    build = _build(model, tmp_path / "m.engine")
    assert build.status == "succeeded", build.status_detail
    assert WEIGHT in (build.engine or b"")
