"""The engine report as HTML (the standalone report page, notebook outputs): escaped, the layer table capped."""

from __future__ import annotations

import html

from .._format import fmt_bytes, keep_units
from ._layer import _MEMORY_WORDS, MEMORY_KEYS, display
from ._model import EngineReport

HTML_MAX_ROWS = 2000  # layer rows written into a page (the JSON keeps all)


def _e(text: str, limit: int = 200) -> str:
    return html.escape(display(text, limit))


def engine_html(report: EngineReport | None, reason: str = "", max_rows: int = HTML_MAX_ROWS) -> str:
    """An ``<h2>Engine</h2>`` section: the summary (layers by type, precision mix, memory) and the layer table."""
    if report is None:
        return f"<h2>Engine</h2><p>No engine report: {_e(reason or 'none')}.</p>" if reason else ""
    kept = f"{len(report.layers):,}" + (
        f" of {report.total_layers:,}" if report.total_layers > len(report.layers) else ""
    )
    facts = [
        ("layers", kept),
        ("precision", ", ".join(f"{_e(k, 20)} {v}" for k, v in report.precision_mix().items())),
        ("types", ", ".join(f"{_e(k, 40)} {v}" for k, v in list(report.types().items())[:10])),
    ]
    facts += [
        (_MEMORY_WORDS[k], keep_units(fmt_bytes(v))) for k in MEMORY_KEYS if (v := report.memory.get(k)) is not None
    ]
    facts.append(("from", _e(report.source)))
    facts += [("note", _e(note, 300)) for note in report.notes]
    rows = []
    for layer in report.layers[:max_rows]:
        nodes = ", ".join(_e(n, 80) for n in layer.onnx_nodes[:20]) + (" …" if len(layer.onnx_nodes) > 20 else "")
        rows.append(
            f"<tr><td>{_e(layer.name)}</td><td>{_e(layer.type, 40)}</td><td>{_e(layer.precision, 30)}</td>"
            f"<td>{_e(layer.formats[0] if layer.formats else '', 60)}</td><td><code>{_e(layer.tactic, 80)}</code></td>"
            f"<td>{nodes}</td></tr>"
        )
    more = (
        f"<p>The first {max_rows:,} of {len(report.layers):,} layers are listed; "
        "<code>trt-widget inspect</code> or <code>build.engine_report</code> has them all.</p>"
        if len(report.layers) > max_rows
        else ""
    )
    return (
        f"<h2>Engine <small>({kept} layers)</small></h2>"
        '<table class="trt-engine-facts">'
        + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
        + '</table><table class="grid trt-engine-layers"><tr><th>layer</th><th>type</th><th>precision</th>'
        "<th>format</th><th>tactic</th><th>fused ONNX nodes</th></tr>" + "".join(rows) + "</table>" + more
    )
