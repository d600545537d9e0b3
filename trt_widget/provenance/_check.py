"""Will this engine load here? Its manifest (or, without one, the header of a TensorRT for RTX engine) against this
machine's TensorRT and GPU, in one line."""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from .._format import escape_controls
from ._hashes import open_regular
from ._manifest import SUFFIX, ManifestError, read_manifest

BACKEND_NAMES = {"rtx": "TensorRT for RTX", "tensorrt": "NVIDIA TensorRT"}


# what a reason begins with: a manifest's verdicts, and a header's that matches this TensorRT for RTX (nothing loaded).
# "compatible" (``loads`` True): the manifest matches this machine; the engine itself is never loaded by a check.
VERDICTS = ("compatible", "does not load", "cannot tell", "header matches", "not found")


@dataclass(frozen=True)
class EngineCheck:
    """``loads``: True / False, or None where nothing can tell (or only a header matches); ``reason``: the one line
    that says so, beginning with its ``verdict``."""

    loads: bool | None
    reason: str

    @property
    def verdict(self) -> str:
        """``compatible``, ``does not load``, ``cannot tell``, ``header matches`` (``loads`` None: only a TensorRT for
        RTX engine's header and size were read, and they match this machine's TensorRT for RTX), or ``not found``."""
        return next((verdict for verdict in VERDICTS if self.reason.startswith(verdict)), "cannot tell")

    def __str__(self) -> str:
        return self.reason

    def __bool__(self) -> bool:
        return self.loads is True


# What the first bytes of an engine say, where that can be verified: TensorRT for RTX 1.7's engines, built here,
# begin with b"vtrt", hold the file's size as a little-endian uint64 at byte 16 and the version of TensorRT for RTX
# that built them, one byte per part (1.7.1.116), at bytes 24-27. NVIDIA TensorRT documents no engine header and
# offers no API to read one (NVIDIA/TensorRT#3073), and no NVIDIA engine can be built here: its engines are not read.
RTX_MAGIC = b"vtrt"
HEADER_BYTES = 28


@dataclass(frozen=True)
class EngineHeader:
    """What an engine's first bytes say: the backend that built it, its version and the engine's whole size."""

    backend: str
    version: str
    size: int


def read_engine_header(path: str | os.PathLike[str]) -> EngineHeader | None:
    """The header of a TensorRT for RTX engine file (its first 28 bytes), or None for any other file (an NVIDIA
    TensorRT engine among them: its header is not documented). OSError when the file cannot be read."""
    with open(open_regular(path), "rb") as handle:
        head = handle.read(HEADER_BYTES)
    if len(head) < HEADER_BYTES or head[:4] != RTX_MAGIC:
        return None
    (size,) = struct.unpack_from("<Q", head, 16)
    return EngineHeader("rtx", ".".join(str(part) for part in head[24:28]), size)


def _from_header(path: str | os.PathLike[str], backend: dict[str, str] | None) -> EngineCheck:
    """check_engine for an engine without a manifest: what its header says, or that it cannot tell."""
    try:
        header = read_engine_header(path)
        actual = os.stat(path).st_size
    except OSError as exc:
        return EngineCheck(None, f"cannot tell: cannot read {path} ({exc.strerror or exc})")
    if header is None:
        return EngineCheck(
            None,
            f"cannot tell: no manifest beside it ({os.fspath(path)}.manifest.json), and it does not begin as a "
            "TensorRT for RTX engine does (NVIDIA TensorRT documents no engine header to read)",
        )
    if header.size != actual:
        return EngineCheck(
            False, f"does not load: its header says {header.size:,} bytes, the file has {actual:,} (truncated?)"
        )
    if backend is None:
        from .._backend import backend_info

        backend = backend_info()
    mine, here = backend.get("backend", ""), backend.get("version", "")
    said = f"a TensorRT for RTX {header.version} engine (its header; no manifest)"
    if mine != "rtx":
        return EngineCheck(
            False, f"does not load: {said}; this machine has {BACKEND_NAMES.get(mine, mine)}, which cannot load it"
        )
    if header.version != here:
        return EngineCheck(
            None,
            f"cannot tell: {said}, this machine has {here}: it loads only if built version_compatible, which only "
            "a manifest records",
        )
    return EngineCheck(  # 28 bytes and a size say nothing of the rest: a copied header passes them
        None,
        f"header matches this TensorRT for RTX {here} (not loaded: only its {HEADER_BYTES}-byte header and its size "
        f"were read, and no manifest beside it records the engine's sha256)",
    )


def _major_minor(version: str) -> tuple[int, int] | None:
    """(major, minor) as numbers (10.13 is newer than 10.9), None when ``version`` does not begin with both."""
    parts = version.split(".")[:2]
    if len(parts) != 2 or not all(part.isascii() and part.isdigit() and len(part) <= 9 for part in parts):
        return None
    return int(parts[0]), int(parts[1])


def check_engine(
    path: str | os.PathLike[str],
    *,
    backend: dict[str, str] | None = None,
    device: Mapping[str, object] | None = None,
) -> EngineCheck:
    """Whether this machine's TensorRT and GPU can load the engine at ``path`` (read from its manifest), and if
    not, why: another backend (a TensorRT for RTX engine on NVIDIA TensorRT), another TensorRT version (unless it
    was built version-compatible), another compute capability (unless hardware-compatible). ``backend`` /
    ``device``: another machine's facts (``backend_info()``, ``gpu_identity()``), default this one's. Without a
    manifest, a TensorRT for RTX engine's header says its backend and version (:func:`read_engine_header`): at best
    "header matches" (``loads`` None), since 28 bytes and a size say nothing of the rest of the file."""
    result = _check(path, backend, device)
    # the reason quotes the manifest (its TensorRT version, GPU name, compute capability: untrusted, as the engine
    # is) and the path: one line, every control character escaped, so a newline in them forges no second line
    return EngineCheck(result.loads, escape_controls(result.reason))


def _check(
    path: str | os.PathLike[str], backend: dict[str, str] | None, device: Mapping[str, object] | None
) -> EngineCheck:
    """:func:`check_engine`'s answer, its reason not yet escaped."""
    if not os.path.lexists(path):  # a mistyped name: no engine loads, whatever a manifest beside it says
        return EngineCheck(False, "not found: no such file")
    if os.path.isdir(path):  # "." and "/" have no name to put a manifest beside (a ValueError traceback)
        return EngineCheck(None, f"cannot tell: cannot read {os.fspath(path)} (a folder: not a regular file)")
    try:
        manifest = read_manifest(path)
    except FileNotFoundError:
        return _from_header(path, backend)
    except (ManifestError, OSError) as exc:
        return EngineCheck(None, f"cannot tell: {exc}")
    if backend is None:
        from .._backend import backend_info

        backend = backend_info()
    if device is None:
        from .._gpu import gpu_identity

        device = gpu_identity()
    problem = manifest.verify(None if os.fspath(path).endswith(SUFFIX) else path)
    other = manifest.names_other(path)
    if other and problem:  # a manifest beside another file: it speaks of this one only where its bytes match (a copy)
        return EngineCheck(
            None,
            f"cannot tell: {other}, not {os.path.basename(os.fspath(path))}; build it again, or remove the manifest "
            "to check the file's own header",
        )
    if problem and os.path.isfile(path) and os.access(path, os.R_OK):  # a readable file another tool wrote over
        return EngineCheck(  # what the stale manifest says is about another engine: nothing says this one fails
            None,
            f"cannot tell: its manifest {manifest.path.name} describes another engine (its sha256 or size differs): "
            "the file was replaced after the build, so the manifest is stale; build it again, or remove the "
            "manifest to check the file's own header",
        )
    if problem:
        return EngineCheck(False, f"does not load: {problem}")
    theirs, mine = manifest.backend, backend.get("backend", "")
    if theirs != mine:
        return EngineCheck(
            False,
            f"does not load: a {BACKEND_NAMES.get(theirs, theirs)} engine; this machine has "
            f"{BACKEND_NAMES.get(mine, mine)}, which cannot load it",
        )
    version, here = manifest.tensorrt_version, backend.get("version", "")
    if version != here:
        if not manifest.version_compatible:
            return EngineCheck(
                False,
                f"does not load: built with TensorRT {version}, this machine has {here} (an engine loads only on "
                "the version that built it unless built version_compatible)",
            )
        theirs_mm, here_mm = _major_minor(version), _major_minor(here)
        if theirs_mm is None or here_mm is None:
            return EngineCheck(
                None, f"cannot tell: a version-compatible engine of TensorRT {version!r}, this machine has {here!r}"
            )
        if theirs_mm > here_mm:
            return EngineCheck(
                False, f"does not load: a version-compatible engine of TensorRT {version} needs {version} or newer"
            )
    built_on = manifest.device or {}
    capability = built_on.get("compute_capability")
    level = (manifest.hardware_compatibility or "none").lower()
    if theirs == "tensorrt" and capability is not None:
        if device is None:
            return EngineCheck(None, f"cannot tell: built for compute capability {capability}; no GPU found here")
        current = device.get("compute_capability")
        if current is not None and current != capability:
            if level != "ampere_plus":
                return EngineCheck(
                    False,
                    f"does not load: built for compute capability {capability} ({built_on.get('name')}), this GPU "
                    f"is {current} ({device.get('name')}); build with hardware_compatibility for several GPUs",
                )
            if float(str(current)) < 8.0:
                return EngineCheck(
                    False,
                    f"does not load: an ampere_plus engine needs compute capability 8.0 or newer, this is {current}",
                )
    # nothing is loaded: say what was compared, and why no load was tried (no GPU here, or a check never loads)
    how = "not loaded: no GPU here" if device is None else "not loaded: its manifest was checked, not the engine run"
    note = "; TensorRT for RTX finishes it for the GPU when loaded" if theirs == "rtx" else ""
    return EngineCheck(
        True, f"compatible with this {BACKEND_NAMES.get(mine, mine)} {here}: {version} built it ({how}{note})"
    )
