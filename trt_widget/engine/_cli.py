"""``trt-widget inspect FILE [--json]``: the engine report of a TensorRT log, an --exportLayerInfo JSON or a
recording, in the terminal (names escaped) or as JSON (an engine file: ``provenance.inspect_run``)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from .._format import say, terminal_width
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
        print(table(report, width=terminal_width(sys.stdout)))
    return 0


def table(report: EngineReport, limit: int = 10_000, width: int | None = None) -> str:
    """One line per layer: type, precision, tactic, name and fused ONNX nodes (escaped, long names cut). ``width``
    (a terminal's): a row longer wraps its last column between words, under that column (the terminal's own
    wrap broke a name mid-word: "relu_1|03")."""
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
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}" for r in rows]
    if width is None or all(len(line) <= width for line in lines):
        return "\n".join(lines)
    offset = sum(widths) + 6  # where the last column starts
    if width - offset < 20:  # too narrow for a column: each row wrapped as prose
        wrap = [textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False) for line in lines]
        return "\n".join(part for parts in wrap for part in parts)
    out: list[str] = []
    for line in lines:
        head, last = line[:offset], line[offset:]
        parts = textwrap.wrap(last, width - offset, break_on_hyphens=False) or [""]
        out += [head + parts[0], *(" " * offset + part for part in parts[1:])]
    return "\n".join(out)
