"""A picture of a finished build: a flame/Gantt chart of its phase instances (x = time, y = nesting depth).

``to_svg``/``save_svg`` need nothing but the standard library; ``to_figure``/``save_png`` use matplotlib.
Each takes a Build / BuildWidget (anything with ``.timings()``), a list of timings rows, or a history record.
Runs of 5 or more same-name siblings are drawn as one compact box labelled ``×count``.
"""

from __future__ import annotations

import io
import os
import re
import zlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .._files import check_output, utf8, write_output
from .._format import escape_controls
from ._inline import Viewed

if TYPE_CHECKING:
    from typing import TypeAlias

    from matplotlib.figure import Figure

GROUP_MIN = 5  # consecutive same-name siblings drawn as one box
ROW_PX = 22
AXIS_PX = 26
PAD_PX = 8
CHAR_PX = 6.6  # average glyph width of the 11 px label font
_NOT_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


_DONE = {"done", "finished-early"}  # phase statuses of a phase TensorRT ended normally


@dataclass
class Box:
    """One drawn box: a phase instance, or a run of ``count`` same-name siblings."""

    name: str
    depth: int
    start_s: float
    end_s: float
    count: int
    busy_s: float  # summed durations (== end - start for a single instance)
    step: int
    num_steps: int
    status: str
    hidden: int = 0  # nested instances inside a grouped run (not drawn)

    @property
    def label(self) -> str:
        return self.name if self.count == 1 else f"{self.name} ×{self.count}"

    def title(self) -> str:
        # a phase with no steps has no count to show: "steps 0/0" would only read as nothing done
        steps = f"steps {self.step}/{self.num_steps} · " if self.num_steps else ""
        # done before its announced last step (TensorRT does this): "5 steps", as "5/6" reads as unfinished
        if self.num_steps and self.step < self.num_steps and set(self.status.split(", ")) <= _DONE:
            steps = f"{self.step} step{'' if self.step == 1 else 's'} · "
        status = self.status.replace("finished-early", "done")  # as the widget says it
        if status == "done, done":
            status = "done"
        if self.count == 1:
            return (
                f"{self.name}\n{self.busy_s:.3f} s (from {self.start_s:.3f} s to {self.end_s:.3f} s)\n{steps}{status}"
            )
        text = (
            f"{self.name} ×{self.count}\n{self.busy_s:.3f} s in {self.count} instances "
            f"(from {self.start_s:.3f} s to {self.end_s:.3f} s)\n{steps}{status}"
        )
        return text + (f"\n{self.hidden} nested phase instances not drawn" if self.hidden else "")


# -- input -----------------------------------------------------------------------------------------------
@runtime_checkable
class Timed(Protocol):
    """Anything with ``timings()`` rows: a Build, a BuildWidget."""

    def timings(self) -> Sequence[Mapping[str, object]]: ...


# a Build / BuildWidget, its timings rows, or a history record ({"rows": rows with paths, "total_s": ...})
TimelineSource: TypeAlias = "Timed | Sequence[Mapping[str, object]] | Mapping[str, object]"


@dataclass
class _Row:
    """A timings row as the layout reads it."""

    id: Hashable
    name: str
    start_s: float
    end_s: float | None
    parent: Hashable
    step: int
    num_steps: int
    status: str


def _number(value: object) -> float:
    if isinstance(value, (int, float, str)):
        return float(value)
    raise TypeError(f"a timings row holds {value!r} where a number belongs (rows come from Build.timings())")


def _key(value: object) -> Hashable:
    if isinstance(value, Hashable):
        return value
    raise TypeError(f"a timings row's id is {value!r} (rows come from Build.timings())")


def _typed(row: Mapping[str, object]) -> _Row:
    end = row.get("end_s")
    return _Row(
        id=_key(row["id"]),
        name=str(row["name"]),
        start_s=_number(row["start_s"]),
        end_s=None if end is None else _number(end),
        parent=_key(row.get("parent")),
        step=int(_number(row.get("step") or 0)),
        num_steps=int(_number(row.get("num_steps") or 0)),
        status=str(row.get("status") or ("done" if end is not None else "running")),
    )


def timings_rows(source: TimelineSource) -> list[dict[str, object]]:
    """Rows from a Build/BuildWidget, a list of rows, or a history record (rows with paths)."""
    return _read(source)[0]


def _read(source: TimelineSource) -> tuple[list[dict[str, object]], float]:
    """(rows, whole-build duration when known — a finished build's time after its last phase counts too)."""
    if isinstance(source, Timed) and callable(source.timings):
        build = source.build if isinstance(source, Viewed) else source
        total = _number(getattr(build, "elapsed_s", 0.0)) if _ended(build) else 0.0
        return timings_rows(source.timings()), total
    if isinstance(source, Mapping) and "rows" in source:
        stored = source["rows"]
        if not isinstance(stored, (list, tuple)):
            raise TypeError(f"a history record's rows must be a list, got {type(stored).__name__}")
        return _rows_from_paths(stored), _number(source.get("total_s") or 0.0)
    if not isinstance(source, (list, tuple)):
        raise TypeError(f"expected a Build, BuildWidget, timings rows or a history record, got {type(source).__name__}")
    rows = [dict(r) for r in source]
    for row in rows:
        missing = [k for k in ("id", "name", "start_s") if k not in row]
        if missing:
            raise ValueError(f"a timings row lacks {missing}: {row!r} (rows come from Build.timings())")
    return rows, 0.0


def _rows_from_paths(stored: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    ids: dict[tuple[tuple[str, int], ...], int] = {}
    rows = []
    for i, row in enumerate(stored):
        steps = row["path"]
        if not isinstance(steps, (list, tuple)):
            raise TypeError(f"a history row's path must be a list, got {type(steps).__name__}")
        path = tuple((str(n), int(k)) for n, k in steps)
        ids[path] = i
        rows.append({**row, "id": i, "parent": ids.get(path[:-1]), "depth": len(path) - 1})
    return rows


def layout(source: TimelineSource) -> tuple[list[Box], float]:
    """The boxes to draw and the time axis length (s)."""
    raw, total = _read(source)
    if not raw:
        return [], total
    rows = [_typed(r) for r in raw]
    t_end = max(max(max(r.end_s or 0.0, r.start_s) for r in rows), total)
    ids = {r.id for r in rows}
    children: dict[Hashable, list[_Row]] = {}
    for row in sorted(rows, key=lambda r: (r.start_s, r.id)):
        children.setdefault(row.parent if row.parent in ids else None, []).append(row)
    boxes: list[Box] = []
    stack: list[tuple[Hashable, int]] = [(None, 0)]
    while stack:
        parent, depth = stack.pop()
        siblings = children.get(parent, [])
        i = 0
        while i < len(siblings):
            j = i
            while j < len(siblings) and siblings[j].name == siblings[i].name:
                j += 1
            run = siblings[i:j] if j - i >= GROUP_MIN else siblings[i : i + 1]
            boxes.append(_box(run, depth, t_end, _count_nested(run, children) if len(run) > 1 else 0))
            if len(run) == 1:
                stack.append((run[0].id, depth + 1))
            i += len(run)
    boxes.sort(key=lambda b: (b.depth, b.start_s))
    return boxes, t_end


def _box(run: list[_Row], depth: int, t_end: float, hidden: int) -> Box:
    ends = [r.end_s if r.end_s is not None else t_end for r in run]
    statuses = sorted({r.status for r in run})
    return Box(
        name=run[0].name,
        depth=depth,
        start_s=min(r.start_s for r in run),
        end_s=max(ends),
        count=len(run),
        busy_s=sum(e - r.start_s for r, e in zip(run, ends, strict=True)),
        step=sum(r.step for r in run),
        num_steps=sum(r.num_steps for r in run),
        status=", ".join(statuses),
        hidden=hidden,
    )


def _count_nested(run: list[_Row], children: dict[Hashable, list[_Row]]) -> int:
    count, todo = 0, [r.id for r in run]
    while todo:
        kids = children.get(todo.pop(), [])
        count += len(kids)
        todo.extend(k.id for k in kids)
    return count


# -- SVG -------------------------------------------------------------------------------------------------
def _x(text: object) -> str:
    """XML-escape text for element content and attribute values (and drop characters XML cannot hold)."""
    clean = _NOT_XML.sub("\ufffd", str(text))
    return (
        clean.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


_ENDED_COLORS = (("failed", "#e06c6c"), ("cancelled", "#d9a441"))  # red only for a failure; a cancel is amber


def _color(box: Box) -> str:
    for status, color in _ENDED_COLORS:
        if status in box.status:
            return color
    hue = zlib.crc32(box.name.encode(errors="surrogatepass")) % 360
    return f"hsl({hue},55%,{68 if box.count > 1 else 62}%)"


def _ticks(t_end: float) -> list[float]:
    if t_end <= 0:
        return [0.0]
    raw = t_end / 8
    power = 10 ** int(f"{raw:e}".split("e")[1])
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(int(t_end / step) + 1)]


def to_svg(source: TimelineSource, width: int = 900) -> str:
    """A standalone SVG: one ``<rect class="phase">`` per drawn box, each with a ``<title>`` tooltip."""
    boxes, t_end = layout(source)
    depth = max((b.depth for b in boxes), default=0) + 1
    height = PAD_PX + depth * ROW_PX + AXIS_PX
    scale = (width - 2 * PAD_PX) / t_end if t_end > 0 else 0.0
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'
    ]
    if not boxes:
        out.append(f'<text x="{PAD_PX}" y="{PAD_PX + 14}" fill="#666">no phases recorded</text>')
    for box in boxes:
        x = PAD_PX + box.start_s * scale
        w = max((box.end_s - box.start_s) * scale, 1.0)
        y = PAD_PX + box.depth * ROW_PX
        css = "phase group" if box.count > 1 else "phase"
        out.append(
            f'<rect class="{css}" x="{x:.2f}" y="{y}" width="{w:.2f}" height="{ROW_PX - 2}" rx="2" '
            f'fill="{_color(box)}" stroke="#333" stroke-width="0.4"><title>{_x(box.title())}</title></rect>'
        )
        fit = int((w - 6) / CHAR_PX)
        if fit >= 3:
            label = box.label if len(box.label) <= fit else box.label[: fit - 1] + "…"
            out.append(f'<text x="{x + 3:.2f}" y="{y + 14}" fill="#111" pointer-events="none">{_x(label)}</text>')
    axis_y = PAD_PX + depth * ROW_PX + 4
    out.append(f'<line x1="{PAD_PX}" y1="{axis_y}" x2="{width - PAD_PX}" y2="{axis_y}" stroke="#888"/>')
    for t in _ticks(t_end):
        x = PAD_PX + t * scale
        out.append(
            f'<line x1="{x:.2f}" y1="{axis_y}" x2="{x:.2f}" y2="{axis_y + 4}" stroke="#888"/>'
            f'<text x="{x:.2f}" y="{axis_y + 16}" fill="#555" text-anchor="middle">{t:g} s</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def save_svg(source: TimelineSource, path: str | os.PathLike[str], width: int = 900) -> str:
    """Write ``to_svg(source)`` to ``path`` atomically (never onto the model or the recording); returns the path."""
    build = source.build if isinstance(source, Viewed) else source
    check_output(path, "path", build)
    return str(write_output(path, utf8(to_svg(source, width)), "path", build))


# -- matplotlib ------------------------------------------------------------------------------------------
def to_figure(source: TimelineSource, width_in: float = 10.0) -> Figure:
    """The same chart as a matplotlib ``Figure`` (not attached to pyplot, so nothing pops up)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(
            "trt_widget.report.timeline.to_figure/save_png need matplotlib: pip install matplotlib "
            "(to_svg/save_svg need nothing extra)"
        ) from exc
    boxes, t_end = layout(source)
    depth = max((b.depth for b in boxes), default=0) + 1
    fig = Figure(figsize=(width_in, 0.9 + 0.35 * depth))
    ax = fig.add_subplot()
    for box in boxes:
        color = next((c for s, c in _ENDED_COLORS if s in box.status), None) or _rgb(box.name)
        ax.barh(
            box.depth,
            max(box.end_s - box.start_s, t_end / 2000 if t_end else 0.001),
            left=box.start_s,
            height=0.85,
            color=color,
            edgecolor="#333",
            linewidth=0.4,
        )
        width = box.end_s - box.start_s
        if t_end and width / t_end > 0.08:
            chars = int(width / t_end * width_in * 12)
            label = escape_controls(box.label)  # FreeType refuses a lone surrogate; bidi and controls shown
            label = label if len(label) <= chars else label[: max(chars - 1, 1)] + "…"
            x = box.start_s + t_end * 0.003  # parse_math off: "$x$" is a name as written, "a$\\frac{$b" no error
            ax.text(x, box.depth, label, va="center", fontsize=7, clip_on=True, parse_math=False)
    ax.set_ylim(depth - 0.5, -0.5)
    ax.set_xlim(0, t_end or 1)
    ax.set_yticks(range(depth))
    ax.set_ylabel("depth")
    ax.set_xlabel("time (s)")
    fig.tight_layout()
    return fig


def _rgb(name: str) -> tuple[float, float, float]:
    import colorsys

    return colorsys.hls_to_rgb((zlib.crc32(name.encode(errors="surrogatepass")) % 360) / 360, 0.62, 0.55)


def save_png(source: TimelineSource, path: str | os.PathLike[str], dpi: int = 120) -> str:
    """Write the matplotlib chart to ``path`` as PNG, atomically (never onto the model); returns the path."""
    build = source.build if isinstance(source, Viewed) else source
    check_output(path, "path", build)
    fig = to_figure(source)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return str(write_output(path, buffer.getvalue(), "path", build))


def _ended(build: object) -> bool:
    """Whether ``build`` (a Build, or anything with a ``done()`` method or ``done`` flag) has ended."""
    done = getattr(build, "done", False)
    return bool(done() if callable(done) else done)
