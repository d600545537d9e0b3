"""A bug-report bundle: one zip with what a maintainer asks for first (the log, the events, the options, the
manifest, the engine report, versions, the GPU) and a listing of it; no model, engine or file contents unless
asked (``include_model``); the user's paths replaced where asked (``redact``)."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import BuildError
from .._files import expand_user, output_stream, utf8
from .._version import __version__
from ._hashes import open_regular

if TYPE_CHECKING:
    from .._build import Build
    from .._gpu import GpuFacts, MemoryAtStart
    from .._json import JSONObject

MAX_TEXT_BYTES = 64 << 20  # a log or a recording is cut here in a bundle (a note says so)
COPY_CHUNK = 1 << 20  # a model's file is copied into a bundle in pieces of this size


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n"


def _read_bounded(path: str | os.PathLike[str]) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TEXT_BYTES + 1)
    except OSError:
        return None
    text = data[:MAX_TEXT_BYTES].decode("utf-8", "backslashreplace")
    return text + (f"\n[trt_widget bundle: cut at {MAX_TEXT_BYTES:,} bytes]\n" if len(data) > MAX_TEXT_BYTES else "")


def versions(build: Build | None = None) -> JSONObject:
    """Python, the platform, TensorRT, trt_widget and the NVIDIA driver (None where unknown)."""
    from .._backend import backend_info, cuda_driver_version
    from .._gpu import gpu_identity

    try:
        tensorrt: JSONObject = {**backend_info()}
    except ImportError as exc:
        tensorrt = {"error": str(exc)}
    gpu = gpu_identity(build.options.device if build is not None else None)
    driver = cuda_driver_version()
    return {
        "python": sys.version,
        "platform": platform.platform(),
        "tensorrt": tensorrt,
        "trt_widget": __version__,
        "driver": gpu.get("driver") if gpu is not None else None,
        "cuda_driver_api": ".".join(map(str, driver)) if driver else None,
    }


def _log_text(build: Build) -> tuple[str, str]:
    """(the log, what it is): the build's log_file when it had one, else the lines it kept."""
    if build.options.log_file:
        text = _read_bounded(build.options.log_file)
        if text is not None:
            return text, "every TensorRT line of the build (its log_file=), VERBOSE included"
    from .._format import escape_controls

    lines = [f"+{r['t']:9.3f}s {r['severity']:<14} {escape_controls(r['message'])}" for r in build.logs]
    return "\n".join(lines) + "\n", "the TensorRT lines the build kept (INFO and worse; give log_file= for all)"


def _events_of(build: Build) -> str:
    """The build's events as JSON lines, from a stream attached now (it replays the phases of an ended build)."""
    from .._events import attach_events

    collected: list[JSONObject] = []
    stream = attach_events(build, collected.append)
    stream.join(10.0)
    return "".join(json.dumps(event, ensure_ascii=False, default=str) + "\n" for event in collected)


def _redactor(build: Build, extra: list[str]) -> Callable[[str], str]:
    """Replace the model's folder, the working directory, the user's home (and ``extra`` folders) in a text."""
    pairs: list[tuple[str, str]] = []
    source = build.source
    if source.kind in ("path", "recording") and isinstance(source.value, str):
        pairs.append((os.path.dirname(os.path.abspath(source.value)), "<model-dir>"))
    pairs += [(folder, "<dir>") for folder in extra]
    pairs.append((os.getcwd(), "<cwd>"))
    home = os.path.expanduser("~")
    if home not in ("", "/"):
        pairs.append((home, "~"))
    from .._format import escape_controls

    # each path also as the JSON members write it (a quote, a backslash, a tab escaped) and as the log does
    spelled = [
        (form, word)
        for path, word in pairs
        for form in (path, json.dumps(path, ensure_ascii=False)[1:-1], json.dumps(path)[1:-1], escape_controls(path))
    ]
    pairs = sorted({p for p in spelled if p[0] not in ("", "/")}, key=lambda p: -len(p[0]))

    def redact(text: str) -> str:
        for path, word in pairs:
            text = text.replace(path, word)
        return text

    return redact


def write_bundle(
    build: Build,
    path: str | os.PathLike[str],
    *,
    include_model: bool = False,
    redact: bool = False,
    events: str | None = None,
    redact_also: list[str] | None = None,
) -> Path:
    """Write ``build``'s bundle to ``path`` (a zip, written atomically by the output-path policy); its path.
    ``events``: the build's JSON lines when the caller recorded them."""
    from .._format import escape_controls
    from .._gpu import gpu_identity

    members: list[tuple[str, bytes, str]] = []  # name, bytes, what it is
    texts: list[tuple[str, str, str]] = []
    log_text, log_what = _log_text(build)
    texts.append(("log.txt", log_text, log_what))
    if events is None:
        events = _events_of(build)
    texts.append(("events.jsonl", events, "the build's JSON events (docs/events.md; replay: trt-widget view)"))
    options = {
        f: getattr(build.options, f) if not callable(getattr(build.options, f)) else repr(getattr(build.options, f))
        for f in build.options.__dataclass_fields__
    }
    texts.append(("options.json", _json(options), "every build option as given"))
    texts.append(("timings.json", _json(build.timings()), "the phases: name, parent, start, end, steps, status"))
    summary = {
        "model": build.source.label,
        "status": build.status,
        "status_detail": build.status_detail,
        "error": str(build.error) if build.error is not None else None,
        "elapsed_s": build.elapsed_s,
        "engine_size": build.engine_size,
        "reused_from": build.reused_from,
        "problems": build.problems,
    }
    texts.append(("build.json", _json(summary), "the outcome: status, detail, error, time, warnings and errors"))
    manifest: JSONObject | None = None
    said = "the engine's manifest (docs/manifest.md); null without one"
    if build.status == "succeeded" and build.engine:
        try:
            manifest = build.manifest(Path(build.options.output or "engine").name)
        except BuildError as exc:  # the model's files changed during the build: nothing vouches for the engine
            said += f" (here: {exc})"
    texts.append(("manifest.json", _json(manifest), said))
    report = build.engine_report
    texts.append(
        (
            "engine_report.json",
            _json(report.to_dict() if report is not None else {"none": build.engine_report_reason}),
            "the engine report (layers, precisions, tactics, memory) or why there is none",
        )
    )
    texts.append(("versions.json", _json(versions(build)), "Python, platform, TensorRT, trt_widget, driver"))
    gpu: dict[str, GpuFacts | MemoryAtStart | None] = {"device": gpu_identity(build.options.device)}
    at_start = build.resources.gpu_at_start() if build.resources is not None else None
    if at_start:
        gpu["at_start"] = at_start
    texts.append(
        ("gpu.json", _json(gpu), "the GPU (name, compute capability, driver; null without one) and its memory")
    )
    files: list[tuple[str, str, int, str, int | None]] = []  # name, file copied in pieces, size now, what, bound
    left_out: list[str] = []  # files the model names that the model-file rule forbids a build to read
    recording_left_out = include_model and redact and build.source.kind == "recording"
    if include_model:
        inputs, left_out = _packable_inputs(build)
        if recording_left_out:  # its paths are the user's, not redacted: events.jsonl holds its events, redacted
            inputs = {}
        for name, (real, what, bound) in inputs.items():
            try:
                size = os.stat(real).st_size
            except OSError:
                continue
            if bound is not None and size > bound:  # refused before the zip is begun: nothing written
                raise FileTooLarge(_too_large(what, real, bound))
            files.append((f"model/{name}", real, size, what, bound))
        if build.source.kind == "bytes" and isinstance(build.source.value, bytes):
            members.append(("model/model.onnx", build.source.value, "the model's ONNX bytes"))
        if build.status == "succeeded" and build.engine:
            members.append(("engine/" + Path(build.options.output or "model.engine").name, build.engine, "the engine"))
    redactor = _redactor(build, redact_also or []) if redact else None
    listing = [
        "trt_widget bug-report bundle",
        f"trt_widget {__version__}; model {escape_controls(build.source.label)}; status {build.status}",
        "",
        "Contents:",
    ]
    encoded = [(n, utf8(redactor(t) if redactor else t), w) for n, t, w in texts]
    for name, size, what in [
        *((n, len(d), w) for n, d, w in [*encoded, *members]),
        *((n, z, w) for n, _, z, w, _b in files),
    ]:
        # a model names its files: the README is read in a terminal, so they are escaped as the log escapes them
        listing.append(f"  {escape_controls(name):<22} {size:>12,} B  {escape_controls(what)}")
    if not include_model:
        listing.append("No model, engine or file contents are included (trt-widget bundle --include-model adds them).")
    for location in left_out[:20]:
        listing.append(
            f"  left out: external data {location[:200]!r}, outside the model's folder (the model-file rule, "
            "docs/security.md: no build reads it)"
        )
    if len(left_out) > 20:
        listing.append(f"  left out: {len(left_out) - 20} more files outside the model's folder")
    if recording_left_out:
        listing.append(
            "  left out: the recording itself, which holds your paths (events.jsonl holds its events, redacted)"
        )
    if redact:
        listing.append("Paths were redacted: the model's folder is <model-dir>, the working directory <cwd>, home ~.")
    readme = "\n".join(listing) + "\n"
    if redactor is not None:
        readme = redactor(readme)
    target = expand_user(path)
    with (
        output_stream(target, "bundle", build) as handle,
        zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive,
    ):
        archive.writestr("README.txt", utf8(readme))
        for name, data, _what in [*encoded, *members]:
            archive.writestr(name, data)
        for name, real, _size, what, bound in files:
            _add_file(archive, name, real, what, bound)
    return target


def _packable_inputs(build: Build) -> tuple[dict[str, tuple[str, str, int | None]], list[str]]:
    """The files ``include_model`` packs (name under ``model/`` -> (real path, what it is, the most bytes read of
    it)), and the locations left out. The model is read as every read of a model is, at most ``MAX_MODEL_BYTES``
    (a link to ``/proc/self/pagemap``, a sparse model of terabytes), a recording as a replay reads it; external
    data have no bound but their own size (a build reads any file in the model's folder) ``_add_file`` keeps.
    The model file or the recording goes under its given name (a link's, not its target's: a Hugging Face
    cache links ``model.onnx`` to ``blobs/<sha256>``), each external-data file under the location the model names,
    relative to the model's folder, so the unpacked model builds again. Only the data the model-file rule lets a
    build read is packed (a file inside the model's folder): a hostile model naming ``/home/me/.ssh/id_rsa``,
    ``../secret`` or a link leading out (which its build refuses) must not carry that file into a shared report."""
    from .._external_data import MAX_MODEL_BYTES, allowed_file, file_locations
    from ..runners import MAX_RECORDING_BYTES

    source = build.source
    if source.kind not in ("path", "recording") or not isinstance(source.value, str):
        return {}, []
    given = os.fspath(expand_user(source.value))
    real_model = os.path.realpath(given)
    if not os.path.isfile(real_model):
        return {}, []
    what = "the model file itself" if source.kind == "path" else "the recording itself"
    bound = MAX_MODEL_BYTES if source.kind == "path" else MAX_RECORDING_BYTES
    inputs: dict[str, tuple[str, str, int | None]] = {
        _member_name(os.path.basename(os.path.normpath(given))): (real_model, what, bound)
    }
    left_out: list[str] = []
    if source.kind == "recording":
        return inputs, left_out
    try:
        locations = file_locations(real_model)[:10_000]
    except Exception:  # an unreadable model names none here; its build said why
        locations = []
    folder = os.path.dirname(os.path.abspath(given))
    for location in locations:
        real = allowed_file(location, folder)
        if real is None:
            left_out.append(location)
        else:  # a relative name without '..' (allowed_file): the same name is the same file, packed once
            inputs.setdefault(
                _member_name(os.path.normpath(location)), (real, f"the model's external data {location!r}", None)
            )
    return inputs, left_out


def _member_name(name: str) -> str:
    """``name`` as a zip member may hold it: a file name that is not UTF-8 (bytes decoded as the file system does)
    escaped (``w\\xff.bin``), so the file is packed (its entry in the README says the name the model uses)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class FileTooLarge(ValueError):
    """A file ``include_model`` would pack is larger than any build reads: the bundle is not written."""


def _too_large(what: str, path: str, bound: int) -> str:
    from .._format import escape_controls

    return (
        f"{escape_controls(path)[:300]} ({what}) is larger than {bound:,} bytes, more than any build reads: "
        "bundle without --include-model"
    )


def _add_file(archive: zipfile.ZipFile, name: str, path: str, what: str, bound: int | None) -> None:
    """Copy the regular file at ``path`` (the real path listed and checked, links resolved) into ``archive`` in
    pieces (a model's external data may be gigabytes); one that cannot be opened now, or whose descriptor lies
    elsewhere now (a name swapped for a link), is left out, as one that could not be read was. At most ``bound``
    bytes are read (`FileTooLarge` past it: a ``/proc`` file whose size says 0), else no more than its size when
    opened (a file growing meanwhile is not followed)."""
    from .._external_data import opened_path

    try:
        source = open(open_regular(path), "rb")  # noqa: SIM115  (closed below)
    except OSError:
        return
    with source:
        # the file listed, checked on the descriptor copied from: a name swapped since for a link leading
        # elsewhere (in a folder another user may write) opens a file at another real path
        if opened_path(source.fileno(), path) != path:
            return
        opened = os.fstat(source.fileno())
        info = zipfile.ZipInfo(name, max(time.localtime(opened.st_mtime)[:6], (1980, 1, 1, 0, 0, 0)))
        info.external_attr = (opened.st_mode & 0xFFFF) << 16
        info.file_size = os.fstat(source.fileno()).st_size
        info.compress_type = zipfile.ZIP_DEFLATED
        if bound is not None and info.file_size > bound:
            raise FileTooLarge(_too_large(what, path, bound))
        left = bound + 1 if bound is not None else info.file_size
        with archive.open(info, "w", force_zip64=max(info.file_size, bound or 0) > (1 << 30)) as member:
            while left > 0 and (block := source.read(min(COPY_CHUNK, left))):
                left -= len(block)
                if bound is not None and left == 0:
                    raise FileTooLarge(_too_large(what, path, bound))
                member.write(block)
