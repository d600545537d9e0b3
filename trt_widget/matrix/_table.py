"""What a build matrix reports: labels for models and variants, the results table and the phase comparison.

Pure functions over finished (or running) :class:`~trt_widget.Build` objects, shared by ``BuildMatrix``, its
widget and the ``trt-widget matrix`` command, so every front end shows the same numbers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, TypeVar

if TYPE_CHECKING:
    from pandas import DataFrame

    from .._build import Build
    from .._phases import PhaseRow
    from .._status import BuildStatus
    from ..engine._layer import JSON
    from ._matrix import Cell

from .._json import json_int
from ..runners import START_PHASE

TOP_PHASES = 3
Row = TypeVar("Row", bound=Mapping[str, object])


class ResultRow(TypedDict):
    """One row of ``BuildMatrix.results()``."""

    build: int
    model: str
    variant: str
    status: BuildStatus
    build_s: float | None
    engine_bytes: int | None
    top_phases: dict[str, float]
    error: str | None


class ComparedBuild(TypedDict):
    """One build in :func:`comparison`."""

    id: int
    model: str
    group: str  # one string per model (its label can differ: the same file given twice); baselines group by it
    variant: str
    status: BuildStatus
    build_s: float | None  # None: never started (stopped while queued), no time to compare
    # the build's whole time, start-up included: the number its row and its status line show ("cancelled after")
    elapsed_s: float | None
    start_up_s: float  # the builder process's start-up this build waited for, left out of build_s
    # its builder process's first build: one-time costs inside its phases (fresh memory), unlike a warm build's
    cold_builder: bool
    engine_size: int | None
    phases: dict[str, float]
    engine: dict[str, JSON] | None
    # the other builds of the same model with the same options: what they differ by is run-to-run variation
    twins: list[int]
    # why a failed build failed or a cancelled one was stopped, its first line ("" for the others)
    reason: str


class Comparison(TypedDict):
    builds: list[ComparedBuild]


RESULT_COLUMNS = ["build", "model", "variant", "status", "build_s", "engine_bytes", "top_phases", "error"]


def model_labels(models: Sequence[object]) -> list[str]:
    """Short, unique labels: a file's name, an ONNX graph's name, a function's name, else ``model N``."""
    labels: list[str] = []
    for index, model in enumerate(models):
        if isinstance(model, (str, os.PathLike)):
            label = Path(model).name
        elif hasattr(model, "SerializeToString") and hasattr(model, "graph"):
            label = model.graph.name or f"model {index}"
        elif callable(model):
            label = getattr(model, "__qualname__", "") or f"model {index}"
        else:
            label = f"model {index}"
        labels.append(label)
    return _unique(labels)


def variant_label(options: Mapping[str, object]) -> str:
    """``optimization_level=3, workspace=1GiB``; ``default`` for no options."""
    if not options:
        return "default"
    return ", ".join(f"{name}={value}" for name, value in options.items())


SHORT_NAMES = {"optimization_level": "opt", "workspace": "ws", "precision": "prec"}  # where columns are few


def short_variants(options: Sequence[Mapping[str, object]]) -> list[str]:
    """Per variant only what tells it from the others (``opt=3``), for a narrow column where the whole label
    (``optimization_level=3``) would be cut to the same prefix in every row; options all variants share are left
    out. Variants that do not differ at all keep their whole (shortened) label."""
    names = list(dict.fromkeys(k for o in options for k in o))
    missing = object()
    differ = [k for k in names if len({repr(o.get(k, missing)) for o in options}) > 1]
    labels = []
    for o in options:
        kept = [k for k in (differ or names) if k in o]
        labels.append(", ".join(f"{SHORT_NAMES.get(k, k)}={o[k]}" for k in kept) or "default")
    return labels


def _unique(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out: list[str] = []
    for label in labels:
        count = seen.get(label, 0)
        seen[label] = count + 1
        out.append(label if count == 0 else f"{label} ({count + 1})")
    return out


def phase_totals(rows: Sequence[PhaseRow], *, self_time: bool = False) -> dict[str, float]:
    """Seconds per phase name over finished instances: inclusive time (an instance nested in a same-named one is
    not counted twice), or with ``self_time`` only the time not spent in a child phase."""
    by_id = {r["id"]: r for r in rows if r}
    children: dict[int, float] = {}
    for row in by_id.values():
        if row["parent"] is not None and row["duration_s"] is not None:
            children[row["parent"]] = children.get(row["parent"], 0.0) + row["duration_s"]
    totals: dict[str, float] = {}
    for row in by_id.values():
        if row["duration_s"] is None:
            continue
        if self_time:
            seconds = max(row["duration_s"] - children.get(row["id"], 0.0), 0.0)
        else:
            if _inside_same_name(row, by_id):
                continue
            seconds = row["duration_s"]
        totals[row["name"]] = totals.get(row["name"], 0.0) + seconds
    return totals


def _inside_same_name(row: PhaseRow, by_id: Mapping[int, PhaseRow]) -> bool:
    parent = by_id.get(row["parent"]) if row["parent"] is not None else None
    while parent is not None:
        if parent["name"] == row["name"]:
            return True
        parent = by_id.get(parent["parent"]) if parent["parent"] is not None else None
    return False


def top_phases(build: Build, count: int = TOP_PHASES) -> dict[str, float]:
    """The ``count`` phase names with the most self time (where the build's time actually went), in ms precision."""
    totals = phase_totals(build.timings(), self_time=True)
    best = sorted(totals.items(), key=lambda item: -item[1])[:count]
    return {name: round(seconds, 3) for name, seconds in best}


def elapsed(build: Build) -> float:
    """A build's elapsed seconds as every view of the matrix shows them (its row, its status line, the
    comparison's "cancelled after"): rounded once here, so that one build has one number."""
    return round(build.elapsed_s, 3)


def result_row(cell: Cell) -> ResultRow:
    """One row of ``BuildMatrix.results()``."""
    build = cell.build
    error = build.error
    return {
        "build": cell.id,
        "model": cell.model,
        "variant": cell.variant,
        "status": build.status,
        "build_s": round(build.elapsed_s, 3) if build.status != "idle" and build.started_building else None,
        "engine_bytes": build.engine_size,
        "top_phases": top_phases(build),
        "error": str(error).splitlines()[0] if error is not None and build.status == "failed" else None,
    }


RESULT_INTEGERS = ("build", "engine_bytes")
COMPARE_INTEGERS = ("build", "engine_bytes", "d_engine_bytes")
ENGINE_INTEGERS = ("build", "layers", "weights", "activations", "engine")


def as_table(rows: list[Row], columns: list[str], integers: Sequence[str] = ()) -> DataFrame | list[Row]:
    """A pandas DataFrame when pandas is installed, else the list of row dicts. The ``integers`` columns are
    pandas' nullable ``Int64``: a size stays 102624652 beside a missing one (``<NA>``), not 102624652.0 and NaN."""
    try:
        import pandas as pd
    except ImportError:
        return rows
    frame = pd.DataFrame(rows, columns=columns)
    return frame.astype({name: "Int64" for name in integers if name in frame.columns})


def comparison(cells: Sequence[Cell]) -> Comparison:
    """Per build: status, build time, engine size and inclusive seconds per phase name (for the widget, which
    computes differences against the baseline the user picks). The builder process's start-up is left out of
    both: the first build pays a cold worker's start, which says nothing about its variant. ``cold_builder`` marks
    a builder process's first build, whose phases also hold one-time costs (the first use of its memory)."""
    builds: list[ComparedBuild] = []
    same: dict[tuple[str, str], list[int]] = {}
    for cell in cells:
        same.setdefault((cell.same_model or cell.model, _options_key(cell.options)), []).append(cell.id)
    twins = {i: [j for j in ids if j != i] for ids in same.values() for i in ids}
    for cell in cells:
        started = cell.build.status != "idle" and cell.build.started_building
        phases = phase_totals(cell.build.timings()) if started else {}
        start_up = phases.pop(START_PHASE, 0.0)
        builds.append(
            {
                "id": cell.id,
                "model": cell.model,
                "group": cell.same_model or cell.model,
                "variant": cell.variant,
                "status": cell.build.status,
                "build_s": round(max(cell.build.elapsed_s - start_up, 0.0), 4) if started else None,
                "elapsed_s": elapsed(cell.build) if started else None,
                "start_up_s": round(start_up, 4),
                "cold_builder": cell.build.cold_builder,
                "engine_size": cell.build.engine_size,
                "phases": {k: round(v, 4) for k, v in phases.items()},
                "engine": _engine_brief(cell.build),
                "twins": twins[cell.id],
                "reason": _reason(cell.build),
            }
        )
    return {"builds": builds}


def _reason(build: Build) -> str:
    """The first line of why ``build`` failed (its error) or was cancelled (its status detail), else ""."""
    if build.status == "failed":
        said: object = build.error if build.error is not None else build.status_detail
    elif build.status == "cancelled":
        said = build.status_detail
    else:
        return ""
    lines = str(said or "").strip().split("\n")
    return lines[0] if lines else ""


def _engine_brief(build: Build) -> dict[str, JSON] | None:
    """The engine report's summary of a succeeded build (layers, precision mix, memory), else None."""
    report = build.engine_report if build.status == "succeeded" else None
    return report.brief() if report is not None else None


ENGINE_COLUMNS = ["build", "model", "variant", "layers", "precision_mix", "types", "weights", "activations", "engine"]


def engine_rows(cells: Sequence[Cell]) -> list[dict[str, object]]:
    """Per build: what its engine holds (layers, precision mix, main layer types, weights and activation memory,
    engine size); empty cells where a build has no engine report."""
    rows = []
    for cell in cells:
        brief = _engine_brief(cell.build) or {}
        memory = _mapping(brief.get("memory"))
        rows.append(
            {
                "build": cell.id,
                "model": cell.model,
                "variant": cell.variant,
                "layers": brief.get("layers"),
                "precision_mix": ", ".join(f"{k} {v}" for k, v in _mapping(brief.get("precision_mix")).items()),
                "types": ", ".join(f"{k} {v}" for k, v in list(_mapping(brief.get("types")).items())[:4]),
                "weights": memory.get("weights"),
                "activations": memory.get("activations"),
                "engine": memory.get("engine_size", cell.build.engine_size),
            }
        )
    return rows


def _mapping(value: JSON) -> dict[str, JSON]:
    return value if isinstance(value, dict) else {}


UNFINISHED = ("failed", "cancelled")  # builds that ended without an engine: their times compare with nothing


def compare_rows(cells: Sequence[Cell], baseline: int) -> list[dict[str, object]]:
    """Differences against build ``baseline``: build time, engine size and per phase name (seconds, + slower).
    ``build_s`` leaves out ``start_up_s``, the builder process's start-up (the results' ``build_s`` includes it)."""
    return _compare_rows(comparison(cells)["builds"], baseline)


def _compare_rows(data: list[ComparedBuild], baseline: int) -> list[dict[str, object]]:
    """:func:`compare_rows` over a :func:`comparison`'s builds already made."""
    base = next((b for b in data if b["id"] == baseline), None)
    if base is None:
        raise ValueError(f"no build with id {baseline}: ids are 0..{len(data) - 1}")
    names = sorted({name for b in data for name in b["phases"]}, key=lambda n: -base["phases"].get(n, 0.0))
    rows = []
    for b in data:
        mine, theirs = b["build_s"], base["build_s"]
        if b["status"] in UNFINISHED or base["status"] in UNFINISHED:
            mine = theirs = None  # a failed or cancelled build is no faster build: no differences
        both = mine is not None and theirs is not None  # else one never started: not compared
        row: dict[str, object] = {
            "build": b["id"],
            "model": b["model"],
            "variant": b["variant"],
            "status": b["status"],
            "compared": both,  # False: failed, cancelled or never started (its None differences are no match)
            "build_s": b["build_s"],
            "d_build_s": round(mine - theirs, 4) if mine is not None and theirs is not None else None,
            "start_up_s": b["start_up_s"],  # left out of build_s (the results' build_s includes it)
            "cold_builder": b["cold_builder"],  # may include one-time costs: a difference that says little
            "engine_bytes": b["engine_size"],
            "d_engine_bytes": (
                b["engine_size"] - base["engine_size"]
                if b["engine_size"] is not None and base["engine_size"] is not None
                else None
            ),
        }
        for name in names:
            row[f"d {name}"] = round(b["phases"].get(name, 0.0) - base["phases"].get(name, 0.0), 4) if both else None
        rows.append(row)
    return rows


def fmt_row_text(row: ResultRow) -> list[str]:
    """The plain-text cells of a results row (terminal table, text/plain)."""
    from .._format import fmt_bytes, fmt_s

    size = row["engine_bytes"]
    top = ", ".join(f"{name} {fmt_s(s)}" for name, s in row["top_phases"].items())
    return [
        str(row["build"]),
        row["model"],
        row["variant"],
        row["status"],
        fmt_s(row["build_s"]) if row["build_s"] is not None else "",
        fmt_bytes(size) if size else "",
        row["error"] or top,
    ]


GLUE = "\xa0"  # joins a number to its unit and sign in comparison_paragraphs: wrapping never parts them
EXCLUDED = (
    "Build times leave out starting the builder process (start-up), which the elapsed times include: it says "
    "nothing of a variant."
)
FIRST_BUILD = "first build in a new or idle builder process: may include one-time costs"
FIRST_WHY = (
    "its phases pay one-time costs (fresh memory, TensorRT's first use in that process) that a build right after it "
    "in the same process does not, about 0.1-0.3 s for a "
    "ResNet-50 on a CPU; a difference from a warm build says little about its variant"
)


def _glued(text: str) -> str:
    return text.replace(" ", GLUE)


def _signed_s(seconds: float) -> str:
    from .._format import fmt_s

    return _glued(("+" if seconds >= 0 else "−") + fmt_s(abs(seconds)))


def _history_brief(brief: Mapping[str, JSON] | None) -> dict[str, JSON] | None:
    """An engine report's brief (``EngineReport.brief``) in the form :func:`~trt_widget.engine.brief_delta` reads
    (a history record's): its layer count is TensorRT's total."""
    if brief is None:
        return None
    return {k: brief.get(v) for k, v in (("layers", "total_layers"), ("precision_mix", "precision_mix"))} | {
        "memory": brief.get("memory")
    }


def _mix(brief: Mapping[str, JSON] | None) -> dict[str, int]:
    mix = brief.get("precision_mix") if brief is not None else None
    if not isinstance(mix, dict):
        return {}
    return {str(k): v for k, v in mix.items() if json_int(v)}


def cold_mixed(data: Sequence[ComparedBuild]) -> bool:
    """Whether some started builds were their builder process's first and some were not (then a cold build's
    times hold one-time costs the others do not: it is no default baseline, and no twin)."""
    started = [b for b in data if b["build_s"] is not None]
    return any(b["cold_builder"] for b in started) and not all(b["cold_builder"] for b in started)


def baselines(data: Sequence[ComparedBuild], chosen: int | None = None) -> dict[str, ComparedBuild]:
    """Per model (its ``group``), the build its other builds are compared with (two models' engines are no change of one
    another): ``chosen`` for its own model; else the model's first build that succeeded, on a warm builder
    process where some were cold. A model none of whose builds succeeded has none."""
    mixed = cold_mixed(data)
    out: dict[str, ComparedBuild] = {}
    picked = next((b for b in data if b["id"] == chosen), None)
    if picked is not None:
        out[picked["group"]] = picked
    for model in dict.fromkeys(b["group"] for b in data):
        done = [b for b in data if b["group"] == model and b["status"] == "succeeded"]
        base = next((b for b in done if not (mixed and b["cold_builder"])), None) or (done[0] if done else None)
        if base is not None:
            out.setdefault(model, base)
    return out


def twin_spread(data: Sequence[ComparedBuild]) -> str:
    """What identical builds (the same model and options, warm alike) differed by: the run-to-run variation of
    this run, which a difference between variants must exceed to say anything; "" without two such builds. The
    widget's Comparison says the same (js/src/matrix/compare.js ``twinSpread``)."""
    from .._format import escape_controls, fmt_s

    mixed = cold_mixed(data)
    by_id = {b["id"]: b for b in data}

    def timed(b: ComparedBuild) -> bool:
        return b["status"] == "succeeded" and b["build_s"] is not None and not (mixed and b["cold_builder"])

    widest: tuple[float, float, list[ComparedBuild]] | None = None
    for b in data:
        if not timed(b):
            continue
        group = [b, *(t for i in b["twins"] if (t := by_id.get(i)) is not None and timed(t))]
        times = [g["build_s"] or 0.0 for g in group]
        if len(group) >= 2 and (widest is None or max(times) - min(times) > widest[0]):
            widest = (max(times) - min(times), min(times), group)
    if widest is None:
        return ""
    spread, low, group = widest
    names = ", ".join(escape_controls(g["variant"]) for g in group)
    share = f" ({round(100 * spread / low)}{GLUE}%)" if low > 0 else ""
    return (
        f"Builds of the same model with the same options ({names}) differed by up to {_glued(fmt_s(spread))}{share}: "
        "run-to-run variation here, which a difference between variants must exceed to say anything about them."
    )


def nothing_to_compare(data: Sequence[ComparedBuild]) -> str:
    """Why there is no comparison ("" where there is one): no build succeeded (failed, cancelled and never started
    builds have no times to compare, and none is a baseline). The widget says the same (``nothingToCompare``)."""
    if len(data) < 2 or any(b["status"] == "succeeded" for b in data):
        return ""
    return "Nothing to compare: no build succeeded."


def ended_after(b: ComparedBuild) -> str:
    """``cancelled after 6.62 s``: a build that ended without an engine, timed as its row and status line are
    (start-up included), so that one build has one number."""
    from .._format import fmt_s

    return f"{b['status']} after {fmt_s(b['elapsed_s'] if b['elapsed_s'] is not None else b['build_s'])}"


def comparison_paragraphs(cells: Sequence[Cell], baseline: int | None = None) -> list[str]:
    """The matrix's comparison as text paragraphs, as the widget's Comparison shows it: per build its build time
    (no start-up) and start-up, engine size, layers and precisions, each against its model's baseline (the one
    chosen, else the model's first build that succeeded, on a warm builder process where some were cold: two
    models' engines are no change of one another), and its largest phase differences; a failed or cancelled
    build is "not compared" (no differences would read as a match); a cold builder process's build is marked,
    and what identical builds differed by is said, as in the widget. Where no build succeeded, that there is
    nothing to compare. A number and its unit are joined by :data:`GLUE` (a no-break space) so that wrapping
    never parts them; names are escaped."""
    from .._format import escape_controls, fmt_bytes, fmt_s
    from ..engine import brief_delta, signed, signed_bytes

    data = comparison(cells)["builds"]
    if not data:
        return []
    nothing = nothing_to_compare(data)
    if nothing:
        return [nothing]
    mixed = cold_mixed(data)
    bases = baselines(data, baseline)
    rows = {m: {int(str(r["build"])): r for r in _compare_rows(data, b["id"])} for m, b in bases.items()}
    name = escape_controls

    def label(b: ComparedBuild) -> str:
        return f"#{b['id']} {name(b['model'])} [{name(b['variant'])}]"

    if len(bases) == 1:
        out = [f"Comparison against {label(next(iter(bases.values())))}:"]
    else:  # several models: each against a build of its own
        out = ["Comparison, each build against a build of its own model: " + "; ".join(map(label, bases.values()))]
    for b in data:
        head = label(b)
        base = bases.get(b["group"])
        if b["build_s"] is None:
            out.append(f"{head}: {b['status']}, never started (not compared)")
            continue
        if b["status"] in UNFINISHED:
            out.append(f"{head}: {_glued(ended_after(b))} (not{GLUE}compared)")
            continue
        if base is None:  # the baseline chosen for its model did not succeed
            out.append(f"{head}: build time (no{GLUE}start-up) {_glued(fmt_s(b['build_s']))} (not{GLUE}compared)")
            continue
        same = b["id"] == base["id"]
        row = rows[b["group"]][b["id"]]
        compared = not same and bool(row["compared"])
        parts = [f"build time (no{GLUE}start-up) {_glued(fmt_s(b['build_s']))}"]
        d_time = row["d_build_s"]
        if compared and isinstance(d_time, (int, float)):
            parts[-1] += f" ({_signed_s(d_time)})"
        parts.append(f"start-up {_glued(fmt_s(b['start_up_s']))}")
        if b["engine_size"]:
            parts.append(f"engine {_glued(fmt_bytes(b['engine_size']))}")
            d_size = row["d_engine_bytes"]
            if compared and isinstance(d_size, int):
                parts[-1] += f" ({_glued(signed_bytes(d_size))})" if d_size else " (same)"
        brief = b["engine"]
        delta = brief_delta(_history_brief(base["engine"]), _history_brief(brief)) if compared else None
        layers = brief.get("total_layers") if brief is not None else None
        if isinstance(layers, int):
            d_layers = delta.get("layers") if delta is not None else None
            said = f" ({signed(d_layers)})" if isinstance(d_layers, int) and d_layers else ""
            parts.append(f"layers {layers}" + (said or (" (same)" if delta is not None else "")))
        mix = _mix(brief)
        if mix:
            said = ", ".join(f"{name(k)}{GLUE}{v}" for k, v in mix.items())
            moved = delta.get("precision") if delta is not None else None
            if isinstance(moved, dict):
                changes = [f"{name(k)}{GLUE}{signed(d)}" for k, d in moved.items() if isinstance(d, int)]
                said += f" ({', '.join(changes)})" if changes else " (same)"
            parts.append(f"precisions {said}")
        text = f"{head}: {'baseline; ' if same else ''}" + ", ".join(parts)
        if mixed and b["cold_builder"]:
            text += f"; {FIRST_BUILD}"
        if compared:
            diffs = sorted(
                ((str(k)[2:], v) for k, v in row.items() if k.startswith("d ") and isinstance(v, (int, float))),
                key=lambda kv: -abs(kv[1]),
            )
            shown = [f"{name(n)} {_signed_s(d)}" for n, d in diffs[:3] if abs(d) >= 0.0005]
            if shown:
                text += "; largest phase differences: " + ", ".join(shown)
        out.append(text)
    noise = twin_spread(data)
    cold = f' Rows marked "{FIRST_BUILD}": {FIRST_WHY}.' if mixed else ""
    out.append(EXCLUDED + cold + (f" {noise}" if noise else ""))
    return out


def wrap_paragraphs(paragraphs: Sequence[str], width: int | None) -> str:
    """``paragraphs`` as lines of at most ``width`` characters (None: one line each), broken between words, never
    inside a number and its unit; a word longer than a line (a long path) is folded. Continuation lines indent."""
    import textwrap

    lines: list[str] = []
    for text in paragraphs:
        if width is None:
            lines.append(text)
            continue
        lines += textwrap.wrap(
            text, width=max(width, 20), subsequent_indent="   ", break_on_hyphens=False, break_long_words=True
        ) or [""]
    return "\n".join(lines).replace(GLUE, " ")


def _options_key(options: object) -> str:
    """The options as one comparable string; options JSON cannot sort (a key that is not a string) count as
    their own repr: such a build then has no twins, and nothing raises."""
    try:
        return json.dumps(options, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(options)
