"""``trt-widget inspect FILE [--json]``: the engine report of a TensorRT log, an --exportLayerInfo JSON or a
recording, in the terminal (names escaped) or as JSON (an engine file: ``provenance.inspect_run``)."""

from __future__ import annotations

import argparse
import json
import sys

from .._format import say
from ._layer import display
from ._model import EngineReport


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file",
        help="a TensorRT log, a trtexec --exportLayerInfo JSON, a trt_widget recording, or an engine (what its "
        "manifest records)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON (EngineReport.to_dict)")
    parser.add_argument(
        "--export-layer-info", action="store_true", help="print the inspector's JSON (trtexec --exportLayerInfo)"
    )


def run(args: argparse.Namespace) -> int:
    """Print the file's report: 0, or 1 (with the reason) where it holds none or cannot be read."""
    try:
        report = EngineReport.from_file(args.file)
    except FileNotFoundError:
        say(f"trt-widget inspect: error: no such file: {args.file}", sys.stderr)
        return 1
    except OSError as exc:  # a folder, no permission: the reason, without Python's "[Errno N]"
        reason = exc.strerror or str(exc)
        say(f"trt-widget inspect: error: cannot read {args.file}: {reason}", sys.stderr)
        return 1
    except ValueError as exc:
        say(f"trt-widget inspect: error: {exc}", sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report.to_dict()))
    elif args.export_layer_info:
        print(report.to_json())
    else:
        say(report.summary())
        print(table(report))
    return 0


def table(report: EngineReport, limit: int = 10_000) -> str:
    """One line per layer: type, precision, tactic, name and fused ONNX nodes (escaped, long names cut)."""
    rows = [("TYPE", "PRECISION", "TACTIC", "LAYER (fused ONNX nodes)")]
    for layer in report.layers[:limit]:
        nodes = (
            f" ({', '.join(display(n, 60) for n in layer.onnx_nodes[:6])}{', …' if len(layer.onnx_nodes) > 6 else ''})"
        )
        rows.append(
            (
                display(layer.type, 24),
                display(layer.precision, 16),
                display(layer.tactic, 40),
                display(layer.name, 120) + (nodes if layer.onnx_nodes else ""),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}" for r in rows)
