"""Static renderings of a build for readers without the widget's JavaScript (GitHub, nbviewer, nbconvert, docs
sites, VS Code without widgets): text, Markdown and HTML phase trees, and a standalone HTML report file.

Everything here reads a finished (or running) Build / BuildWidget and returns text: no script, no network, every
untrusted string (phase names, errors, log lines, labels) escaped. Repeated phases are merged by name path, so the
size grows with the distinct phase structure, not with the number of phase instances.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypedDict, runtime_checkable

from .._format import escape_controls, escape_lines, fmt_bytes, fmt_s, keep_units

if TYPE_CHECKING:
    from .._build import Build
    from .._phases import PhaseRow
    from .._status import BuildStatus
    from ..engine import EngineReport

__all__ = ["PhaseNode", "mimebundle", "phase_tree", "to_html_fragment", "to_markdown", "to_text"]

STATUS_WORDS = {
    "succeeded": "Succeeded",
    "failed": "Failed",
    "cancelled": "Cancelled",
    "running": "Running",
    "cancelling": "Cancelling",
    "idle": "Not started",
}
# White text on these backgrounds has a contrast of 5:1 or more, on light and dark pages alike.
BADGE_BG = {
    "succeeded": "#1a7f37",
    "failed": "#b42318",
    "cancelled": "#8a5a00",
    "running": "#0b5cad",
    "cancelling": "#8a5a00",
    "idle": "#5c5c5c",
}
PHASE_WORDS = {"finished-early": "finished early", "cancelled": "cancelled", "failed": "failed", "running": "running"}
INLINE_MAX_NODES = 400  # rows of the tree in a notebook output
REPORT_MAX_NODES = 5000  # rows of the tree in a report file
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_MD_LEADING = re.compile(r"^(\s*(?:\d+)?)([-+#.)])")  # would start a list or heading: "- x", "1. x", "# x"


# -- the merged phase tree ---------------------------------------------------------------------------------
@dataclass
class PhaseNode:
    """All instances of one phase name path (e.g. every "Timing tactics" under "Computing profile costs")."""

    name: str
    depth: int
    count: int = 0
    duration_s: float = 0.0  # summed over the instances; a running one counts up to now
    step: int = 0
    num_steps: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    children: dict[str, PhaseNode] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.name if self.count == 1 else f"{self.name} ×{self.count}"

    @property
    def status(self) -> str:
        """ "running" if any instance runs, else the one status all share, else e.g. "3 done, 1 cancelled"."""
        if self.statuses.get("running"):
            return "running"
        if len(self.statuses) == 1:
            return next(iter(self.statuses))
        return ", ".join(f"{n} {PHASE_WORDS.get(s, s)}" for s, n in sorted(self.statuses.items()))

    def describe(self) -> str:
        """The words after the duration: unfinished steps and any status but done."""
        parts = []
        if self.num_steps > 1 and self.step < self.num_steps:
            parts.append(f"steps {self.step}/{self.num_steps}")
        if self.status != "done":
            parts.append(PHASE_WORDS.get(self.status, self.status))
        return " · ".join(parts)


def phase_tree(rows: Sequence[PhaseRow], now: float) -> list[PhaseNode]:
    """Merge timings rows by name path into PhaseNodes (top level first, children in first-start order)."""
    by_id = {r["id"]: r for r in rows if r}
    node_of: dict[int | None, PhaseNode] = {}
    roots: dict[str, PhaseNode] = {}
    for row in sorted(by_id.values(), key=lambda r: (r["start_s"], r["id"])):
        parent = node_of.get(row.get("parent"))
        siblings = parent.children if parent is not None else roots
        name = str(row["name"])
        node = siblings.get(name)
        if node is None:
            node = siblings[name] = PhaseNode(name, parent.depth + 1 if parent is not None else 0)
        end_s = row["end_s"]
        status = "running" if end_s is None else str(row["status"])
        steps = int(row.get("num_steps") or 0)
        if status == "finished-early":  # TensorRT ended it before its announced last step (normal): done
            status = "done"
        node.count += 1
        node.duration_s += max((now if end_s is None else end_s) - row["start_s"], 0.0)
        node.step += steps if status == "done" else int(row.get("step") or 0)
        node.num_steps += steps
        node.statuses[status] = node.statuses.get(status, 0) + 1
        node_of[row["id"]] = node
    return list(roots.values())


def _walk(nodes: Iterable[PhaseNode]) -> Iterator[PhaseNode]:
    """Depth-first, parents before children."""
    for node in nodes:
        yield node
        yield from _walk(node.children.values())


# -- what every rendering shows ------------------------------------------------------------------------------
@runtime_checkable
class Viewed(Protocol):
    """A view of a build (``BuildWidget``)."""

    @property
    def build(self) -> Build: ...


if TYPE_CHECKING:
    Source: TypeAlias = Build | Viewed  # what the renderings take


class Facts(TypedDict):
    """A build's state read once (and its merged tree built once), shared by the renderings of one bundle."""

    status: BuildStatus
    status_word: str
    elapsed_s: float
    engine: str | None
    final: bool
    label: str
    detail: str
    problems: Sequence[Mapping[str, object]]
    rows: list[PhaseRow]
    error: str
    nodes: list[PhaseNode]
    output: str | None
    engine_report: EngineReport | None


def build_of(source: Source) -> Build:
    """The Build itself, or a view's."""
    return source.build if isinstance(source, Viewed) else source


def _facts(source: Source | Facts) -> Facts:
    """Status, time, engine size, label, detail, error and phase tree of a Build / BuildWidget, as plain values."""
    if isinstance(source, dict):
        return source
    build = build_of(source)
    status = build.status
    error = build.error
    # the size, without reading an engine that output= holds
    engine_size = build.engine_size
    recorded = getattr(getattr(build, "source", None), "kind", None) == "recording"  # a replay names the size only
    size = None if not engine_size else f"{fmt_bytes(engine_size)}{' (recorded)' if recorded else ''}"
    elapsed = float(build.elapsed_s or 0.0)
    rows = build.model.rows()  # cached row dicts, read only here
    return {
        "status": status,
        "status_word": STATUS_WORDS.get(status, status),
        "elapsed_s": elapsed,
        "engine": size,
        "final": status in ("succeeded", "failed", "cancelled"),
        "label": str(build.source.label),
        "detail": str(build.status_detail or ""),
        "problems": list(build.problems),
        "rows": rows,
        "error": str(error) if error is not None and status == "failed" else "",
        "nodes": phase_tree(rows, elapsed),
        "output": build.options.output,
        "engine_report": build.engine_report if status == "succeeded" else None,
    }


def _headline(f: Facts) -> tuple[str, str]:
    """("Succeeded", "in 1.23 s, engine 97.1 MiB") (plain text, unescaped)."""
    rest = f"{'in' if f['final'] else 'at'} {fmt_s(f['elapsed_s'])}"
    if f["engine"]:
        rest += f", engine {f['engine']}"
    return f["status_word"], rest


def _clean(text: object) -> str:
    """Outside text with the project's one escape per line (controls, bidi, lone surrogates: they break terminals,
    HTML and the kernel's UTF-8 message alike), its line breaks kept."""
    return escape_lines(str(text))


def _e(text: object) -> str:
    """HTML-escape untrusted text for element content and quoted attribute values."""
    return html.escape(_clean(text), quote=True)


def _snapshot_note(f: Facts) -> str:
    return (
        ""
        if f["final"]
        else "A snapshot taken while the build ran. It is replaced by the final result when the notebook waits for "
        "the build (await w.wait_async(), or w.wait()); displaying the widget again after the end shows it too."
    )


# -- text and Markdown ---------------------------------------------------------------------------------------
def to_text(source: Source | Facts, title: str | None = None, max_nodes: int = INLINE_MAX_NODES) -> str:
    """An indented plain-text tree with durations under a one-line headline (the ``text/plain`` output)."""
    f = _facts(source)
    head = f"{escape_controls(title)}: " if title else ""  # a name's newline as \x0a: one row, no forged one
    lines = [_clean(f"{head}{' '.join(_headline(f))}")]
    if f["detail"]:
        lines.append(f"  {escape_controls(f['detail'])}")  # one line: its newline as \x0a, no forged row
    nodes = f["nodes"]
    shown = [(node, escape_controls(node.label)) for node in list(_walk(nodes))[:max_nodes]]
    width = min(max((2 * n.depth + len(label) for n, label in shown), default=0), 72)
    for node, label in shown:
        name = ("  " * node.depth + label)[:72]
        extra = node.describe()
        lines.append(_clean(f"  {name:<{width}}  {fmt_s(node.duration_s):>9}" + (f"  {extra}" if extra else "")))
    lines += _more(nodes, max_nodes, "  ")
    if f["error"]:
        lines += ["", *error_block(f["error"])]
    note = _snapshot_note(f)
    return "\n".join(lines + ([f"({note})"] if note else []))


ERROR_MARK = "│ "  # starts each line of an error block: rows start with spaces, so no line of it passes for one


def error_block(error: str) -> list[str]:
    """A build's error (a traceback, TensorRT's lines: outside text) as lines each marked with ``ERROR_MARK``: kept
    multi-line, but no line of it can pass for a phase row, the headline or the snapshot note; controls escaped."""
    text = error.replace("\r\n", "\n").rstrip()
    return [ERROR_MARK + escape_controls(line).rstrip() for line in text.split("\n")]


def _more(nodes: list[PhaseNode], max_nodes: int, indent: str) -> list[str]:
    total = sum(1 for _ in _walk(nodes))
    return [f"{indent}… {total - max_nodes} more phase rows not shown"] if total > max_nodes else []


def _md(text: object) -> str:
    """Markdown-escape untrusted text: punctuation backslashed, HTML specials as entities."""
    text = _clean(text).replace("\n", " ").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_LEADING.sub(lambda m: m.group(1) + "\\" + m.group(2), _MD_SPECIAL.sub(r"\\\1", text))


def to_markdown(source: Source | Facts, title: str | None = None, max_nodes: int = INLINE_MAX_NODES) -> str:
    """A nested Markdown list with durations under a bold headline (the ``text/markdown`` output)."""
    f = _facts(source)
    head = f"{_md(title)}: " if title else ""
    word, rest = _headline(f)
    lines = [f"{head}**{_md(word)}** {_md(rest)}", ""]
    if f["detail"]:
        lines += [f"> {_md(f['detail'])}", ""]
    nodes = f["nodes"]
    for node in list(_walk(nodes))[:max_nodes]:
        extra = node.describe()
        lines.append(
            f"{'  ' * node.depth}- {_md(node.label)} — {_md(fmt_s(node.duration_s))}"
            + (f" ({_md(extra)})" if extra else "")
        )
    lines += _more(nodes, max_nodes, "")
    if f["error"]:
        lines += ["", f"**Error:** {_md(f['error'])}"]
    note = _snapshot_note(f)
    return "\n".join(lines + (["", f"*{_md(note)}*"] if note else []))


# -- HTML --------------------------------------------------------------------------------------------------
_BOX = (
    "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.5;"
    "color-scheme:light dark;max-width:64em"
)
_NEST = "margin-left:0.45em;padding-left:0.8em;border-left:1px solid rgba(128,128,128,0.45)"
_NUM = "font-variant-numeric:tabular-nums;white-space:nowrap"
_ERROR = (
    "white-space:pre-wrap;overflow:auto;max-height:16em;margin:0.4em 0;padding:0.5em 0.7em;border-radius:4px;"
    "background:#fdecea;color:#5f2120;font-size:12px"
)


def _badge(status: str, word: str) -> str:
    bg = BADGE_BG.get(status, "#5c5c5c")
    return (
        f'<span class="trt-status" style="background:{bg};color:#ffffff;border-radius:3px;padding:0 0.45em;'
        f'font-weight:600">{_e(word)}</span>'
    )


def tree_html(nodes: list[PhaseNode], total_s: float, max_nodes: int = INLINE_MAX_NODES) -> str:
    """Nested ``<details>`` (collapsible without script): top levels, running and big (≥ 5 %) phases open."""
    budget = [max_nodes]
    out: list[str] = []

    def row(node: PhaseNode) -> str:
        extra = node.describe()
        return (
            f'<span class="trt-name">{_e(node.label)}</span> '
            f'<span class="trt-time" style="{_NUM}">{_e(keep_units(fmt_s(node.duration_s)))}</span>'
            + (f' <span class="trt-extra" style="font-style:italic">({_e(extra)})</span>' if extra else "")
        )

    def emit(items: list[PhaseNode]) -> None:
        for node in items:
            if budget[0] <= 0:
                return
            budget[0] -= 1
            kids = list(node.children.values())
            if not kids:
                out.append(f'<div class="trt-phase" style="padding-left:1.05em">{row(node)}</div>')
                continue
            big = total_s > 0 and node.duration_s >= 0.05 * total_s
            is_open = " open" if node.depth == 0 or big or node.status == "running" else ""
            out.append(
                f'<details class="trt-phase"{is_open}><summary style="cursor:pointer">{row(node)}</summary>'
                f'<div style="{_NEST}">'
            )
            emit(kids)
            out.append("</div></details>")

    emit(nodes)
    total = sum(1 for _ in _walk(nodes))
    if total > max_nodes:
        out.append(f"<div><em>… {total - max_nodes} more phase rows not shown</em></div>")
    if not nodes:
        out.append("<div><em>no phases recorded</em></div>")
    return "".join(out)


def to_html_fragment(source: Source | Facts, title: str | None = None, max_nodes: int = INLINE_MAX_NODES) -> str:
    """A self-contained HTML fragment (inline styles, no script): headline, error, warnings and the phase tree.

    This is the ``text/html`` output a notebook saves, shown wherever the widget's JavaScript is missing.
    """
    f = _facts(source)
    rest = _headline(f)[1]
    out = [
        f'<div class="trt-widget-static" style="{_BOX}">',
        f'<div>{_badge(f["status"], f["status_word"])} <span style="{_NUM}">{_e(keep_units(rest))}</span>'
        + (f' — <span class="trt-label">{_e(title or f["label"])}</span>' if title or f["label"] else "")
        + "</div>",
    ]
    if f["detail"]:
        out.append(f'<div class="trt-detail">{_e(f["detail"])}</div>')
    if f["error"]:
        out.append(f'<pre class="trt-error" style="{_ERROR}">{_e(f["error"].rstrip())}</pre>')
    if f["problems"]:
        items = "".join(f"<li>{_e(p.get('severity', ''))}: {_e(p.get('message', ''))}</li>" for p in f["problems"][:50])
        out.append(
            f'<details class="trt-problems"><summary style="cursor:pointer">{len(f["problems"])} TensorRT '
            f'warning/error line(s)</summary><ul style="margin:0.2em 0;padding-left:1.4em">{items}</ul>'
            "</details>"
        )
    out.append(
        f'<div class="trt-tree" style="margin-top:0.3em">{tree_html(f["nodes"], f["elapsed_s"], max_nodes)}</div>'
    )
    note = _snapshot_note(f)
    if note:
        out.append(f'<div style="font-style:italic;margin-top:0.3em">{_e(note)}</div>')
    if f["engine_report"] is not None:
        from ..engine import engine_html

        out.append(
            '<details class="trt-engine" style="margin-top:0.3em"><summary style="cursor:pointer">Engine: '
            f"{len(f['engine_report'].layers):,} layers</summary>{engine_html(f['engine_report'], max_rows=300)}"
            "</details>"
        )
    out.append("</div>")
    return "".join(out)


def mimebundle(source: Source, title: str | None = None) -> dict[str, str]:
    """``text/plain``, ``text/markdown`` and ``text/html`` renderings of the build's current state."""
    f = _facts(source)
    return {
        "text/plain": to_text(f, title),
        "text/markdown": to_markdown(f, title),
        "text/html": to_html_fragment(f, title),
    }
