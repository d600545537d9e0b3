"""A model whose one weight lies in an external-data file, for the tests of what a build reads of a model's folder
(swaps, rewrites, the reuse key): ``y = x + W``, W ``N`` floats of 1.5 in ``w.bin`` beside the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

N = 256  # floats: the weight is 1 KiB


def model_with_external_weight(folder: Path) -> Path:
    """``folder/m.onnx``: ``y = x + W`` with W (``N`` floats of 1.5) in ``folder/w.bin``."""
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
