"""The engine report: what TensorRT says about the engine it built, with its summary, JSON forms and diff."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._files import FileTooLarge, read_regular
from .._format import fmt_bytes
from .._tensorrt_log import LOG_FILE_MAX_BYTES
from ._layer import _MEMORY_WORDS, JSON, MEMORY_KEYS, EngineLayer, display
from ._parse import Parsed, load_layer_json, report_from_bytes, report_from_json, report_from_text

if TYPE_CHECKING:
    import pandas


MAX_REPORT_FILE = LOG_FILE_MAX_BYTES  # the largest file from_file reads: what log_file= writes at most


@dataclass(frozen=True)
class LayerChange:
    """A layer present in both reports whose precision, tactic or fused ONNX nodes differ."""

    name: str
    what: str  # "precision", "tactic" or "fusion"
    before: str
    after: str


@dataclass(frozen=True)
class EngineReportDiff:
    """What changed from one engine to another (``old.diff(new)``)."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[LayerChange, ...]
    memory: Mapping[str, int]  # key -> new - old, for keys both report and that differ

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.memory)

    def to_dict(self) -> dict[str, JSON]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": [{"name": c.name, "what": c.what, "before": c.before, "after": c.after} for c in self.changed],
            "memory": dict(self.memory),
        }

    def __str__(self) -> str:
        if not self:
            return "no difference"
        lines = [f"+ {display(n)}" for n in self.added[:20]] + [f"- {display(n)}" for n in self.removed[:20]]
        lines += [
            f"~ {display(c.name)}: {c.what} {display(c.before, 60)} → {display(c.after, 60)}" for c in self.changed[:20]
        ]
        lines += [f"memory {k}: {v:+,} B" for k, v in self.memory.items()]
        more = (
            len(self.added)
            + len(self.removed)
            + len(self.changed)
            - sum(min(20, len(x)) for x in (self.added, self.removed, self.changed))
        )
        if more > 0:
            lines.append(f"… and {more:,} more")
        return "\n".join(lines)


@dataclass(frozen=True)
class EngineReport:
    """The layers, precisions, tactics, fusions and memory of one engine, as TensorRT reported them.

    Read from a build's log (:attr:`Build.engine_report`), a TensorRT log, the inspector's /
    ``trtexec --exportLayerInfo`` JSON, or a trt_widget recording (:meth:`from_file`).
    """

    layers: tuple[EngineLayer, ...]
    memory: Mapping[str, int | None]
    source: str  # where it came from, in words
    form: str  # "oneline" (Layers: record), "layer_info" (Engine Layer Information), "json", "names"
    total_layers: int  # layers TensorRT printed (more than len(layers) where capped)
    bindings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    # --- reading ----------------------------------------------------------------------------------------------
    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> EngineReport:
        """A report from a ``--exportLayerInfo`` JSON, a TensorRT log (any form, a whole ``trtexec --verbose`` log
        included) or a trt_widget recording (JSON lines). Raises ValueError when the file holds none."""
        try:  # not a FIFO (no writer: a wait without end) nor a device (/dev/zero: read until memory ran out)
            data = read_regular(path, MAX_REPORT_FILE)
        except FileTooLarge as exc:
            raise ValueError(f"{exc} (the log_file= cap)") from None
        return cls(*report_from_bytes(data, os.fspath(path)))

    @classmethod
    def from_text(cls, text: str, source: str = "TensorRT log") -> EngineReport:
        """A report from TensorRT log text; raises ValueError when it holds no layer information."""
        parsed = report_from_text(text, source)
        if parsed is None:
            raise ValueError(f"{source}: no engine layer information in it")
        return cls(*parsed)

    @classmethod
    def from_json(cls, data: str | bytes | Mapping[str, JSON], source: str = "engine information JSON") -> EngineReport:
        """A report from the inspector's JSON (``{"Layers": [...], "Bindings": [...]}``) or :meth:`to_dict`'s."""
        loaded: JSON = load_layer_json(data) if isinstance(data, (str, bytes)) else dict(data)
        return cls(*report_from_json(loaded, source))

    @classmethod
    def from_engine(cls, engine: bytes | bytearray | memoryview) -> EngineReport:
        """The report of TensorRT's engine inspector (``IEngineInspector``, JSON) for a serialized engine: the GPU
        path. It deserializes the engine, so it needs the GPU it was built for (ValueError otherwise) and as much
        memory as the engine; the build's own :attr:`Build.engine_report` needs neither."""
        from ._inspect import report_from_engine

        return cls(*report_from_engine(engine))

    @classmethod
    def of(cls, parsed: Parsed) -> EngineReport:
        """The report of a reader's findings."""
        return cls(*parsed)

    # --- views ------------------------------------------------------------------------------------------------
    def precision_mix(self) -> dict[str, int]:
        """Output precision -> layer count, most layers first ("unknown": a layer whose record gives none)."""
        return dict(Counter(layer.output_precision or "unknown" for layer in self.layers).most_common())

    def types(self) -> dict[str, int]:
        """Layer type -> count, most first."""
        return dict(Counter(layer.type or "?" for layer in self.layers).most_common())

    def largest(self, n: int = 5) -> list[tuple[str, int]]:
        """The ``n`` layers holding the most weights: (name, weight count) from the inspector's parameters."""
        sized = [(layer.name, weights) for layer in self.layers if (weights := layer.weights) > 0]
        return sorted(sized, key=lambda x: -x[1])[:n]

    def summary(self) -> str:
        """Layers by type, the precision mix, memory and the largest layers, as text (names escaped)."""
        kept = f"{len(self.layers):,}" + (f" of {self.total_layers:,}" if self.total_layers > len(self.layers) else "")
        lines = [f"Engine: {kept} layers ({display(self.source, 120)})"]
        lines.append("  types: " + ", ".join(f"{display(k, 40)} {v}" for k, v in list(self.types().items())[:8]))
        lines.append("  precision: " + ", ".join(f"{display(k, 20)} {v}" for k, v in self.precision_mix().items()))
        memory = [f"{_MEMORY_WORDS[k]} {fmt_bytes(v)}" for k in MEMORY_KEYS if (v := self.memory.get(k)) is not None]
        if memory:
            lines.append("  memory: " + ", ".join(memory))
        largest = self.largest(3)
        if largest:
            lines.append("  largest: " + ", ".join(f"{display(n, 60)} ({c:,} weights)" for n, c in largest))
        lines += [f"  note: {display(note, 300)}" for note in self.notes]
        return "\n".join(lines)

    def brief(self, largest: int = 5) -> dict[str, JSON]:
        """The summary as JSON (for agents and tables): layer counts, precision mix, types, memory, the largest
        layers and the notes; names escaped and cut."""
        return {
            "layers": len(self.layers),
            "total_layers": self.total_layers,
            "precision_mix": dict[str, JSON](self.precision_mix()),
            "types": {display(k, 60): v for k, v in list(self.types().items())[:12]},
            "memory": dict[str, JSON](self.memory),
            "largest": [{"name": display(n, 120), "weights": c} for n, c in self.largest(largest)],
            "notes": [display(n, 300) for n in self.notes],
        }

    def layers_df(self) -> pandas.DataFrame:
        """One row per layer: name, type, precision, format, tactic, onnx_nodes, stream (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "name": layer.name,
                    "type": layer.type,
                    "precision": layer.precision,
                    "format": layer.formats[0] if layer.formats else "",
                    "tactic": layer.tactic,
                    "tactic_value": layer.tactic_value,
                    "onnx_nodes": list(layer.onnx_nodes),
                    "stream": layer.stream,
                    "origin": layer.origin,
                }
                for layer in self.layers
            ],
            columns=["name", "type", "precision", "format", "tactic", "tactic_value", "onnx_nodes", "stream", "origin"],
        ).astype({"stream": "Int64"})  # a missing stream is <NA>, the others stay whole numbers

    def to_json(self) -> str:
        """The inspector's / ``trtexec --exportLayerInfo`` JSON: ``{"Layers": [...], "Bindings": [...]}`` (names
        whole), so other tools read it."""
        return json.dumps({"Layers": [dict(layer.raw) for layer in self.layers], "Bindings": list(self.bindings)})

    def to_dict(self, max_bytes: int | None = None) -> dict[str, JSON]:
        """The report, JSON-ready and compact (each layer's summary fields; what events, the widget, the HTML report
        and MCP carry). :meth:`from_json` reads it back; :meth:`to_json` has every field TensorRT printed.

        ``max_bytes``: keep the JSON about that small (an event is one line of a recording): text fields are cut to
        1,000 characters and later layers left out, a note says so."""
        layers: list[JSON] = []
        notes = list(self.notes)
        if max_bytes is None:
            layers = [layer.to_dict() for layer in self.layers]
        else:
            used = 0
            for index, layer in enumerate(self.layers):
                item = _cut(layer.to_dict())
                used += len(json.dumps(item)) + 2
                if used > max_bytes:
                    notes.append(f"the first {index:,} of {len(self.layers):,} layers are listed here (size limit)")
                    break
                layers.append(item)
        return {
            "layers": layers,
            "bindings": list(self.bindings),
            "memory": dict(self.memory),
            "source": self.source,
            "form": self.form,
            "total_layers": self.total_layers,
            "notes": list[JSON](notes),
        }

    def diff(self, other: EngineReport) -> EngineReportDiff:
        """What changed from this engine to ``other``: layers added or removed (by name), precision, tactic or fused
        ONNX nodes changed, memory deltas."""
        mine = _by_name(self.layers)
        theirs = _by_name(other.layers)
        added = tuple(n for n in theirs if n not in mine)
        removed = tuple(n for n in mine if n not in theirs)
        changed: list[LayerChange] = []
        for name, old in mine.items():
            new = theirs.get(name)
            if new is None:
                continue
            if old.precision != new.precision:
                changed.append(LayerChange(name, "precision", old.precision, new.precision))
            if (old.tactic_value or old.tactic) != (new.tactic_value or new.tactic):
                changed.append(LayerChange(name, "tactic", old.tactic, new.tactic))
            if old.onnx_nodes != new.onnx_nodes:
                changed.append(LayerChange(name, "fusion", " + ".join(old.onnx_nodes), " + ".join(new.onnx_nodes)))
        memory = {
            key: int(b) - int(a)
            for key in MEMORY_KEYS
            if (a := self.memory.get(key)) is not None and (b := other.memory.get(key)) is not None and a != b
        }
        return EngineReportDiff(added, removed, tuple(changed), memory)

    def __repr__(self) -> str:
        mix = ", ".join(f"{k} {v}" for k, v in self.precision_mix().items())
        return f"<EngineReport {len(self.layers)} layers ({mix}) from {display(self.source, 80)}>"


def _by_name(layers: Sequence[EngineLayer]) -> dict[str, EngineLayer]:
    """Layers by name; a repeated name gets its occurrence number (``name #2``) so none is lost."""
    out: dict[str, EngineLayer] = {}
    for layer in layers:
        key = layer.name
        n = 1
        while key in out:
            n += 1
            key = f"{layer.name} #{n}"
        out[key] = layer
    return out


def _cut(item: dict[str, JSON], limit: int = 1000) -> dict[str, JSON]:
    """A layer's dict with its text fields (and fused node names) cut to ``limit`` characters."""
    out: dict[str, JSON] = {}
    for key, value in item.items():
        if isinstance(value, str) and len(value) > limit:
            out[key] = value[:limit] + "…"
        elif isinstance(value, list):
            out[key] = [v[:limit] + "…" if isinstance(v, str) and len(v) > limit else v for v in value[:200]]
        else:
            out[key] = value
    return out
