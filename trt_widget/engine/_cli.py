"""``trt-widget inspect FILE [--json]``: the engine report of a TensorRT log, an --exportLayerInfo JSON or a
recording, in the terminal (names escaped) or as JSON (an engine file: ``provenance.inspect_run``)."""

from __future__ import annotations

import argparse
import json
import sys

from .._format import escape_controls, say, terminal_width
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
    shown = escape_controls(args.file)  # a newline in the name forges no line of ours
    try:
        report = EngineReport.from_file(args.file)
    except FileNotFoundError:
        say(f"trt-widget inspect: error: no such file: {shown}", sys.stderr)
        return 1
    except OSError as exc:  # a folder, no permission: the reason, without Python's "[Errno N]"
        reason = escape_controls(exc.strerror or exc)  # str(exc) may repeat the path raw ("... is not a regular file")
        say(f"trt-widget inspect: error: cannot read {shown}: {reason}", sys.stderr)
        return 1
    except ValueError as exc:  # one line, naming the file
        say(f"trt-widget inspect: error: {escape_controls(exc)}", sys.stderr)
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
    """One line per layer: type, precision, tactic, name and fused ONNX nodes (escaped, long names cut).

    ``width`` (a terminal's columns) fits every line to it, as a terminal would otherwise break them mid-word: the
    widest columns shorten their names in the middle (``__myl_Add…myl0_2``: the numbered end that tells layers
    apart stays), and the fused nodes wrap onto indented lines under the LAYER column, between names."""
    head = ("TYPE", "PRECISION", "TACTIC", "LAYER (fused ONNX nodes)")
    if width is None:
        rows = [head]
        for layer in report.layers[:limit]:
            shown = ", ".join(display(n, 60) for n in layer.onnx_nodes[:6])
            nodes = f" ({shown}{', …' if len(layer.onnx_nodes) > 6 else ''})"
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
    return _fitted(head, report, limit, width)


_GAP = 2  # spaces between columns
_NARROWEST = 4  # a column shortened no further than "ab…c"
_LAYER_EXTRA = 8  # columns the LAYER column keeps over the others when all must shorten: layers are told apart there


def _fitted(head: tuple[str, str, str, str], report: EngineReport, limit: int, width: int) -> str:
    """:func:`table` with no line wider than ``width``."""
    layers = report.layers[:limit]
    cells = [
        (escape_controls(layer.type), escape_controls(layer.precision), escape_controls(layer.tactic))
        for layer in layers
    ]
    names = [escape_controls(layer.name) for layer in layers]
    nodes = [
        [escape_controls(n) for n in layer.onnx_nodes[:6]] + (["…"] if len(layer.onnx_nodes) > 6 else [])
        for layer in layers
    ]
    widths = [max([len(head[i]), *(len(c[i]) for c in cells)]) for i in range(3)]
    # the LAYER column's natural width: a layer's name and its nodes on one line
    widths.append(max([len(head[3]), *(len(_layer_text(n, m)) for n, m in zip(names, nodes, strict=True))]))
    # TACTIC and LAYER give columns back first (the widest, LAYER keeping a few more: layers are told apart
    # there), TYPE and PRECISION only once those are narrow
    for floors in ({2: 8, 3: 8 + _LAYER_EXTRA}, dict.fromkeys(range(4), _NARROWEST)):
        while sum(widths) + 3 * _GAP > width:
            open_ = [i for i, floor in floors.items() if widths[i] > floor]
            if not open_:
                break
            widths[max(open_, key=lambda i: widths[i] - (_LAYER_EXTRA if i == 3 else 0))] -= 1
    indent = " " * (sum(widths[:3]) + 3 * _GAP)

    def line(first: str, second: str, third: str, fourth: str) -> str:
        row = [_middle(first, widths[0]), _middle(second, widths[1]), _middle(third, widths[2])]
        return "  ".join(f"{c:<{w}}" for c, w in zip(row, widths, strict=False)) + "  " + fourth

    title = next((t for t in (head[3], "LAYER (fused nodes)") if len(t) <= widths[3]), "LAYER")
    out = [line(*head[:3], _middle(title, widths[3])).rstrip()]
    for (kind, precision, tactic), name, fused in zip(cells, names, nodes, strict=True):
        wrapped = _wrap_layer(name, fused, widths[3])
        out.append(line(kind, precision, tactic, wrapped[0]).rstrip())
        out += [(indent + more).rstrip() for more in wrapped[1:]]
    return "\n".join(out)


def _layer_text(name: str, nodes: list[str]) -> str:
    return name + (f" ({', '.join(nodes)})" if nodes else "")


def _middle(text: str, width: int) -> str:
    """``text`` shortened to ``width`` with "…" in its middle (a name's numbered end stays)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + (text[-tail:] if tail else "")


def _wrap_layer(name: str, nodes: list[str], width: int) -> list[str]:
    """A layer's name and ``(node, node, …)`` as lines of at most ``width``, broken between names only; a name
    wider than a line is shortened in the middle."""
    words = [name] + [
        ("(" if i == 0 else "") + node + (")" if i == len(nodes) - 1 else ",") for i, node in enumerate(nodes)
    ]
    lines: list[str] = []
    for word in (_middle(w, width) for w in words):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines
