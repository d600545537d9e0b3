"""Reading what TensorRT says about an engine, in each form it says it.

- ONELINE (TensorRT 10, TensorRT for RTX; ``trtexec --dumpLayerInfo``, ``LayerInformationFormat.ONELINE``, the
  verbose ``Layers:`` record of a DETAILED build): ``Name: …, LayerType: …, Inputs: [ { … } ], …`` per line.
- TensorRT 8.x/10 verbose ``Engine Layer Information:``: ``Layer(TYPE): NAME, Tactic: T, in[Float(1,3)] -> out[…]``
  (until 8.5) or ``in (Half[-1,32:8,28,28]) -> …`` (from 8.6); tactics signed decimal (8.0/8.2) or hex.
- The inspector's JSON (``trtexec --exportLayerInfo``): ``{"Layers": [...], "Bindings": [...]}``; layers are
  name strings without DETAILED.
- Memory lines (``Total Weights Memory: N bytes`` …; 8.x without units); the last of each wins.

Lines are split on ``"\\n"`` only: the fused ONNX names in ``Metadata`` are joined by 0x1E/0x1F, which
``str.splitlines`` would split on. Every reader is bounded: :data:`MAX_LAYERS` layers are kept and the rest counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from .._files import not_onnx
from .._json import (
    MAX_FILE_VALUES,
    MAX_NESTING,
    MAX_VALUES,
    check_outside,
    check_value,
    count_from_decimal,
    count_from_digits,
    json_count,
    json_int,
    loads_outside,
)
from ._layer import (
    _ONELINE_HEAD,
    _PREFIX,
    JSON,
    MAX_LAYERS,
    MEMORY_KEYS,
    EngineLayer,
    _nodes_from_name,
    _precision,
    onnx_nodes,
    parse_layer_info,
    tactic_hex,
    tensors_of,
)

_MEMORY = (
    ("weights", ("Total Weights Memory: ",)),
    ("activations", ("Total Activation Memory: ",)),
    ("host_persistent", ("Total Host Persistent Memory: ",)),
    ("device_persistent", ("Total Device Persistent Memory: ",)),
    ("scratch", ("Max Scratch Memory: ", "Total Scratch Memory: ")),
)
_PEAK_KEY = "[MemUsageStats] Peak memory usage of TRT CPU/GPU memory allocators: "
_PEAKS = re.compile(r"CPU (\d+) MiB, GPU (\d+) MiB")
_DIGITS = re.compile(r"\d+")
_CREATED = re.compile(r"Created engine with size: ([0-9.]+) MiB")


class Parsed(NamedTuple):
    """What a reader found: ``EngineReport``'s fields, in its order."""

    layers: tuple[EngineLayer, ...]
    memory: dict[str, int | None]
    source: str
    form: str
    total_layers: int
    bindings: tuple[str, ...]
    notes: tuple[str, ...]


def scan_oneline(line: str) -> EngineLayer | None:
    """A ONELINE layer line's layer: its name and type now, its other fields from the line on first use."""
    if not line.startswith(_ONELINE_HEAD):
        return None
    cut = line.find(", LayerType: ")
    if cut < 0:
        return None
    type_end = line.find(", ", cut + 13)
    return EngineLayer.from_line(line[6:cut], line[cut + 13 : type_end if type_end >= 0 else len(line)], line)


def layer_from_raw(raw: Mapping[str, JSON]) -> EngineLayer:
    """An :class:`EngineLayer` from the inspector's JSON object for it (also a compact :meth:`to_dict` one)."""
    if "name" in raw and "Name" not in raw:  # EngineLayer.to_dict's
        listed = raw.get("onnx_nodes")
        stream = raw.get("stream")
        weights = raw.get("weights")
        return EngineLayer(
            name=str(raw.get("name", "")),
            type=str(raw.get("type", "")),
            precision=str(raw.get("precision", "")),
            formats=(str(raw.get("format", "")),) if raw.get("format") else (),
            tactic=str(raw.get("tactic", "")),
            tactic_value=str(raw.get("tactic_value", "")),
            onnx_nodes=tuple(str(n) for n in listed[:10_000]) if isinstance(listed, list) else (),
            stream=stream if json_int(stream) else None,
            origin=str(raw.get("origin", "")),
            source={
                "Name": str(raw.get("name", "")),
                "LayerType": str(raw.get("type", "")),
                "weights": weights if json_int(weights) else 0,
            },
        )
    inputs = tensors_of(raw.get("Inputs"))
    outputs = tensors_of(raw.get("Outputs"))
    name = str(raw.get("Name", ""))
    kind = str(raw.get("LayerType", ""))
    metadata = raw.get("Metadata")
    if isinstance(metadata, str) and metadata.strip():
        nodes = onnx_nodes(metadata)
    else:
        nodes = () if "Metadata" in raw else _nodes_from_name(name, kind)
    value = raw.get("TacticValue")
    tactic_value = tactic_hex(str(value)) if value is not None and str(value).strip() else ""
    stream = raw.get("StreamId")
    return EngineLayer(
        name=name,
        type=kind,
        precision=_precision([t.datatype for t in inputs], [t.datatype for t in outputs]),
        formats=tuple(t.format for t in outputs),
        tactic=str(raw.get("TacticName") or "") or tactic_value,
        tactic_value=tactic_value,
        onnx_nodes=nodes,
        stream=stream if json_int(stream) else None,
        origin=str(raw.get("Origin", "")),
        source=dict(raw),
    )


def _last_number(text: str, key: str) -> tuple[int | None, int] | None:
    """The number after the last ``key`` in ``text`` (None past 2**63: no memory is so large) and where that key
    is."""
    at = text.rfind(key)
    if at < 0:
        return None
    match = _DIGITS.match(text, at + len(key))
    return (count_from_digits(match.group()), at) if match else None


def memory_from_text(text: str) -> dict[str, int | None]:
    """The memory lines of a log: the last of each wins (TensorRT prints the block again for the final engine)."""
    memory: dict[str, int | None] = dict.fromkeys(MEMORY_KEYS)
    for key, spellings in _MEMORY:
        found = [x for x in (_last_number(text, s) for s in spellings) if x is not None]
        if found:
            memory[key] = max(found, key=lambda x: x[1])[0]
    at = text.rfind(_PEAK_KEY)
    peaks = _PEAKS.match(text, at + len(_PEAK_KEY)) if at >= 0 else None
    if peaks is not None:
        for key, mib in (("peak_cpu", peaks.group(1)), ("peak_gpu", peaks.group(2))):
            count = count_from_digits(mib)
            memory[key] = count << 20 if count is not None and json_count(count << 20) else None
    at = text.rfind("Created engine with size: ")
    created = _CREATED.match(text, at) if at >= 0 else None
    if created is not None:
        memory["engine_size"] = count_from_decimal(created.group(1), 1 << 20)  # None for "1.2.3" or 400 digits
    return memory


def _strip_prefix(line: str) -> str:
    """A log line without its ``[date] [V] [TRT]`` / ``[TensorRT] VERBOSE:`` prefix."""
    if line[:1] not in "[IVWE":
        return line
    return line[_PREFIX.match(line).end() :]  # type: ignore[union-attr]  # matches the empty string


_IO_TENSOR = re.compile(r" Name: (.*?), IOMode: ")


class _Record:
    """A run of layer lines of one form; lines past :data:`MAX_LAYERS` are counted, not read."""

    def __init__(self, form: str) -> None:
        self.form = form
        self.layers: list[EngineLayer] = []
        self.total = 0

    def add(self, text: str) -> bool:
        """Read ``text`` as one of this record's layers; False when it is not one."""
        if self.total >= MAX_LAYERS:
            self.total += 1
            return True
        if self.form == "oneline":
            layer = scan_oneline(text)
        else:
            raw = parse_layer_info(text)
            layer = layer_from_raw(raw) if raw is not None else None
        if layer is None:
            return False
        self.layers.append(layer)
        self.total += 1
        return True


def _records(lines: Iterable[str]) -> tuple[list[_Record], list[str], list[str]]:
    """The layer records of a log (runs of ONELINE or layer-info lines), the engine's I/O tensor names (the
    inspector's ``Bindings:`` list, or TensorRT for RTX's ``I/O Tensors:``), the last list printed, and the lines
    that are not layers (where the memory lines are)."""
    records: list[_Record] = []
    bindings: list[str] = []
    others: list[str] = []
    current: _Record | None = None
    listing = ""  # "bindings" / "io" while reading such a list
    for line in lines:
        text = _strip_prefix(line[:-1] if line.endswith("\r") else line)
        if listing:
            others.append(line)
            if listing == "bindings" and text.strip() and not line.startswith("["):
                if len(bindings) < MAX_LAYERS:
                    bindings.append(text)
                continue
            match = _IO_TENSOR.match(text) if listing == "io" else None
            if match:
                if len(bindings) < MAX_LAYERS:
                    bindings.append(match.group(1))
                continue
            listing = ""
            others.pop()  # read again below
        form = "oneline" if text.startswith(_ONELINE_HEAD) else "layer_info" if text.startswith("Layer(") else ""
        if form:
            if current is None or current.form != form:
                current = _Record(form)
                records.append(current)
            if current.add(text):
                continue
        others.append(line)
        if text.startswith(("Bindings:", "I/O Tensors:")):
            listing = "bindings" if text.startswith("B") else "io"
            bindings = []
        if text.strip() != "...":
            current = None  # a record ends at any other line
    return records, bindings, others


def _one_copy(layers: list[EngineLayer]) -> list[EngineLayer]:
    """The record once where a tool printed the engine and then each layer again (both halves the same)."""
    half = len(layers) // 2
    if half and len(layers) % 2 == 0 and all(layers[i].name == layers[half + i].name for i in range(half)):
        return layers[:half]
    return layers


def report_from_text(text: str, source: str) -> Parsed | None:
    """The engine report of a TensorRT log (None where it holds no layer information): its richest record (the
    ONELINE form over the layer-info form), the latest of the longest."""
    records, bindings, others = _records(text.split("\n"))
    if not records:
        return None
    oneline = [r for r in records if r.form == "oneline" and r.layers]
    candidates = oneline or [r for r in records if r.layers]
    if not candidates:
        return None
    chosen = max(candidates[::-1], key=lambda r: r.total)
    layers = _one_copy(chosen.layers) if chosen.total <= MAX_LAYERS else chosen.layers
    total = len(layers) if chosen.total <= MAX_LAYERS else chosen.total
    return build_report(layers, total, memory_from_text("\n".join(others)), source, chosen.form, tuple(bindings))


def build_report(
    layers: list[EngineLayer],
    total: int,
    memory: Mapping[str, int | None],
    source: str,
    form: str,
    bindings: tuple[str, ...],
    notes: tuple[str, ...] = (),
) -> Parsed:
    """The report of these layers, at most :data:`MAX_LAYERS` (a note says how many TensorRT printed)."""
    if total > MAX_LAYERS:
        notes = (*notes, f"{total:,} layers printed; the first {MAX_LAYERS:,} are kept")
    return Parsed(tuple(layers[:MAX_LAYERS]), dict(memory), source, form, max(total, len(layers)), bindings, notes)


def report_from_json(loaded: JSON, source: str) -> Parsed:
    """The report of the inspector's JSON (``{"Layers": [...]}``), or of :meth:`EngineReport.to_dict`'s."""
    if not isinstance(loaded, dict):
        raise ValueError(f"{source}: not TensorRT engine information (not a JSON object)")
    items = loaded.get("Layers", loaded.get("layers"))
    if not isinstance(items, list):
        raise ValueError(f'{source}: not TensorRT engine information (no "Layers" list)')
    layers: list[EngineLayer] = []
    names_only = bool(items) and all(isinstance(x, str) for x in items[:100])
    for item in items[:MAX_LAYERS]:
        if isinstance(item, dict):
            layers.append(layer_from_raw(item))
        elif isinstance(item, str):
            layers.append(layer_from_raw({"Name": item}))
    bindings_raw = loaded.get("Bindings", loaded.get("bindings"))
    bindings = tuple(str(b) for b in bindings_raw[:MAX_LAYERS]) if isinstance(bindings_raw, list) else ()
    memory_raw = loaded.get("memory")
    memory: dict[str, int | None] = dict.fromkeys(MEMORY_KEYS)
    if isinstance(memory_raw, dict):
        for key in MEMORY_KEYS:
            value = memory_raw.get(key)
            memory[key] = value if json_count(value) else None  # 401 digits: float() in fmt_bytes raised
    notes_raw = loaded.get("notes")
    notes = tuple(str(n) for n in notes_raw[:20]) if isinstance(notes_raw, list) else ()
    if names_only:
        notes = (*notes, "layer names only: build with profiling_verbosity='detailed' for types, precisions, tactics")
    total_raw = loaded.get("total_layers")
    total = total_raw if json_count(total_raw) and total_raw > len(items) else len(items)
    if total > MAX_LAYERS and any("are kept" in n for n in notes):
        notes = tuple(n for n in notes if "are kept" not in n)
    form = str(loaded.get("form") or ("names" if names_only else "json"))
    return build_report(layers, total, memory, str(loaded.get("source") or source), form, bindings, notes)


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # JSON strings in json.dumps' output
_MARKS = re.compile(r"[^\[\]{}]+")  # what is not a list's or object's mark
_AS_LIST = str.maketrans("{}", "[]")
_BATCH = 1 << 16  # text of layers past MAX_LAYERS decoded at once: ~32,000 values at most, ~2 MB held
_WINDOW = 1 << 12  # text a value is first decoded from (grown 4x while it does not end in it): ~280 bytes a layer
_WIDE = 1 << 18  # a value past this much text is counted by its marks before it is built (J22-4): ~8 MB held at most


def _decode_at(text: str, at: int) -> tuple[JSON, int]:
    """The JSON value that begins at ``at`` of ``text`` and where it ends, never built whole before it is counted:
    decoded from a window of the text (C speed, bounded by the window's size) while it ends inside one of up to
    :data:`_WIDE` characters, else counted by :func:`check_value` first (``raw_decode`` of 16 MiB of
    ``[{},{},...]`` held 845 MB before :func:`check_outside` could refuse it)."""
    size = _WINDOW
    while size <= _WIDE:
        window = text[at : at + size]
        whole = at + size >= len(text)  # the window holds the rest of the text
        try:
            item, stop = _DECODER.raw_decode(window)
        except RecursionError:
            raise ValueError(f"JSON nested more than {MAX_NESTING} deep") from None
        except ValueError:
            if whole:
                raise
        else:
            if stop < len(window) or whole:  # "12" of "123": a value ending at the window's end may go on
                return item, at + stop
        size *= 4
    check_value(text, at)
    try:
        return _DECODER.raw_decode(text, at)
    except RecursionError:
        raise ValueError(f"JSON nested more than {MAX_NESTING} deep") from None


def _batch_shape(batch: list[JSON]) -> tuple[int, int]:
    """How many values the items of ``batch`` hold in all (as :func:`check_outside` counts each) and how deeply the
    deepest nests (no further than :data:`MAX_NESTING` + 1), from the marks of its JSON text: C speed, where
    :func:`check_outside` walks each value in Python (5.6 million empty layers: 5x slower under coverage)."""
    text = _STRINGS.sub("0", json.dumps(batch, separators=(",", ":")))  # no mark left in a string
    # a list's or object's values: one after each comma and one more where it is not empty
    values = text.count(",") + text.count("[") + text.count("{") - text.count("[]") - text.count("{}")
    # the items' lists and objects, without the batch's own list, as "[" and "]": they nest as before
    marks, depth = _MARKS.sub("", text[1:-1]).translate(_AS_LIST), 0
    while marks and depth <= MAX_NESTING:  # each pass removes the lists now empty (not those it empties): one level
        marks, depth = marks.replace("[]", ""), depth + 1
    return values, depth


class TooManyValues(ValueError):
    """A layer JSON of more than :data:`MAX_FILE_VALUES` values in all (each layer within its own bound)."""


def load_layer_json(data: str | bytes) -> JSON:
    """A JSON object read one top-level value and one ``Layers`` item at a time (each bounded by
    :func:`check_outside`): :data:`MAX_LAYERS` items are kept and the rest decoded a bounded run at a time (the same
    bounds), counted (as ``total_layers``) and dropped, so 5.6 million empty layers are never all held (845 MB for
    16 MiB). ValueError where it is no such JSON (or not UTF-8); :class:`TooManyValues` past
    :data:`MAX_FILE_VALUES` values in all (10,000 layers of 100,000 values each were held)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    counted = [0]

    def skip(at: int) -> int:
        match = _SPACE.match(text, at)
        return match.end() if match else at

    def value(at: int) -> tuple[JSON, int]:
        item, end = _decode_at(text, at)
        counted[0] += check_outside(item)
        if counted[0] > MAX_FILE_VALUES:
            raise TooManyValues(f"JSON of more than {MAX_FILE_VALUES:,} values in all; trt_widget reads smaller files")
        return item, skip(end)

    def batch(at: int) -> tuple[int, int] | None:
        """The layers from ``at`` to a comma within :data:`_BATCH` characters, decoded at once and dropped: how many
        and where that comma is; None where that text is no run of whole layers (the comma is inside one, or the
        list ends before it), or one of them breaks a bound (read one at a time there, to say which). The comma
        is the one before the last text that begins as the layer at ``at`` does (another layer, most likely)."""
        later = text.rfind(text[at : at + 16], at + 1, at + _BATCH)
        end = text.rfind(",", at, later if later > at else at + _BATCH)
        if end <= at:
            return None
        try:
            items, stop = _DECODER.raw_decode("[" + text[at:end] + "]")
        except (ValueError, RecursionError):
            return None
        if stop != end - at + 2:
            return None
        values, depth = _batch_shape(items)
        if depth > MAX_NESTING or values > MAX_VALUES or counted[0] + values > MAX_FILE_VALUES:
            return None
        counted[0] += values
        return len(items), end

    def after_comma(at: int, close: str) -> int:
        at = skip(at + 1)
        if text[at : at + 1] == close:  # [1,] and {"a": 1,}: no JSON
            raise ValueError("a trailing comma in the JSON")
        return at

    loaded: dict[str, JSON] = {}
    at = skip(0)
    if text[at : at + 1] != "{":
        raise ValueError("not a JSON object")
    at, total = skip(at + 1), 0
    while text[at : at + 1] != "}":
        key, at = value(at)
        if not isinstance(key, str) or text[at : at + 1] != ":":
            raise ValueError("not a JSON object")
        at = skip(at + 1)
        if key in ("Layers", "layers") and text[at : at + 1] == "[":
            items: list[JSON] = []
            at, count, slow_until = skip(at + 1), 0, 0
            while text[at : at + 1] != "]":
                dropped = batch(at) if len(items) >= MAX_LAYERS and at >= slow_until else None
                if dropped is not None:
                    count, at = count + dropped[0], dropped[1]
                else:
                    if len(items) >= MAX_LAYERS and at >= slow_until:  # one at a time to the end of that text
                        slow_until = at + _BATCH
                    item, at = value(at)
                    count += 1
                    if len(items) < MAX_LAYERS:
                        items.append(item)
                if text[at : at + 1] == ",":
                    at = after_comma(at, "]")
                elif text[at : at + 1] != "]":
                    raise ValueError("not a JSON list")
            at = skip(at + 1)
            loaded[key], total = items, max(total, count)
        else:
            loaded[key], at = value(at)
        if text[at : at + 1] == ",":
            at = after_comma(at, "}")
        elif text[at : at + 1] != "}":
            raise ValueError("not a JSON object")
    if skip(at + 1) != len(text):
        raise ValueError("text after the JSON object")
    if total > MAX_LAYERS and not json_count(loaded.get("total_layers")):
        loaded["total_layers"] = total
    return loaded


def report_from_bytes(data: bytes, source: str) -> Parsed:
    """A report from a file's bytes: JSON engine information, a recording (JSON lines) or a log."""
    text = data.decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            loaded = load_layer_json(stripped)
        except TooManyValues as exc:  # no recording nor log either: a recording is bounded the same
            raise ValueError(f"{source}: {exc}") from None
        except ValueError:  # also nested deeper than MAX_NESTING, or more than MAX_VALUES in one value
            loaded = None
        if isinstance(loaded, dict) and "Layers" in loaded:
            return report_from_json(loaded, source)
        if loaded is None:  # JSON lines: a trt_widget recording
            report = _from_recording(text, source)
            if report is not None:
                return report
    report = report_from_text(text, source)
    if report is None and _looks_onnx(data):
        raise ValueError(
            f"{source}: an ONNX model, not a log: inspect reads what TensorRT built from it; build it and inspect the "
            f"recording (trt-widget build {source} --json > build.jsonl, then trt-widget inspect build.jsonl)"
        )
    if report is None and source.lower().endswith(".onnx"):  # named as a model, but it is none: as build says
        raise ValueError(
            f"{source}: {not_onnx(data[:4096])}; nor does it hold engine layer information (a TensorRT log of a "
            "build with profiling_verbosity=detailed and VERBOSE severity, trtexec --dumpLayerInfo / "
            "--exportLayerInfo output, or a trt_widget recording)"
        )
    if report is None and (data[:4] == b"vtrt" or b"\0" in data[:4096]):
        raise ValueError(
            f"{source}: a serialized engine (binary), not a log: its layers can be read only by deserializing it on "
            "the GPU it was built for (EngineReport.from_engine); give the log or recording of its build instead "
            "(trt-widget build --json, events=, log_file=), and `trt-widget check` for what its manifest records"
        )
    if report is None:
        raise ValueError(
            f"{source}: no engine layer information in it (a TensorRT log of a build with "
            "profiling_verbosity=detailed and VERBOSE severity, trtexec --dumpLayerInfo / --exportLayerInfo output, "
            "or a trt_widget recording)"
        )
    return report


# the first fields of an ONNX ModelProto as onnx.save writes it: ir_version (field 1, a small varint), then another
# field of the model (producer_name, ..., graph, opset_import)
_ONNX_SECOND_FIELDS = frozenset(b"\x12\x1a\x22\x28\x32\x3a\x42")


def _looks_onnx(data: bytes) -> bool:
    """Whether ``data`` begins as a serialized ONNX model does (a hint for the message, not a check)."""
    return len(data) > 2 and data[0] == 0x08 and 0 < data[1] < 0x80 and data[2] in _ONNX_SECOND_FIELDS


def _from_recording(text: str, source: str) -> Parsed | None:
    """The ``engine_report`` event of a recording; else the layer record among its log events."""
    logs: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            event = loads_outside(line)
        except ValueError:
            return None
        if not isinstance(event, dict):
            return None
        report, message = event.get("report"), event.get("message")
        if event.get("event") == "engine_report" and isinstance(report, dict):
            return report_from_json(report, source)
        if event.get("event") == "log" and isinstance(message, str):
            logs.append(message)
    return report_from_text("\n".join(logs), source) if logs else None
