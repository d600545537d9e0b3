"""An engine layer and its tensors, and reading one layer's fields as the inspector's JSON names them.

Names come from models and are untrusted: they are kept whole here (and in ``EngineReport.to_json``); every
rendering goes through :func:`display`, which escapes control characters and cuts long names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from math import prod
from typing import NamedTuple, TypeAlias, Union, cast

from .._format import escape_controls
from .._json import count_from_digits, json_count, loads_outside, signed_from_digits

JSON: TypeAlias = Union[bool, int, float, str, list["JSON"], dict[str, "JSON"], None]  # noqa: UP007  (recursive)

MAX_LAYERS = 10_000  # layers kept per report; the rest are counted and named in a note
DISPLAY_CHARS = 200  # names are cut to this many characters for display (JSON keeps them whole)
MEMORY_KEYS = (
    "weights",
    "activations",
    "host_persistent",
    "device_persistent",
    "scratch",
    "peak_cpu",
    "peak_gpu",
    "engine_size",
)
_MEMORY_WORDS = {
    "weights": "weights",
    "activations": "activations",
    "host_persistent": "host persistent",
    "device_persistent": "device persistent",
    "scratch": "scratch",
    "peak_cpu": "peak CPU",
    "peak_gpu": "peak GPU",
    "engine_size": "engine",
}


def display(text: str, limit: int = DISPLAY_CHARS) -> str:
    """``text`` safe for a terminal or a table cell: control characters escaped, cut to ``limit`` characters."""
    if len(text) > limit:
        return escape_controls(text[:limit]) + f"… ({len(text):,} chars)"
    return escape_controls(text)


@dataclass(frozen=True)
class EngineTensor:
    """One input or output of an engine layer as TensorRT printed it."""

    name: str
    dims: tuple[int, ...] | None  # None: not printed (or not numbers)
    datatype: str  # normalised: FP32, FP16, BF16, INT8, FP8, INT32, INT64, BOOL, UINT8, INT4, FP4 or TensorRT's word
    format: str  # TensorRT's words for the layout, e.g. "Channel major FP16 format where channel % 8 == 0"
    location: str = ""


class _Details(NamedTuple):
    """A layer's fields beyond its name, type and precision (read from a ONELINE line on first use)."""

    formats: tuple[str, ...]
    tactic: str
    tactic_value: str
    onnx_nodes: tuple[str, ...]
    stream: int | None
    origin: str


class EngineLayer:
    """One layer of the engine: what TensorRT says it runs, in which precision, with which kernel.

    A layer of a ONELINE record keeps its line and reads its fields from it on first use (precision and weights
    together, as a summary wants them; the rest apart), so a 10,000-layer record reads in tens of milliseconds;
    ``raw`` (the inspector's JSON fields), ``inputs`` and ``outputs`` are parsed on first use too. Immutable:
    every field is a read-only property.
    """

    __slots__ = ("_details", "_name", "_precision", "_raw", "_source", "_type", "_weights")

    def __init__(
        self,
        name: str,
        type: str,
        precision: str,
        formats: tuple[str, ...] = (),
        tactic: str = "",
        tactic_value: str = "",
        onnx_nodes: tuple[str, ...] = (),
        stream: int | None = None,
        origin: str = "",
        source: str | Mapping[str, JSON] = "",
    ) -> None:
        self._name = name
        self._type = type
        self._source = source
        self._precision: str | None = precision
        self._details: _Details | None = _Details(formats, tactic, tactic_value, onnx_nodes, stream, origin)
        self._raw: Mapping[str, JSON] | None = None if isinstance(source, str) else source
        self._weights: int | None = None

    @classmethod
    def from_line(cls, name: str, kind: str, line: str) -> EngineLayer:
        """The layer of a ONELINE line whose name and type are known; its other fields are read on first use."""
        layer = cls(name, kind, "", source=line)
        layer._precision = layer._details = None  # read from the line on first use
        return layer

    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._type

    @property
    def source(self) -> str | Mapping[str, JSON]:
        """Its text (a ONELINE or layer-info line), or its JSON object."""
        return self._source

    @property
    def precision(self) -> str:
        """The output datatype; "FP32→FP16" where the inputs' differ (a reformat, a cast)."""
        if self._precision is None:
            self._precision, self._weights = _line_summary(str(self._source), self._type_end())
        return self._precision

    def _fields(self) -> _Details:
        if self._details is None:
            self._details = _line_details(str(self._source), self._name, self._type, self._type_end())
        return self._details

    def _type_end(self) -> int:
        """Where the type ends in its ONELINE line (``Name: N, LayerType: T``)."""
        return len(_ONELINE_HEAD) + len(self._name) + len(", LayerType: ") + len(self._type)

    @property
    def formats(self) -> tuple[str, ...]:
        """The outputs' formats as TensorRT words them."""
        return self._fields().formats

    @property
    def tactic(self) -> str:
        """The kernel's name where printed, else the tactic value (hex), else ""."""
        return self._fields().tactic

    @property
    def tactic_value(self) -> str:
        """16-digit hex ("0x…"), "" where not printed."""
        return self._fields().tactic_value

    @property
    def onnx_nodes(self) -> tuple[str, ...]:
        """The ONNX nodes fused into it (Metadata; else the name's " + " parts)."""
        return self._fields().onnx_nodes

    @property
    def stream(self) -> int | None:
        return self._fields().stream

    @property
    def origin(self) -> str:
        """ "REFORMAT", "QDQ", … where printed."""
        return self._fields().origin

    @property
    def raw(self) -> Mapping[str, JSON]:
        """The layer's fields as the inspector's JSON names them (``Name``, ``LayerType``, ``Inputs``, …)."""
        if self._raw is None:
            self._raw = parse_oneline(str(self._source)) or {"Name": self.name, "LayerType": self.type}
        return self._raw

    @property
    def weights(self) -> int:
        """Weight (and constant) elements it holds, where printed; 0 where not (counted once, then kept)."""
        if self._weights is None:
            if self._precision is None:  # a ONELINE line: read with the precision
                self._precision, self._weights = _line_summary(str(self._source), self._type_end())
            else:
                self._weights = weights_of(self)
        return self._weights

    @property
    def inputs(self) -> tuple[EngineTensor, ...]:
        return tensors_of(self.raw.get("Inputs"))

    @property
    def outputs(self) -> tuple[EngineTensor, ...]:
        return tensors_of(self.raw.get("Outputs"))

    @property
    def output_precision(self) -> str:
        return self.precision.rpartition("→")[2]

    def _key(self) -> tuple[str, str, str, _Details]:
        return (self.name, self.type, self.precision, self._fields())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EngineLayer) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in zip(("name", "type", "precision"), self._key()[:3], strict=True))
        return f"EngineLayer({fields}, {', '.join(f'{k}={v!r}' for k, v in self._fields()._asdict().items())})"

    def to_dict(self) -> dict[str, JSON]:
        """The summary fields, JSON-ready (what events, the widget and the HTML report carry)."""
        details = self._fields()
        return {
            "name": self.name,
            "type": self.type,
            "precision": self.precision,
            "format": details.formats[0] if details.formats else "",
            "tactic": details.tactic,
            "tactic_value": details.tactic_value,
            "onnx_nodes": list(details.onnx_nodes),
            "stream": details.stream,
            "origin": details.origin,
            "weights": self.weights,
        }


_PREFIX = re.compile(r"(?:\[[^\]\n]{0,80}\]\s*){0,6}(?:(?:VERBOSE|INFO|WARNING|ERROR): )?")
_ONELINE_HEAD = "Name: "
_LAYER_INFO = re.compile(r"Layer\(([^()]*)\): ")
_SEPARATOR = re.compile(r", ([A-Za-z][A-Za-z0-9_/]*): ?")
_TENSOR_OLD = re.compile(r"(.*)\[([A-Za-z0-9_]+)\(([^()]*)\)\]", re.S)  # name[Float(1,3,224,224)]
_TENSOR_NEW = re.compile(r"(.*) \(([A-Za-z0-9_]+)\[([^\[\]]*)\]\)", re.S)  # name (Half[-1,32:8,28,28])
# TensorRT's datatype words -> the report's
_DATATYPES = {
    "float": "FP32",
    "fp32": "FP32",
    "half": "FP16",
    "fp16": "FP16",
    "bf16": "BF16",
    "bfloat16": "BF16",
    "int8": "INT8",
    "fp8": "FP8",
    "int32": "INT32",
    "int64": "INT64",
    "bool": "BOOL",
    "uint8": "UINT8",
    "int4": "INT4",
    "fp4": "FP4",
    "e8m0": "E8M0",
}
_HEX = re.compile(r"[0-9A-Fa-f]+")
_FORMAT_TYPES = re.compile(r"\b(FP32|FP16|BF16|Int8|INT8|FP8|Int32|Int64|Bool|UInt8|Int4|FP4|Half|Float)\b")


_CACHED_CHARS = 200  # longer (hostile) words are not kept in a cache


def datatype(word: str) -> str:
    """TensorRT's datatype word ("Half", "Float", a format sentence with "FP16" in it) in the report's words."""
    return _datatype(word) if len(word) <= _CACHED_CHARS else _datatype.__wrapped__(word)


@lru_cache(maxsize=256)  # a record repeats a handful of words
def _datatype(word: str) -> str:
    text = word.strip()
    known = _DATATYPES.get(text.lower())
    if known:
        return known
    match = _FORMAT_TYPES.search(text)
    if match:
        return _DATATYPES.get(match.group(1).lower(), match.group(1).upper())
    return text[:40]


def tactic_hex(value: str) -> str:
    """A tactic as TensorRT 8.4+ prints it (16 hex digits) from its signed-decimal (8.0/8.2) or short hex form."""
    text = value.strip()
    digits = text[2:] if text.lower().startswith("0x") else ""
    if digits:  # 16 ASCII hex digits at most, as decimals go through the one bounded rule
        number = int(digits, 16) if len(digits) <= 16 and _HEX.fullmatch(digits) else None
    else:
        number = signed_from_digits(text)
    return text[:64] if number is None else f"0x{number & 0xFFFFFFFFFFFFFFFF:016x}"


def split_fields(text: str) -> list[tuple[str, str]]:
    """``Key: value, Key: value`` at bracket depth 0 -> [(key, value)] (values may hold ``, `` inside brackets)."""
    fields: list[tuple[str, str]] = []
    key: str | None = None
    start = 0
    depth = 0
    last = 0
    head = re.match(r"([A-Za-z][A-Za-z0-9_/]*): ?", text)
    if head:
        key, start, last = head.group(1), head.end(), head.end()
    for match in _SEPARATOR.finditer(text, start):
        between = text[last : match.start()]
        depth += between.count("[") + between.count("{") - between.count("]") - between.count("}")
        last = match.start()
        if depth > 0:
            continue
        if key is not None:
            fields.append((key, text[start : match.start()]))
        key, start, last, depth = match.group(1), match.end(), match.end(), 0
    if key is not None:
        fields.append((key, text[start:]))
    return fields


def _value(text: str) -> JSON:
    """A ONELINE value as the inspector's JSON holds it: ints, lists of ints, JSON objects, else the string."""
    value = text.strip()
    number = signed_from_digits(value)
    if number is not None:
        return number
    if value.startswith("[") and value.endswith("]"):
        inner = value[1:-1].strip()
        numbers = [signed_from_digits(p.strip()) for p in inner.split(",")] if inner else []
        if None not in numbers:
            return cast(JSON, numbers)
    if value.startswith("{") and value.endswith("}"):
        try:
            return loads_outside(value)  # a model's node name may inject a field nested 1,900 deep
        except ValueError:
            pass
    return value


_TENSOR_KEYS = re.compile(r", (?=(?:Name|Location|Dimensions|Strides|StrideOrder|Datatype|Format|Format/Datatype): )")


def _tensors_oneline(text: str) -> list[JSON]:
    """``[ { Name: x, Location: Device, Dimensions: [1,3], Format/Datatype: … }, { … }]`` -> JSON tensors."""
    body = text.strip()
    body = body[1:] if body.startswith("[") else body
    body = body[:-1] if body.endswith("]") else body
    body = body.strip()
    if not body.startswith("{"):
        return []
    tensors: list[JSON] = []
    for part in body[1:].rstrip().removesuffix("}").split(" }, { "):
        tensor: dict[str, JSON] = {}
        for item in _TENSOR_KEYS.split(part.strip()):
            key, _, value = item.partition(": ")
            tensor[key] = _value(value) if key in ("Dimensions", "Strides", "StrideOrder") else value.strip()
        tensors.append(tensor)
    return tensors


def parse_oneline(line: str) -> dict[str, JSON] | None:
    """One ONELINE layer as the inspector's JSON object (None when the line is not one)."""
    if not line.startswith(_ONELINE_HEAD):
        return None
    cut = line.find(", LayerType: ")
    if cut < 0:
        return None
    raw: dict[str, JSON] = {"Name": line[len(_ONELINE_HEAD) : cut]}
    rest = line[cut + 2 :]
    meta_at = rest.rfind(", Metadata:")
    metadata = None
    if meta_at >= 0:
        metadata = rest[meta_at + len(", Metadata:") :]
        metadata = metadata[1:] if metadata.startswith(" ") else metadata
        rest = rest[:meta_at]
    for key, value in split_fields(rest):
        if key in ("Inputs", "Outputs", "Constants"):
            raw[key] = _tensors_oneline(value)
        elif key in ("LayerType", "TacticName", "TacticValue", "Origin", "ParameterType"):
            raw[key] = value.strip()
        else:
            raw[key] = _value(value)
    if metadata is not None:
        raw["Metadata"] = metadata
    return raw


def _balanced_split(text: str, separator: str) -> list[str]:
    """``text`` split on ``separator`` where brackets and parentheses are balanced on the left."""
    parts: list[str] = []
    depth = 0
    start = 0
    index = 0
    size = len(separator)
    while index < len(text):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(separator, index):
            parts.append(text[start:index])
            index += size
            start = index
            continue
        index += 1
    parts.append(text[start:])
    return parts


def _tensor_layer_info(text: str) -> dict[str, JSON]:
    """``name[Float(1,3,224,224)]`` (TensorRT until 8.5) or ``name (Half[-1,32:8,28,28])`` (8.6+) as a JSON tensor."""
    value = text.strip()
    match = _TENSOR_NEW.fullmatch(value) or _TENSOR_OLD.fullmatch(value)
    if not match:
        return {"Name": value}
    dims: list[JSON] = []
    vectorized = ""
    for part in match.group(3).split(","):
        number, _, vector = part.strip().partition(":")
        dim = signed_from_digits(number)
        if dim is None:
            dims = []
            break
        dims.append(dim)
        vectorized = vectorized or vector
    layout = f" vectorized by {vectorized}" if vectorized else ""
    return {"Name": match.group(1), "Dimensions": dims, "Format/Datatype": f"{match.group(2)}{layout}"}


def parse_layer_info(line: str) -> dict[str, JSON] | None:
    """One ``Layer(TYPE): NAME, Tactic: T, inputs -> outputs`` line as an inspector-like JSON object."""
    match = _LAYER_INFO.match(line)
    if not match:
        return None
    rest = line[match.end() :]
    cut = rest.find(", Tactic: ")
    if cut < 0:
        return {"Name": rest.strip(), "LayerType": match.group(1)}
    name = rest[:cut]
    rest = rest[cut + len(", Tactic: ") :]
    tactic, _, tensors = rest.partition(", ")
    sides = _balanced_split(tensors, " -> ")
    inputs = sides[0] if len(sides) > 1 else ""
    outputs = " -> ".join(sides[1:]) if len(sides) > 1 else sides[0]
    return {
        "Name": name,
        "LayerType": match.group(1),
        "Inputs": [_tensor_layer_info(t) for t in _balanced_split(inputs, ", ") if t.strip()],
        "Outputs": [_tensor_layer_info(t) for t in _balanced_split(outputs, ", ") if t.strip()],
        "TacticValue": tactic_hex(tactic),
    }


def onnx_nodes(metadata: str) -> tuple[str, ...]:
    """The ONNX node names of a ``Metadata`` value: ``[ONNX Layer: a]`` joined by 0x1E (0x1F inside Myelin)."""
    names: list[str] = []
    for part in metadata.replace("\x1f", "\x1e").split("\x1e")[:10_000]:
        text = part.strip()
        if text.startswith("[ONNX Layer: ") and text.endswith("]"):
            names.append(text[len("[ONNX Layer: ") : -1])
        elif text:
            names.append(text)
    return tuple(names)


def _tensor(raw: JSON) -> EngineTensor:
    if not isinstance(raw, dict):
        return EngineTensor(str(raw), None, "", "")
    dims_raw = raw.get("Dimensions")
    dims = tuple(d for d in dims_raw if isinstance(d, int)) if isinstance(dims_raw, list) else None
    words = raw.get("Format/Datatype")
    if words is None:  # TensorRT for RTX: Datatype and Format apart
        kind = str(raw.get("Datatype", ""))
        layout = str(raw.get("Format", ""))
    else:
        kind = layout = str(words)
    return EngineTensor(
        str(raw.get("Name", "")), dims, datatype(kind) if kind else "", layout, str(raw.get("Location", ""))
    )


def tensors_of(value: JSON) -> tuple[EngineTensor, ...]:
    """A layer's ``Inputs`` / ``Outputs`` JSON as tensors."""
    return tuple(_tensor(t) for t in value) if isinstance(value, list) else ()


def _precision(inputs: list[str], outputs: list[str]) -> str:
    out = outputs[0] if outputs else ""
    ins = list(dict.fromkeys(t for t in inputs if t))
    return f"{'+'.join(ins)}→{out}" if out and ins and ins != [out] else out


def _nodes_from_name(name: str, kind: str) -> tuple[str, ...]:
    """Where TensorRT printed no Metadata: the fused names of ``a + b`` (none for reformats and Myelin ranges)."""
    if kind in ("Reformat", "NoOp") or name.startswith(("Reformatting CopyNode", "{ForeignNode[")):
        return ()
    return tuple(p for p in name.split(" + ") if p)


_COUNT = re.compile(r'"Count": ([0-9]+)')
_CONST_DIMS = re.compile(r"Dimensions: \[([-0-9,]{0,200})\]")  # bounded: the shapes are cached


@lru_cache(maxsize=1024)  # a model repeats its shapes (at most 200 characters each: _CONST_DIMS)
def _elements(dims: str) -> int:
    """Elements of a tensor of ``dims`` ("64,64,1,1"); 0 where a dimension is dynamic (-1), empty or not a number."""
    if not dims or "-" in dims:
        return 0
    sizes = [count_from_digits(d) for d in dims.split(",")]  # None for ",,"
    elements = 0 if None in sizes else prod(cast(list[int], sizes))
    return elements if json_count(elements) else 0


def weights_of(layer: EngineLayer) -> int:
    """Weight elements a layer holds: its ``Weights``/``Bias`` counts, or (TensorRT for RTX) its constants' sizes."""
    source = layer.source
    if isinstance(source, str):
        return _text_weights(source)
    total = 0
    for key in ("Weights", "Bias"):
        param = source.get(key)
        count = param.get("Count") if isinstance(param, dict) else None
        total += count if json_count(count) else 0
    weights = source.get("weights")
    return total if json_count(total) and total else (weights if json_count(weights) else 0)


def _text_weights(source: str) -> int:
    """Weight elements of a layer's text: its constants' sizes (TensorRT for RTX), else its ``"Count"`` values."""
    constants = source.find(", Constants: [")
    if constants >= 0:
        stop = source.find(", Outputs: [", constants)
        return sum(map(_elements, _CONST_DIMS.findall(source, constants, stop if stop >= 0 else len(source))))
    total = sum(count_from_digits(c) or 0 for c in _COUNT.findall(source))  # a count past any model is none
    return total if json_count(total) else 0


# --- a ONELINE line's fields, read on first use --------------------------------------------------------------------
# A tensor field's value runs to the next "," or " }" (TensorRT prints no comma inside one).
# "Datatype: " and "Format/Datatype: "; bounded (their words are cached): a longer one is not read
_DATATYPE_VALUE = re.compile(r"Datatype: ([^,]{0,200}?)(?=,| \}|$)")
_FORMAT_VALUE = re.compile(r"Format(?:/Datatype)?: ([^,]*?)(?=,| \}|$)")
_ORIGIN_VALUE = re.compile(r", Origin: ([^,]*?)(?=,| \}|$)")
_TENSORS_KEPT = 64  # tensors read per side of a layer (a hostile line may print any number)


def _tensor_spans(line: str, type_end: int) -> tuple[int, int, int, int]:
    """Where a ONELINE line's ``Inputs``, ``Constants`` and ``Outputs`` lists start and where the tensors end
    (-1 where absent; the end is -1 where no ``}], `` follows the outputs)."""
    inputs_at = line.find(", Inputs: [", type_end - 2)
    outputs_at = line.find(", Outputs: [", max(inputs_at, type_end - 2))
    tensors_end = line.find("}], ", outputs_at) if outputs_at >= 0 else -1
    constants_at = line.find(", Constants: [", inputs_at, outputs_at) if inputs_at >= 0 and outputs_at >= 0 else -1
    return inputs_at, constants_at, outputs_at, tensors_end


def _line_summary(line: str, type_end: int) -> tuple[str, int]:
    """The precision of a ONELINE layer (its first output's datatype, with its inputs' where they differ) and its
    weight elements (TensorRT for RTX: its constants' sizes), read together: a summary wants both."""
    inputs_at, constants_at, outputs_at, tensors_end = _tensor_spans(line, type_end)
    inputs: tuple[str, ...] = ()
    if inputs_at >= 0:
        stop = constants_at if constants_at >= 0 else outputs_at if outputs_at >= 0 else len(line)
        inputs = tuple(_DATATYPE_VALUE.findall(line, inputs_at, stop)[:_TENSORS_KEPT])
    output = None
    if outputs_at >= 0:
        output = _DATATYPE_VALUE.search(line, outputs_at, tensors_end if tensors_end >= 0 else _fields_end(line))
    precision = _precision_of(inputs, output.group(1) if output else None)
    if constants_at < 0:
        return precision, _text_weights(line)
    return precision, sum(map(_elements, _CONST_DIMS.findall(line, constants_at, outputs_at)))


@lru_cache(maxsize=256)  # a record repeats a few combinations (of words of at most 200 characters)
def _precision_of(inputs: tuple[str, ...], output: str | None) -> str:
    """The precision of TensorRT's datatype words for a layer's inputs and first output (None: no output)."""
    return _precision([datatype(w) for w in inputs], [] if output is None else [datatype(output)])


def _tail(line: str, key: str, end: int) -> tuple[str, int]:
    """The value of ``, KEY: value`` that ends at ``end``, searched backwards (("", end) when absent)."""
    at = line.rfind(key, 0, end)
    if at < 0:
        return "", end
    return line[at + len(key) : end], at


def _fields_end(line: str) -> int:
    """Where a ONELINE line's trailing ``TacticValue`` / ``StreamId`` / ``Metadata`` fields begin."""
    end = line.rfind(", Metadata:")
    end = len(line) if end < 0 else end
    end = _tail(line, ", StreamId: ", end)[1]
    return _tail(line, ", TacticValue: ", end)[1]


def _line_details(line: str, name: str, kind: str, type_end: int) -> _Details:
    """A ONELINE layer's formats, tactic, fused ONNX nodes, stream and origin."""
    meta_at = line.rfind(", Metadata:")
    end = meta_at if meta_at >= 0 else len(line)
    metadata = line[meta_at + 11 :].lstrip(" ") if meta_at >= 0 else ""
    stream_text, end = _tail(line, ", StreamId: ", end)
    value_text, end = _tail(line, ", TacticValue: ", end)
    tactic_name, _ = _tail(line, ", TacticName: ", end)
    _, _, outputs_at, tensors_end = _tensor_spans(line, type_end)
    tensors_end = end if tensors_end < 0 else tensors_end
    formats: tuple[str, ...] = ()
    if outputs_at >= 0:
        formats = tuple(f.strip() for f in _FORMAT_VALUE.findall(line, outputs_at, tensors_end)[:_TENSORS_KEPT])
    origin = _ORIGIN_VALUE.search(line, tensors_end, end) if tensors_end <= end else None
    tactic_value = tactic_hex(value_text) if value_text.strip() else ""
    stream = stream_text.strip()
    nodes = onnx_nodes(metadata) if metadata.strip() else () if meta_at >= 0 else _nodes_from_name(name, kind)
    return _Details(
        formats=formats,
        tactic=tactic_name.strip() or tactic_value,
        tactic_value=tactic_value,
        onnx_nodes=nodes,
        stream=count_from_digits(stream),  # ASCII digits only: a node's name may hold ', StreamId: ²'
        origin=origin.group(1).strip() if origin else "",
    )
