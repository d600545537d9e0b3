"""Reading ``POST /builds``: the ONNX model streamed to a file under ``--data`` with the size limit enforced while
reading, the build options from JSON, and every malformed request refused with a status and a sentence.

Two request forms:

- a raw body (any content type but multipart): the ONNX bytes; ``?options=<JSON object>`` and ``?name=<label>``
  in the query string;
- ``multipart/form-data``: a part ``model`` (the ONNX file; its file name is the default label), optionally a
  part ``options`` (a JSON object) and a part ``name``.

Build options accepted from a request are the engine-shaping ones; paths (``output``, ``timing_cache``) never
come from a request, and where the builder runs is the server's choice.
"""

from __future__ import annotations

import difflib
import errno
import json
import os
import re
import time
import unicodedata
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import anyio
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from .._http_options import NOT_OVER_HTTP, http_options, http_refusals
from .._json import JSON, JSONObject, json_depth

ALLOWED_OPTIONS = http_options()  # from BuildOptions' metadata: the engine-shaping options, budget, force_after
REFUSED_OPTIONS = {
    **http_refusals(),
    "events": "the events are served at GET /builds/{id}/events",
    "history": NOT_OVER_HTTP,
    "resources": NOT_OVER_HTTP,
    "clock": NOT_OVER_HTTP,
}
MAX_FIELD = 64 * 1024  # options / name parts
MULTIPART_SLACK = 256 * 1024  # boundaries and part headers on top of the model's bytes
FLUSH_AT = 1 << 20  # write to disk in ~1 MiB pieces, off the event loop


class UploadError(Exception):
    """A refused request: the HTTP status and the sentence the client gets as ``{"error": ...}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class _PartState:
    """The multipart parser's position: the part's headers so far, the header being read, which part."""

    headers: dict[str, bytes] = field(default_factory=dict)
    header_name: bytes = b""
    header_value: bytes = b""
    part: str | None = None  # "model", "options", "name"; "model-done" after the model
    ended: bool = False


@dataclass
class Upload:
    """What a request delivered: the model's size, its label and the build options."""

    size: int = 0
    name: str = ""
    options: JSONObject = field(default_factory=dict)


def clean_name(text: str, *, default: str) -> str:
    """A display label from untrusted text: no control characters, no directories, at most 200 characters."""
    text = os.path.basename(text.replace("\\", "/"))
    text = "".join(c for c in text if unicodedata.category(c)[0] != "C").strip()
    return text[:200] or default


UNNAMED = re.compile(r"upload \([\d,]+ B\)")  # the label of an upload that came with no name


def engine_filename(name: str, build_id: str) -> str:
    """The engine download's file name: the model's name (its ``.onnx`` dropped) in ASCII letters, digits, ``.``,
    ``-`` and ``_`` (safe in a Content-Disposition header and on any disk), or the build id when nothing is left."""
    stem = "" if UNNAMED.fullmatch(name) else re.sub(r"\.onnx$", "", name, flags=re.IGNORECASE)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._-")[:100]
    return f"{safe or build_id}.engine"


def parse_options(text: str | None) -> JSONObject:
    """The build options of a request, as keyword arguments for ``Build``; UploadError(400) when malformed."""
    if text is None or not text.strip():
        return {}
    try:
        options: JSON = json.loads(text)
    except ValueError as exc:
        raise UploadError(400, f"options must be a JSON object: {exc}") from None
    except RecursionError:
        options = None
    if options is None or json_depth(options, MAX_OPTION_DEPTH) > MAX_OPTION_DEPTH:
        raise UploadError(400, f"options nest more than {MAX_OPTION_DEPTH} levels deep; no build option does")
    if not isinstance(options, dict):
        raise UploadError(400, f"options must be a JSON object, got {type(options).__name__}")
    for key in options:
        if key in REFUSED_OPTIONS:
            raise UploadError(400, f"option {key!r} is not accepted over HTTP: {REFUSED_OPTIONS[key]}")
        if key not in ALLOWED_OPTIONS:  # listed: only what a request may set (Build's own list has refused ones)
            close = difflib.get_close_matches(key, ALLOWED_OPTIONS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UploadError(
                400, f"unknown build option {key!r}{hint} Options accepted over HTTP: {', '.join(ALLOWED_OPTIONS)}"
            )
    return options


MAX_OPTION_DEPTH = 8  # profiles, the deepest option, nest 4 levels


def stalls_after(chunks: AsyncIterator[bytes], timeout: float, min_rate: float = 0.0) -> AsyncIterator[bytes]:
    """``chunks``, raising UploadError(408) when the client sends nothing for ``timeout`` seconds, or less than
    ``min_rate`` bytes a second over a window of ``timeout`` seconds (a stalled or trickling upload must not
    hold a build slot: it is refused within about twice ``timeout``)."""

    async def timed() -> AsyncIterator[bytes]:
        iterator = chunks.__aiter__()
        window_start, window_bytes = time.monotonic(), 0
        while True:
            try:
                with anyio.fail_after(timeout):
                    chunk = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise UploadError(408, f"the upload stalled: no bytes for {timeout:g} s") from None
            window_bytes += len(chunk)
            elapsed = time.monotonic() - window_start
            if elapsed >= timeout:
                if window_bytes < min_rate * elapsed:
                    raise UploadError(408, f"the upload is too slow: {window_bytes:,} B in {elapsed:.0f} s; this "
                                      f"server needs at least {min_rate:,.0f} B/s")  # fmt: skip
                window_start, window_bytes = time.monotonic(), 0
            yield chunk

    return timed()


def check_length(headers: Mapping[str, str], *, max_bytes: int) -> None:
    """Refuse at once (413) a request whose declared length is over the limit, before reading any of it."""
    declared = headers.get("content-length")
    if declared is None:
        return  # chunked: the limit is enforced while reading
    try:
        length = int(declared)
    except ValueError:
        raise UploadError(400, f"bad Content-Length: {declared[:40]!r}") from None
    multipart = parse_options_header(headers.get("content-type"))[0] == b"multipart/form-data"
    if length > max_bytes + (MULTIPART_SLACK if multipart else 0):
        raise UploadError(413, f"the upload is {length:,} bytes; this server accepts at most {max_bytes:,}")


async def receive(
    headers: Mapping[str, str],
    query: Mapping[str, str],
    chunks: AsyncIterator[bytes],
    model_path: Path,
    *,
    max_bytes: int,
) -> Upload:
    """Read a ``POST /builds`` request: the model into ``model_path`` (via a ``.part`` file renamed when complete)."""
    check_length(headers, max_bytes=max_bytes)
    kind, params = parse_options_header(headers.get("content-type"))
    multipart = kind == b"multipart/form-data"
    part = model_path.with_name(f".{model_path.name}.part")
    try:
        with open(part, "wb") as handle:
            writer = _Writer(handle, max_bytes)
            if multipart:
                upload = await _multipart(params.get(b"boundary"), chunks, writer)
            else:
                async for chunk in chunks:
                    await writer.add(chunk)
                upload = Upload(options=parse_options(query.get("options")))
                upload.name = clean_name(query.get("name") or "", default="")
            await writer.flush()
            upload.size = writer.size
        if upload.size == 0:
            raise UploadError(
                400, "no model: the request carries no ONNX bytes (raw body, or a multipart part 'model')"
            )
        os.replace(part, model_path)
    except OSError as exc:  # the server's disk, not the request: say so without the server's paths
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise UploadError(507, "the server has no room for this upload: its data disk is full") from None
        raise UploadError(500, f"the server could not store the upload: {exc.strerror or 'I/O error'}") from None
    finally:
        part.unlink(missing_ok=True)
    upload.name = upload.name or f"upload ({upload.size:,} B)"
    return upload


class _Writer:
    """Counts the model's bytes against the limit and writes them in large pieces on a worker thread."""

    def __init__(self, handle: BinaryIO, max_bytes: int) -> None:
        self.handle = handle
        self.max_bytes = max_bytes
        self.size = 0
        self.pending = bytearray()

    def take(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.max_bytes:
            raise UploadError(413, f"the model is larger than this server accepts ({self.max_bytes:,} bytes)")
        self.pending += data

    async def add(self, data: bytes) -> None:
        self.take(data)
        if len(self.pending) >= FLUSH_AT:
            await self.flush()

    async def flush(self) -> None:
        if self.pending:
            piece, self.pending = bytes(self.pending), bytearray()
            await anyio.to_thread.run_sync(self.handle.write, piece)


async def _multipart(boundary: bytes | None, chunks: AsyncIterator[bytes], writer: _Writer) -> Upload:
    if not boundary:
        raise UploadError(400, "multipart/form-data without a boundary")
    upload = Upload()
    fields: dict[str, bytearray] = {}
    state = _PartState()

    def on_header_field(data: bytes, start: int, end: int) -> None:
        state.header_name += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        state.header_value += data[start:end]

    def on_header_end() -> None:
        state.headers[state.header_name.decode("latin-1").lower()] = state.header_value
        state.header_name = state.header_value = b""

    def on_headers_finished() -> None:
        _, disposition = parse_options_header(state.headers.get("content-disposition"))
        name = disposition.get(b"name", b"").decode("utf-8", "replace")
        if name not in ("model", "options", "name"):
            raise UploadError(
                400, f"unexpected form field {name[:40]!r}: send 'model', and optionally 'options', 'name'"
            )
        if name in fields or (name == "model" and state.part == "model-done"):
            raise UploadError(400, f"form field {name!r} given twice")
        if name == "model":
            filename = disposition.get(b"filename", b"").decode("utf-8", "replace")
            upload.name = upload.name or clean_name(filename, default="")
        else:
            fields[name] = bytearray()
        state.part = name

    def on_part_data(data: bytes, start: int, end: int) -> None:
        part = state.part
        if part == "model":
            writer.take(data[start:end])
        elif part is not None:
            fields[part] += data[start:end]
            if len(fields[part]) > MAX_FIELD:
                raise UploadError(413, f"form field {part!r} is larger than {MAX_FIELD:,} bytes")

    def on_part_end() -> None:
        state.part = "model-done" if state.part == "model" else None
        state.headers = {}

    def on_end() -> None:
        state.ended = True

    parser = MultipartParser(
        boundary,
        {
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
            "on_end": on_end,
        },
    )
    try:
        async for chunk in chunks:
            parser.write(chunk)
            if len(writer.pending) >= FLUSH_AT:
                await writer.flush()
    except (MultipartParseError, ValueError) as exc:  # UploadError (from the callbacks) passes through
        raise UploadError(400, f"malformed multipart body: {exc}") from None
    if not state.ended:
        raise UploadError(400, "the multipart body ended before its closing boundary")
    if state.part != "model-done" and writer.size == 0:
        raise UploadError(400, "no model: the multipart body has no part named 'model'")
    try:
        texts = {key: bytes(value).decode("utf-8") for key, value in fields.items()}
    except UnicodeDecodeError:
        raise UploadError(400, "form fields 'options' and 'name' must be UTF-8 text") from None
    upload.options = parse_options(texts.get("options"))
    if "name" in texts:
        upload.name = clean_name(texts["name"], default=upload.name)
    return upload
