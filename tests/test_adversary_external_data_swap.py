"""Twenty-first re-run, second half (issue 35): the model-file rule ("no symbolic link that leads out of the
directory", docs/security.md) is checked on names, then TensorRT's parser opens the names again, following links.
A model folder another user can change (a shared model folder) has its ``w.bin`` swapped for a link to
``/etc/shadow`` between trt_widget's check (``check_external_data``: the resolved path is inside) and the parse: the
secret's bytes become the model's weights and are kept in the engine (/srv/adv21b/build_swap.sh wins that race
against ``trt-widget build`` as root, the folder's owner ``nobody`` flipping the file; 1 try in ~15). Here the swap
is made right after the check, so the result does not depend on timing; a real RTX build, in this process."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_widget import Build

N = 256  # floats: the weight is 1 KiB
SECRET = (b"root:$6$a-secret-the-model-never-named$:19000:0:99999:7:::\n" * 40)[: N * 4]


def _model_with_external_weight(folder: Path) -> Path:
    """``y = x + W`` with W (``N`` floats) in ``w.bin`` beside the model."""
    weight = numpy_helper.from_array(np.full((1, N), 1.5, np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "W"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, N])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, N])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / "m.onnx"
    onnx.save_model(model, path, save_as_external_data=True, location="w.bin", size_threshold=0)
    return path


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True, reason="adversary run 21b: D4 external data swapped for a link after its check is built in"
)
def test_external_data_swapped_for_a_link_after_the_check_never_reaches_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trt_widget._engine as engine_module

    folder = tmp_path / "shared-model"
    folder.mkdir()
    model = _model_with_external_weight(folder)
    secret = tmp_path / "shadow"
    secret.write_bytes(SECRET)
    checked = engine_module.check_external_data  # type: ignore[attr-defined]  # imported there: patched there
    swapped: list[str] = []

    def then_swapped(locations: list[str], directory: str | None, label: str, hint: str = "") -> None:
        checked(locations, directory, label, hint)  # passed: w.bin is a regular file inside the folder
        if not swapped:  # what the folder's owner does now
            os.rename(folder / "w.bin", folder / "w.bin.moved")
            os.symlink(secret, folder / "w.bin")
            swapped.append("w.bin")

    monkeypatch.setattr(engine_module, "check_external_data", then_swapped)
    output = tmp_path / "m.engine"
    build = Build(str(model), output=str(output), isolation="thread", history=False)
    build.start()
    build.wait(300)
    assert swapped, "the build never checked the model's external data"
    kept = output.read_bytes() if output.exists() else b""
    leaked = SECRET[:40] in kept or SECRET[:40] in (build.engine or b"")
    assert not leaked, f"the engine holds the bytes of the file w.bin was linked to ({build.status})"
