"""The log of a real TensorRT for RTX build in trtexec's line format (detailed profiling), as ``trt-widget inspect``
reads it: for the tests that change one line of it (a log another machine or user wrote is untrusted)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from trt_widget.models import deep_residual, to_bytes

RAW_LOG = textwrap.dedent(
    """
    import sys
    import tensorrt_rtx_bindings as trt


    class Log(trt.ILogger):
        def __init__(self):
            trt.ILogger.__init__(self)

        def log(self, severity, msg):
            tag = {trt.ILogger.VERBOSE: "V", trt.ILogger.INFO: "I", trt.ILogger.WARNING: "W"}.get(severity, "E")
            print(f"[12/06/2026-21:49:24] [{tag}] [TRT] {msg}")


    logger = Log()
    logger.min_severity = trt.ILogger.VERBOSE
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    assert parser.parse(open(sys.argv[1], "rb").read())
    config = builder.create_builder_config()
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
    assert builder.build_serialized_network(network, config) is not None
    """
)


def real_rtx_log(folder: Path) -> str:
    """Build ``deep_residual(2)`` in ``folder`` with a logger that prints trtexec's lines; what it printed."""
    (folder / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    (folder / "raw_log.py").write_text(RAW_LOG, encoding="utf-8")
    built = subprocess.run(
        [sys.executable, "raw_log.py", "m.onnx"], cwd=folder, capture_output=True, text=True, timeout=300
    )
    assert built.returncode == 0, built.stderr[-1500:]
    return built.stdout
