"""Which files an ONNX model names as external data, and whether this build may let TensorRT read them.

The rule: a model never reads a file it was not given. A model given as a path may name files inside its own
directory (no absolute paths, no ``..``, no symlink out of it); a model given as bytes, as an
``onnx.ModelProto`` or uploaded to a server has no directory and may name none. TensorRT's parser would
resolve such names against the working directory, so the model is read here (protobuf wire format, big
tensors skipped unread) and refused before it reaches the parser.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator

from ._errors import BuildError

MAX_DEPTH = 64  # graphs nest in node attributes; deeper than any real model
QUICK_SCAN_BYTES = 16 << 20  # below this, searching for the key "location" is quicker than walking the nodes


class _Malformed(Exception):
    """Not a well-formed protobuf: leave the diagnosis to TensorRT's parser."""


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise _Malformed
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(buf: memoryview) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value): an int for varints, a memoryview for length-delimited fields."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > end:
                raise _Malformed
            yield number, wire, buf[pos : pos + size]
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise _Malformed
    if pos != end:
        raise _Malformed


# message kind -> {field number: message kind of that field}; "tensor" is handled by _tensor
_CHILDREN: dict[str, dict[int, str]] = {
    "model": {7: "graph", 25: "function"},
    "graph": {1: "node", 5: "tensor", 15: "sparse"},
    "function": {7: "node"},
    "node": {5: "attribute"},
    "attribute": {5: "tensor", 6: "graph", 10: "tensor", 11: "graph", 22: "sparse", 23: "sparse"},
    "sparse": {1: "tensor", 2: "tensor"},
}


def _tensor(buf: memoryview) -> str | None:
    """The location an external tensor names ("" when it names none), or None for a tensor held inline."""
    external = False
    location = ""
    for number, wire, value in _fields(buf):
        if number == 14 and wire == 0 and value == 1:  # data_location = EXTERNAL
            external = True
        elif number == 13 and wire == 2 and isinstance(value, memoryview):  # external_data: key/value
            key = entry = ""
            for n, w, v in _fields(value):
                if w == 2 and isinstance(v, memoryview):
                    if n == 1:
                        key = bytes(v).decode("utf-8", "replace")
                    elif n == 2:
                        entry = bytes(v).decode("utf-8", "replace")
            if key == "location":
                location = entry
    return location if external or location else None


def _walk(buf: memoryview, kind: str, depth: int, found: list[str]) -> None:
    if depth > MAX_DEPTH:
        raise BuildError(f"the model nests graphs more than {MAX_DEPTH} deep; trt_widget does not build it")
    children = _CHILDREN[kind]
    for number, wire, value in _fields(buf):
        child = children.get(number)
        if child is None or wire != 2 or not isinstance(value, memoryview):
            continue
        if child == "tensor":
            location = _tensor(value)
            if location is not None:
                found.append(location)
        else:
            _walk(value, child, depth + 1, found)


def external_locations(data: bytes | memoryview) -> list[str]:
    """Every external-data location the serialized model names, in order (duplicates kept once)."""
    found: list[str] = []
    if isinstance(data, bytes) and len(data) < QUICK_SCAN_BYTES and b"location" not in data:
        return found  # an external-data entry names its file under the key "location": none, nothing to walk
    try:
        _walk(memoryview(data), "model", 0, found)
    except _Malformed:
        return found  # not a model we can read: the parser says why
    return list(dict.fromkeys(found))


def file_locations(path: str) -> list[str]:
    """``external_locations`` of an ONNX file, read through a read-only map (big tensors are never copied)."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return []
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            if mapped.size() < QUICK_SCAN_BYTES and mapped.find(b"location") < 0:
                return []  # as in external_locations
            view = memoryview(mapped)
            try:
                return external_locations(view)
            finally:
                view.release()


NO_DIRECTORY_HINT = (
    "Save the model with its data next to it (onnx.save_model(model, 'dir/model.onnx', "
    "save_as_external_data=True)) and pass the path 'dir/model.onnx'"
)


def check_external_data(locations: list[str], directory: str | None, label: str, hint: str = "") -> None:
    """Raise BuildError unless every location is a file inside ``directory`` (None: no location is allowed)."""
    if not locations:
        return
    first = locations[0][:200]
    if directory is None:
        raise BuildError(
            f"{label} refers to external data ({first!r}{f' and {len(locations) - 1} more' if locations[1:] else ''})"
            f" that this build does not read: a model given without its directory may name no files. "
            f"{hint or NO_DIRECTORY_HINT}"
        )
    root = os.path.realpath(directory)
    for location in locations:
        shown = location[:200]
        parts = location.replace("\\", "/").split("/")
        if not location or os.path.isabs(location) or location.startswith(("/", "\\")) or ".." in parts:
            raise BuildError(
                f"{label} names external data {shown!r} outside its own directory; external data must be a "
                "relative path inside the model's directory (no absolute paths, no '..')"
            )
        target = os.path.realpath(os.path.join(root, location))
        if os.path.commonpath([root, target]) != root or target == root:
            raise BuildError(
                f"{label} names external data {shown!r}, which leads outside the model's directory "
                "(a symbolic link?); external data must be a file inside the model's directory"
            )
        if not os.path.isfile(target):
            raise BuildError(f"{label} names external data {shown!r}, which is not a file next to the model")
