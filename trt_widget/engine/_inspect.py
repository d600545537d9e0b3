"""The GPU path: TensorRT's ``IEngineInspector`` JSON of a serialized engine (the same fields as the log record and
``trtexec --exportLayerInfo``). It deserializes the engine, which needs the GPU (and memory) it was built for:
without one TensorRT refuses (TensorRT for RTX on a CPU: cudaError 35), and this says so."""

from __future__ import annotations

from typing import SupportsInt

from .._backend import LoggerBase, trt
from ._parse import Parsed, load_layer_json, report_from_json


def report_from_engine(engine: bytes | bytearray | memoryview) -> Parsed:
    """The inspector's report of ``engine``; ValueError where TensorRT cannot deserialize or inspect it here."""
    t = trt()

    class Quiet(LoggerBase):  # TensorRT's complaint becomes the ValueError
        def log(self, severity: SupportsInt, msg: str) -> None:
            pass

    runtime = t.Runtime(Quiet())
    try:
        deserialized = runtime.deserialize_cuda_engine(bytes(engine))
    except Exception as exc:  # the bindings raise where the runtime cannot start (no GPU)
        raise ValueError(f"TensorRT could not deserialize the engine here ({exc}); read build.engine_report") from None
    if deserialized is None:
        raise ValueError(
            "TensorRT could not deserialize the engine here (it needs the GPU it was built for); the build's "
            "engine_report (read from its log) holds the same layers"
        )
    inspector = deserialized.create_engine_inspector()
    text = inspector.get_engine_information(t.LayerInformationFormat.JSON) if inspector is not None else None
    if not text:
        raise ValueError("TensorRT's engine inspector returned nothing for this engine")
    return report_from_json(load_layer_json(text), "IEngineInspector (JSON)")
