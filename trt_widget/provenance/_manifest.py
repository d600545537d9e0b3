"""The manifest beside an engine (``<engine>.manifest.json``): where the engine came from and what decided it.

Its ``identity`` holds everything that determines the engine (TensorRT's backend and version, the GPU, the
engine-shaping options, the model's content hash with its external data, the plugin libraries' hashes); ``key`` is
the sha256 of that identity, what :mod:`reuse <trt_widget.provenance._reuse>` compares. The rest records the build
(when, how long, the timing cache, the engine report's summary, trt_widget's version).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, Union

from .._external_data import stat_key
from .._files import expand_user, utf8, write_output
from .._json import MAX_COUNT, json_int, json_number  # MAX_COUNT: a larger size or count is read as absent
from .._version import __version__
from ._hashes import HashCache, Hashed, NotRegularFile, open_regular, read_sha256

if TYPE_CHECKING:
    from .._build import Build
    from ..engine import EngineReport

JSON: TypeAlias = Union[bool, int, float, str, list["JSON"], dict[str, "JSON"], None]  # noqa: UP007  (recursive)

FORMAT = "trt_widget.manifest"
FORMAT_VERSION = 1
SUFFIX = ".manifest.json"
MAX_MANIFEST_BYTES = 4 << 20  # a manifest is a few KiB; a bigger file is not one
MAX_BUILD_S = 366 * 86_400.0  # a build's duration: a year at most
SHA256 = re.compile(r"[0-9a-fA-F]{64}")
REQUIRED = ("format", "version", "key", "identity", "engine", "tensorrt", "trt_widget", "built_at")


class ManifestError(ValueError):
    """A file that is not a trt_widget manifest, or a corrupt one: the message names the file and what is wrong."""


def manifest_path(engine: str | os.PathLike[str]) -> Path:
    """Where the manifest of the engine file ``engine`` lies: ``<engine>.manifest.json`` beside it (the engine's
    whole name kept, so ``model.engine`` and ``model.plan`` never share one)."""
    path = expand_user(engine)
    return path.with_name(path.name + SUFFIX)


def file_sha256(path: str | os.PathLike[str], *, size: int | None = None) -> tuple[str, int]:
    """(sha256 hex, size) of a regular file, read in 1 MiB blocks; OSError for a FIFO or a device (a timing cache
    or an engine swapped for one since it was checked: a FIFO held ``open`` for ever, ``/dev/zero`` never ended).
    ``size``: the size expected (a manifest's): a file of another size (``fstat`` of the file opened) is not read
    (sha256 ""), and no more than one byte past it is read (a ``/proc`` file whose size says 0), as reuse does."""
    with open(open_regular(path), "rb") as handle:
        actual = os.fstat(handle.fileno()).st_size
        if size is not None and actual != size:
            return "", actual
        return read_sha256(handle, size)


def model_identity(
    source: object, hashes: HashCache | None = None, keys: dict[str, str | None] | None = None
) -> dict[str, JSON] | None:
    """The content hash of a model: its bytes, and each external-data file it names (by location, in order).
    None for a network function (its code is not seen) or a model that cannot be read. ``hashes``: hashes
    remembered by each file's stat (the engine cache's), so an unchanged model is not read again. ``keys``: filled
    with the key of each file hashed (``_external_data.MODEL_FILE``, each location: its stat key, or the hash of
    its bytes where another user may write it: ``vouching_key``), for a build to compare with the files it read."""
    kind, value = getattr(source, "kind", None), getattr(source, "value", None)
    if kind == "bytes" and isinstance(value, bytes):
        return {"sha256": hashlib.sha256(value).hexdigest(), "size": len(value), "external_data": []}
    if kind != "path" or not isinstance(value, str):
        return None
    hashes = hashes if hashes is not None else HashCache(None)
    from .._external_data import MODEL_FILE, allowed_file, vouching_key

    keys = keys if keys is not None else {}
    try:
        began = time.time_ns()
        model, info = _model_file(value, hashes)
    except Exception:
        return None
    keys[MODEL_FILE] = vouching_key(info, model.sha256, value, began)

    directory = getattr(source, "directory", None)  # None: no file may be named (an upload to serve, Ray)
    locations = model.locations or ()
    external: list[JSON] = []
    whole = hashlib.sha256(f"model:{model.sha256}\n".encode())
    for location in locations:
        # only what the model-file rule lets a build read: a file named outside (``/etc/shadow``, ``../x``, a link
        # leading out, any file for an upload) is never read to be hashed; the build refuses the model, saying why
        real = allowed_file(location, directory) if isinstance(directory, str) else None
        if real is None:
            return None
        try:
            began = time.time_ns()
            data, info = hashes.file(real)
        except OSError:
            return None  # the build says why
        key = vouching_key(info, data.sha256, real, began)
        keys[location] = key if keys.get(location, key) == key else None  # one location named twice: one file
        external.append({"location": location, "sha256": data.sha256, "size": data.size})
        whole.update(f"{location}\0{data.sha256}\n".encode(errors="surrogateescape"))
    return {
        "sha256": whole.hexdigest() if locations else model.sha256,
        "file_sha256": model.sha256,
        "size": model.size,
        "external_data": external,
    }


def _model_file(path: str, hashes: HashCache) -> tuple[Hashed, os.stat_result]:
    """The model file's hash and the external-data locations it names (remembered, or read once for both), and
    the file's stat."""
    from .._external_data import external_locations, open_model, read_model, remember_locations, stat_vouches

    with open(open_model(path), "rb") as handle:  # a regular file, opened without blocking, read bounded
        info = os.fstat(handle.fileno())
        # a file another user may write: read now (its stat may stay the same while its bytes change: D24-1)
        known = hashes.lookup(info) if stat_vouches(info, handle.fileno(), time.time_ns()) else None
        if known is not None and known.locations is not None:
            return known, info
        began = time.time_ns()
        data = read_model(handle, path)
        if stat_key(os.fstat(handle.fileno())) != stat_key(info) or len(data) != info.st_size:
            raise OSError(f"{path} changed while it was read")
    model = Hashed(hashlib.sha256(data).hexdigest(), len(data), tuple(external_locations(data)))
    hashes.remember(info, began, model)
    remember_locations(info, began, model.locations or ())
    return model, info


def identity_of(build: Build, model: dict[str, JSON] | None, hashes: HashCache | None = None) -> dict[str, JSON]:
    """What determines ``build``'s engine (JSON-ready): backend and version, GPU, options, model, plugins
    (``hashes``: remembered file hashes, see :func:`model_identity`)."""
    from .._backend import backend_info
    from .._gpu import gpu_identity

    info = backend_info()
    gpu = gpu_identity(build.options.device)
    plugins: list[JSON] = []
    for path in build.options.plugins:
        try:
            plugins.append({"path": path, "sha256": (hashes or HashCache(None)).file(path)[0].sha256})
        except OSError:
            plugins.append({"path": path, "sha256": None})
    options = json.loads(json.dumps(build.options.summary(), sort_keys=True, default=str))
    options.pop("plugins", None)  # by content below, not by path
    return {
        "backend": info["backend"],
        "tensorrt_version": info["version"],
        "device": (
            {"name": gpu.get("name"), "compute_capability": gpu.get("compute_capability")} if gpu is not None else None
        ),
        "options": options,
        "model": model.get("sha256") if model is not None else None,
        "plugins": plugins,
    }


def key_of(identity: Mapping[str, JSON]) -> str:
    """sha256 of an identity (its JSON with sorted keys)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def differences(wanted: Mapping[str, JSON], found: Mapping[str, JSON]) -> list[str]:
    """What differs between two identities, in words ("the model's content", "option fp16: False -> True")."""
    said: list[str] = []
    labels = {
        "backend": "TensorRT backend",
        "tensorrt_version": "TensorRT version",
        "device": "GPU",
        "model": "the model's content (or its external data)",
        "plugins": "the plugin libraries",
    }
    for name, label in labels.items():
        if wanted.get(name) != found.get(name):
            if name == "model":
                said.append(label)
            else:
                said.append(f"{label}: {_short(found.get(name))} -> {_short(wanted.get(name))}")
    mine, theirs = wanted.get("options"), found.get("options")
    mine = mine if isinstance(mine, dict) else {}
    theirs = theirs if isinstance(theirs, dict) else {}
    for name in sorted(set(mine) | set(theirs)):
        if mine.get(name) != theirs.get(name):
            said.append(f"option {name}: {_short(theirs.get(name))} -> {_short(mine.get(name))}")
    return said


def _short(value: JSON) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:79] + "…"


@dataclass(frozen=True)
class Manifest:
    """A parsed, validated manifest (:func:`read_manifest`); ``data`` is the whole JSON object (a number or a
    model sha256 no build could have written, outside its identity, read as null)."""

    path: Path
    key: str
    identity: dict[str, JSON]
    engine_sha256: str
    engine_size: int
    engine_file: str
    backend: str
    tensorrt_version: str
    device: dict[str, JSON] | None
    options: dict[str, JSON]
    trt_widget_version: str
    built_at: str
    build_s: float | None
    hardware_compatibility: str | None
    version_compatible: bool
    engine_report: dict[str, JSON] | None
    data: dict[str, JSON] = field(repr=False)

    def engine_path(self) -> Path:
        """The engine this manifest describes: the file beside it whose name it records."""
        return self.path.with_name(self.engine_file)

    def names_other(self, path: str | os.PathLike[str]) -> str:
        """Why this manifest does not describe the engine at ``path`` ("" when it does): it names another file (a
        manifest copied beside a renamed or replaced engine). The one rule of ``check``, ``inspect`` and reuse."""
        name = os.path.basename(os.fspath(path))
        if name.endswith(SUFFIX) or name == self.engine_file:  # the manifest itself, or the engine it names
            return ""
        return f"its manifest describes another engine, {self.engine_file}"

    def verify(self, engine: str | os.PathLike[str] | None = None) -> str:
        """Why the engine file does not match this manifest ("" when its size and sha256 match)."""
        path = Path(engine) if engine is not None else self.engine_path()
        try:
            digest, size = file_sha256(path, size=self.engine_size)
        except OSError as exc:
            return f"cannot read {path}: {exc.strerror or exc}"
        if size != self.engine_size or digest != self.engine_sha256:
            return f"{path} is not the engine {self.path.name} describes (its sha256 or size differs)"
        return ""


def _need(data: Mapping[str, JSON], name: str, kind: type | tuple[type, ...], where: Path) -> JSON:
    value = data.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ManifestError(f"{where}: a trt_widget manifest's {name!r} is missing or of the wrong type")
    return value


def read_manifest(path: str | os.PathLike[str], *, owners: tuple[int, ...] | None = None) -> Manifest:
    """Read and check a manifest: the ``.manifest.json`` file itself, or the engine it lies beside.

    Raises FileNotFoundError when there is none, :class:`ManifestError` when the file is not a trt_widget manifest
    (another tool's JSON, a corrupt or truncated file, a newer format); with ``owners``, ``ForeignFile`` for a link
    or a file of another owner (an engine cache's)."""
    where = expand_user(path)
    if not where.name.endswith(SUFFIX):
        where = manifest_path(where)
    try:
        fd = open_regular(where, owners=owners)
    except NotRegularFile:  # a FIFO, a device, a folder: never waited on or read
        raise ManifestError(f"{where}: not a regular file, not a trt_widget manifest") from None
    with open(fd, "rb") as handle:
        raw = handle.read(MAX_MANIFEST_BYTES + 1)
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"{where}: larger than {MAX_MANIFEST_BYTES:,} bytes, not a trt_widget manifest")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # ValueError: also a number of 4,300+ digits
        said = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
        raise ManifestError(f"{where}: not a trt_widget manifest (not JSON: {said})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ManifestError(f'{where}: not a trt_widget manifest (no "format": "{FORMAT}")')
    version = data.get("version")
    if not json_int(version):
        raise ManifestError(f"{where}: a trt_widget manifest without a version number")
    if version > FORMAT_VERSION:
        raise ManifestError(
            f"{where}: manifest format {version} is newer than this trt_widget reads ({FORMAT_VERSION}): upgrade"
        )
    for name in REQUIRED:
        if name not in data:
            raise ManifestError(f"{where}: a trt_widget manifest without {name!r} (corrupt or truncated?)")
    identity = _need(data, "identity", dict, where)
    engine = _need(data, "engine", dict, where)
    tensorrt = _need(data, "tensorrt", dict, where)
    assert isinstance(identity, dict) and isinstance(engine, dict) and isinstance(tensorrt, dict)
    key = _need(data, "key", str, where)
    if key != key_of(identity):
        raise ManifestError(f"{where}: its key does not match its identity (edited or corrupt)")
    sha = _need(engine, "sha256", str, where)
    size = _need(engine, "size", int, where)
    file = _need(engine, "file", str, where)
    assert isinstance(sha, str) and isinstance(size, int) and isinstance(file, str) and isinstance(key, str)
    if _number(size, MAX_COUNT) is None:  # its digits are not shown: a hostile one may have 4,000
        raise ManifestError(f"{where}: the engine's size it records is not a file's size (corrupt or edited)")
    if os.path.basename(file) != file or file in ("", ".", "..") or "\0" in file:  # NUL: no file has it
        raise ManifestError(f"{where}: the engine's file name {file!r} is not a plain file name")
    data = _shown(data)
    options = identity.get("options")
    device = identity.get("device")
    seconds = data.get("build_s")
    report = data.get("engine_report")
    level = options.get("hardware_compatibility") if isinstance(options, dict) else None
    return Manifest(
        path=where,
        key=key,
        identity=identity,
        engine_sha256=sha,
        engine_size=size,
        engine_file=file,
        backend=str(tensorrt.get("backend", "")),
        tensorrt_version=str(tensorrt.get("version", "")),
        device=device if isinstance(device, dict) else None,
        options=options if isinstance(options, dict) else {},
        trt_widget_version=str(data.get("trt_widget")),
        built_at=str(data.get("built_at")),
        build_s=float(seconds) if isinstance(seconds, (int, float)) else None,  # _shown: a bool is None
        hardware_compatibility=str(level) if level is not None else None,
        version_compatible=bool(options.get("version_compatible")) if isinstance(options, dict) else False,
        engine_report=report if isinstance(report, dict) else None,
        data=data,
    )


def _number(value: JSON, limit: float) -> int | float | None:
    """``value`` where it is a finite number from 0 up to ``limit`` (excluded), else None."""
    if not json_number(value):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if 0 <= value < limit else None


def _counts(value: JSON, depth: int = 0) -> JSON:
    """``value`` (an engine report's summary) with every number that is not a size or a count read as null; what
    lies deeper than any count it holds is kept as it is (nothing shows it)."""
    if json_number(value):
        return _number(value, MAX_COUNT)
    if depth >= 3:
        return value
    if isinstance(value, dict):
        return {k: _counts(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_counts(v, depth + 1) for v in value]
    return value


def _shown(data: dict[str, JSON]) -> dict[str, JSON]:
    """``data`` with what is shown of it read as absent (null) where no build made it: a build time that is not a
    duration up to a year (NaN, negative, 1e308, 4,000 digits), a model size and an engine report's sizes and
    counts outside 0..2**63, a model sha256 that is not 64 hex digits. The manifest travels with a downloaded
    engine: such a number ended ``inspect`` and ``check`` in an OverflowError, and a sha held a forged line."""
    shown = dict(data)
    if "build_s" in shown:
        shown["build_s"] = _number(shown["build_s"], MAX_BUILD_S)
    model = shown.get("model")
    if isinstance(model, dict):
        model = dict(model)
        if "size" in model:
            model["size"] = _number(model["size"], MAX_COUNT)
        sha = model.get("sha256")
        if sha is not None and not (isinstance(sha, str) and SHA256.fullmatch(sha)):
            model["sha256"] = None
        shown["model"] = model
    if "engine_report" in shown:
        shown["engine_report"] = _counts(shown["engine_report"])
    return shown


def make_manifest(
    build: Build,
    engine_file: str,
    engine_sha256: str,
    engine_size: int,
    identity: dict[str, JSON],
    model: dict[str, JSON] | None,
    *,
    report: EngineReport | None,
    reused_from: str | None = None,
) -> dict[str, JSON]:
    """The manifest of ``build``'s engine (JSON-ready); ``report``: its engine report, if any."""
    from .._backend import backend_info
    from .._gpu import gpu_identity

    cache = build.options.timing_cache
    timing_cache = _timing_cache_record(cache) if cache else None
    gpu = gpu_identity(build.options.device)
    built = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    info = backend_info()
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "key": key_of(identity),
        "identity": identity,
        "engine": {"file": engine_file, "sha256": engine_sha256, "size": engine_size},
        "tensorrt": {"backend": info["backend"], "module": info["module"], "version": info["version"]},
        "device": dict(gpu) if gpu is not None else None,
        "model": {"label": build.source.label, "kind": build.source.kind, **(model or {})},
        "options": json.loads(json.dumps(build.options.summary(), default=str)),
        "timing_cache": timing_cache,
        "plugins": identity.get("plugins", []),
        "trt_widget": __version__,
        "built_at": built.isoformat().replace("+00:00", "Z"),
        "build_s": round(build.elapsed_s, 3),
        "reused_from": reused_from,
        "engine_report": report.brief() if report is not None else None,
    }


def _timing_cache_record(cache: str) -> dict[str, JSON]:
    """The manifest's record of the timing cache: its sha256 and size, or sha256 null and ``not_hashed`` saying why.
    Read by the timing cache's own rules (a regular file, opened without blocking, at most 1 GiB, no byte past its
    size): a sparse file of terabytes or a ``/proc`` file named as the cache never holds the finished build."""
    from .._engine import TIMING_CACHE_LIMIT

    size: int | None = None
    try:
        with open(open_regular(cache), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > TIMING_CACHE_LIMIT:
                why = f"larger than {TIMING_CACHE_LIMIT:,} bytes (not a timing cache)"
            else:
                digest, read = read_sha256(handle, size)
                if read == size:
                    return {"path": cache, "sha256": digest, "size": size}
                why = "its size is not what it holds (changed while it was read, or not a file on disk)"
    except NotRegularFile:
        why = "not a regular file"
    except OSError as exc:
        why = f"cannot be read ({exc.strerror or exc})"
    return {"path": cache, "sha256": None, "size": size, "not_hashed": why}


def write_manifest(engine: str | os.PathLike[str], manifest: Mapping[str, JSON], build: object = None) -> Path:
    """Write ``manifest`` beside the engine file ``engine`` by the one output-path policy (atomically), with the
    engine's permissions and group: a private engine's manifest is private too. A lone surrogate (a path that is not
    UTF-8; only ever inside a JSON string) is written as its ``\\udcff`` escape, the same JSON value."""
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    return write_output(manifest_path(engine), utf8(text), "manifest", build, like=engine)
