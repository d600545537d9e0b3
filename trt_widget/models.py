"""Small ONNX model generators for tests and demos, so nothing is downloaded.

``resnet50()`` is ResNet-50-shaped (bottleneck stages 3-4-6-3, ~1 s to build with TensorRT for RTX);
``deep_residual(blocks)`` is a long chain of residual conv blocks whose build time grows with ``blocks``.
Weights are random (seeded): these models exist to be built, not to be accurate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._json import json_int

if TYPE_CHECKING:
    from onnx import ModelProto, NodeProto, TensorProto

Dim = int | str  # a dimension: its size, or a name for a dynamic one ("batch")

MAX_BLOCKS = 20_000  # deep_residual: 10,000 blocks took over 4 min and ~1 GB to build here; far more is a typo
MAX_WEIGHT_BYTES = 2**31 - 1  # protobuf's bound on one ONNX file: a model with more weights cannot be saved


def _bounded(name: str, value: int, low: int, high: int) -> None:
    """Refuse a generator argument outside ``low..high`` before any memory is spent on it (a typo's 10**9 blocks
    would build the model in memory until it runs out)."""
    if not json_int(value) or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number from {low:,} to {high:,}, got {value!r}")


class _Graph:
    """Accumulates nodes and initializers with unique names."""

    def __init__(self, seed: int) -> None:
        self.nodes: list[NodeProto] = []
        self.inits: list[TensorProto] = []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def weight(self, shape: tuple[int, ...], scale: float = 0.05) -> str:
        name = self.name("w")
        data = self.rng.standard_normal(shape, dtype=np.float32)  # drawn as float32: half the work of float64
        data *= np.float32(scale)
        from onnx import numpy_helper  # imported lazily: only the generators need onnx

        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def node(self, op: str, inputs: list[str], node_name: str | None = None, **attrs: int | list[int]) -> str:
        from onnx import helper

        out = self.name(op.lower())
        node = helper.make_node(op, inputs, [out], name=node_name or out)
        node.attribute.extend(helper.make_attribute(key, value) for key, value in sorted(attrs.items()))  # as make_node
        self.nodes.append(node)
        return out

    def conv(self, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, relu: bool = True) -> str:
        y = self.node(
            "Conv",
            [x, self.weight((cout, cin, k, k)), self.weight((cout,), 0.01)],
            kernel_shape=[k, k],
            pads=[k // 2] * 4,
            strides=[stride, stride],
        )
        return self.node("Relu", [y]) if relu else y

    def model(self, x_shape: list[Dim], y: str, y_shape: list[Dim], name: str, opset: int = 17) -> ModelProto:
        import onnx

        graph = onnx.helper.make_graph(
            self.nodes,
            name,
            [onnx.helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, x_shape)],
            [onnx.helper.make_tensor_value_info(y, onnx.TensorProto.FLOAT, y_shape)],
            self.inits,
        )
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        model.ir_version = 8
        return model


def resnet50(batch: Dim = 1, image: int = 224, classes: int = 1000, seed: int = 0) -> ModelProto:
    """A ResNet-50-shaped ``onnx.ModelProto`` (input "input": batch x 3 x image x image)."""
    _bounded("classes", classes, 1, (MAX_WEIGHT_BYTES // 4 - 24_000_000) // 2049)  # the rest: ~23.5 M weights
    g = _Graph(seed)
    x = g.conv("input", 3, 64, k=7, stride=2)
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512), strict=True)):
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            cout = width * 4
            y = g.conv(x, cin, width, k=1)
            y = g.conv(y, width, width, k=3, stride=stride)
            y = g.conv(y, width, cout, k=1, relu=False)
            shortcut = g.conv(x, cin, cout, k=1, stride=stride, relu=False) if block == 0 else x
            x = g.node("Relu", [g.node("Add", [y, shortcut])])
            cin = cout
    x = g.node("GlobalAveragePool", [x])
    x = g.node("Flatten", [x], axis=1)
    y = g.node("Gemm", [x, g.weight((classes, cin), 0.01), g.weight((classes,), 0.01)], transB=1)
    return g.model([batch, 3, image, image], y, [batch, classes], "resnet50")


def deep_residual(
    blocks: int = 1000, channels: int = 8, size: int = 8, batch: Dim = 1, seed: int = 0, node_name: str | None = None
) -> ModelProto:
    """A chain of ``blocks`` residual conv blocks (conv-relu-add); 1000 blocks build in ~5-15 s here.

    ``node_name`` names the first conv node (e.g. to see how untrusted names show up in logs). ``blocks`` is
    at most :data:`MAX_BLOCKS`, and the weights must fit one ONNX file (ValueError otherwise).
    """
    _bounded("blocks", blocks, 0, MAX_BLOCKS)
    _bounded("channels", channels, 1, 4096)
    if blocks * channels * channels * 9 * 4 > MAX_WEIGHT_BYTES:
        raise ValueError(
            f"{blocks:,} blocks of {channels:,} channels hold more than 2 GiB of weights, more than an ONNX file can"
        )
    g = _Graph(seed)
    x = "input"
    for i in range(blocks):
        y = g.node(
            "Conv",
            [x, g.weight((channels, channels, 3, 3))],
            node_name=node_name if i == 0 else None,
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        )
        x = g.node("Add", [x, g.node("Relu", [y])])
    shape: list[Dim] = [batch, channels, size, size]
    return g.model(shape, x, shape, "deep_residual")


def to_bytes(model: ModelProto) -> bytes:
    """Serialize an ``onnx.ModelProto``."""
    data: bytes = model.SerializeToString()
    return data
