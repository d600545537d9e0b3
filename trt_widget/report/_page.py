"""The standalone HTML report of a build (``Build.to_html`` / ``--report``): header, phase tree, timeline, TensorRT's
warnings, options and the history comparison, in one self-contained file (no script, no network).

The renderings it shares with notebook outputs (the merged phase tree, escaping, the facts of a build) live in
:mod:`trt_widget.report`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from .._files import utf8, write_output
from .._format import fmt_s, keep_units
from .._version import __version__
from ._inline import _ERROR, REPORT_MAX_NODES, Facts, _badge, _e, _facts, build_of, tree_html

if TYPE_CHECKING:
    from .._build import Build
    from ._inline import Source

T = TypeVar("T")

HISTORY_WAIT_S = 5.0  # what a report waits for its build's history look-up


def _u(text: str) -> str:
    """:func:`_e` of text holding numbers with units, each joined to its unit (a line never wraps between them)."""
    return _e(keep_units(text))


_PAGE_CSS = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #57606a; --line: #d0d7de; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9da7b3; --line: #3d444d; } }
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; color: var(--fg); background: var(--bg);
       margin: 2em auto; max-width: 72em; padding: 0 1.5em; line-height: 1.5; font-size: 14px; }
h1 { font-size: 1.5em; margin: 0 0 0.4em; } h2 { font-size: 1.15em; margin: 1.6em 0 0.5em; }
table { border-collapse: collapse; } td, th { padding: 0.2em 0.9em 0.2em 0; text-align: left; vertical-align: top; }
th { color: var(--muted); font-weight: 600; } .num { text-align: right; font-variant-numeric: tabular-nums; }
table.grid td, table.grid th { border-bottom: 1px solid var(--line); padding: 0.25em 0.8em; }
figure { margin: 0; overflow-x: auto; background: #ffffff; border: 1px solid var(--line); border-radius: 6px;
         padding: 6px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.92em; }
footer { color: var(--muted); margin-top: 2.5em; font-size: 12px; }
"""


def to_html(source: Source, path: str | os.PathLike[str] | None = None) -> str:
    """A standalone HTML report of a build: header (status, time, engine, model, backend, options), the phase
    tree, the timeline (inline SVG), TensorRT's warnings and errors, and the history comparison when there is one.

    Self-contained (no script, no network). Returns the text; also writes it atomically to ``path`` when given.
    """
    build = build_of(source)
    f = _facts(build)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="color-scheme" content="light dark">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>TensorRT build report: {_e(f['label'])}</title>",
        f"<style>{_PAGE_CSS}</style></head><body>",
        f"<h1>TensorRT engine build: {_e(f['label'])}</h1>",
        _header_table(build, f),
    ]
    if f["error"]:
        parts.append(f'<pre class="trt-error" style="{_ERROR}">{_e(f["error"].rstrip())}</pre>')
    parts += [
        f"<h2>Phases <small>({len(f['rows'])} instances)</small></h2>",
        f'<div class="trt-tree">{tree_html(f["nodes"], f["elapsed_s"], REPORT_MAX_NODES)}</div>',
        "<h2>Timeline</h2>",
        f'<figure class="trt-timeline">{_timeline_svg(build)}</figure>',
        _problems_section(build, f),
        _engine_section(build),
        _history_section(build),
        f"<footer>Made by trt_widget {_e(__version__)} on {_e(time.strftime('%Y-%m-%d %H:%M:%S %z'))}. "
        "This file is self-contained: no script, no network.</footer>",
        "</body></html>",
    ]
    text = "\n".join(p for p in parts if p)
    if path is not None:
        write_output(path, utf8(text), "path", build)  # the one output-path policy (_files.py)
    return text


def _header_table(build: Build, f: Facts) -> str:
    rows = [
        ("Status", _badge(f["status"], f["status_word"]) + (f" {_e(f['detail'])}" if f["detail"] else "")),
        ("Total time", _u(fmt_s(f["elapsed_s"]))),
        (
            "Engine",
            _u(f["engine"] or "none")
            + (f" → <code>{_e(f['output'])}</code>" if f["output"] and f["status"] == "succeeded" else ""),
        ),
        ("Model", _e(f["label"])),
        ("Backend", _e(_backend_text(_safe(_backend_info)))),
        ("Options", _e(_options_text(build))),
    ]
    resources = _safe(lambda: build.resources.report() if build.resources is not None else None)
    if resources:
        rows.append(("Resources", _u(resources)))
    link = getattr(build, "history", None)
    if link is not None:
        like = _safe(lambda: str(link.like_text))
        same = "model, options, backend" + (f", {like}" if like else "")
        rows.append(("ETA and Δ from", _e(f"earlier builds with the same {same}")))
    cancel = getattr(build, "cancel_info", None)
    if cancel:
        rows.append(
            (
                "Stop",
                _u(f"requested at {fmt_s(cancel.get('requested_at_s'))} during {cancel.get('phase') or 'the build'}"),
            )
        )
    return '<table class="trt-header">' + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _backend_info() -> dict[str, str]:
    from .._backend import backend_info

    return backend_info()


def _backend_text(info: dict[str, str] | None) -> str:
    """E.g. "rtx (tensorrt_rtx_bindings 1.7.1.116)"; a replayed recording may come where no backend is installed."""
    return f"{info['backend']} ({info['module']} {info['version']})" if info else "unavailable on this machine"


MAX_OPTION_TEXT = 200  # characters of one option's value (a recording's options are outside text)


def _options_text(build: Build) -> str:
    """The build's options that matter to a reader; a replay's are the recorded build's, not the replay's own."""
    recorded = getattr(build, "recorded_options", None)
    options = build.options

    def value(key: str) -> object:
        return recorded.get(key) if isinstance(recorded, dict) else getattr(options, key, None)

    values = {
        k: value(k)
        for k in (
            "optimization_level",
            "fp16",
            "strongly_typed",
            "workspace",
            "profiles",
            "timing_cache",
            "budget",
            "isolation",
            "verbose",
        )
    }
    shown = {k: v for k, v in values.items() if v not in (None, {}, False) or k == "strongly_typed"}
    return ", ".join(f"{k}={_shortened(json.dumps(v, default=str))}" for k, v in shown.items())


def _shortened(text: str) -> str:
    return text if len(text) <= MAX_OPTION_TEXT else text[:MAX_OPTION_TEXT] + "…"


def _timeline_svg(build: Build) -> str:
    from .timeline import to_svg

    return _safe(lambda: to_svg(build)) or "<p>(no timeline could be drawn)</p>"


def _problems_section(build: Build, f: Facts) -> str:
    from .._expected import annotate, shown_logs

    # the parser's raw errors of a failed parse: the error above says what they mean (verbose shows them)
    problems = shown_logs(build.problems, build.model.rows(), verbose=build.options.verbose)
    if not problems:
        return "<h2>TensorRT warnings and errors</h2><p>None.</p>"

    kind = (_safe(_backend_info) or {}).get("backend", "")
    problems = annotate(problems, cancelled=getattr(build, "cancel_info", None) is not None, backend=kind)
    rows = "".join(
        f'<tr><td class="num">{_u(fmt_s(p.get("t")))}</td><td>{_e(p.get("severity", ""))}</td>'
        f"<td>{_e(p.get('message', ''))}"
        + (f"<br><em>expected: {_e(p['expected'])}</em>" if p.get("expected") else "")
        + "</td></tr>"
        for p in problems
    )
    return (
        f'<h2>TensorRT warnings and errors ({len(problems)})</h2><table class="grid trt-problems">'
        f"<tr><th>at</th><th>severity</th><th>message</th></tr>{rows}</table>"
    )


def _history_section(build: Build, max_rows: int = 150) -> str:
    """This build against the past build its ETA was based on (nothing when history is off or has no match)."""
    link = getattr(build, "history", None)
    ready = getattr(link, "ready", None)
    if isinstance(ready, threading.Event):
        ready.wait(HISTORY_WAIT_S)  # the look-up runs beside the build: a short build may end before it does
    match = getattr(link, "match", None)
    if link is None or not isinstance(match, dict) or not match.get("rows"):
        return ""
    try:
        from ..history import compare

        rows = [r for r in compare(match, build) if r["depth"] <= 2]
        based_on = link.based_on
    except Exception:
        return ""
    body = []
    for r in rows[:max_rows]:
        delta = r["delta"]
        pct = f" ({100 * delta / r['a_s']:+.0f} %)" if delta is not None and r["a_s"] else ""
        sign = "+" if delta is not None and delta >= 0 else "−"
        body.append(
            f'<tr><td style="padding-left:{max(r["depth"], 0) * 1.2 + 0.8:.1f}em">{_e(r["name"])}</td>'
            f'<td class="num">{_u(fmt_s(r["a_s"]) or "—")}</td><td class="num">{_u(fmt_s(r["b_s"]) or "—")}'
            f'</td><td class="num">{_u(sign + fmt_s(abs(delta)) + pct) if delta is not None else "—"}</td></tr>'
        )
    more = f"<p>… {len(rows) - max_rows} more rows not shown</p>" if len(rows) > max_rows else ""
    return (
        f"<h2>Compared with the {_e(based_on or 'previous matching build')}</h2>"
        '<table class="grid trt-history"><tr><th>phase</th><th>then</th><th>now</th><th>change</th></tr>'
        + "".join(body)
        + "</table>"
        + more
    )


def _engine_section(build: Build) -> str:
    """The engine report (layers, precisions, tactics, memory) of a succeeded build."""
    if build.status != "succeeded":
        return ""
    from ..engine import engine_html

    return str(_safe(lambda: engine_html(build.engine_report, build.engine_report_reason)) or "")


def _safe(fn: Callable[[], T]) -> T | None:
    """``fn()``, or None when it raises: an optional part of a report never breaks the report."""
    try:
        return fn()
    except Exception:
        return None
