"""Will this engine load here? Its manifest against this machine's TensorRT and GPU, in one line."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ._manifest import ManifestError, read_manifest

BACKEND_NAMES = {"rtx": "TensorRT for RTX", "tensorrt": "NVIDIA TensorRT"}


@dataclass(frozen=True)
class EngineCheck:
    """``loads``: True / False, or None where the manifest cannot tell; ``reason``: the one line that says so."""

    loads: bool | None
    reason: str

    def __str__(self) -> str:
        return self.reason

    def __bool__(self) -> bool:
        return self.loads is True


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def check_engine(
    path: str | os.PathLike[str],
    *,
    backend: dict[str, str] | None = None,
    device: Mapping[str, object] | None = None,
) -> EngineCheck:
    """Whether this machine's TensorRT and GPU can load the engine at ``path`` (read from its manifest), and if
    not, why: another backend (a TensorRT for RTX engine on NVIDIA TensorRT), another TensorRT version (unless it
    was built version-compatible), another compute capability (unless hardware-compatible). ``backend`` /
    ``device``: another machine's facts (``backend_info()``, ``gpu_identity()``), default this one's."""
    try:
        manifest = read_manifest(path)
    except FileNotFoundError:
        return EngineCheck(None, f"{path}: no manifest beside it ({os.fspath(path)}.manifest.json): cannot tell")
    except (ManifestError, OSError) as exc:
        return EngineCheck(None, f"cannot tell: {exc}")
    if backend is None:
        from .._backend import backend_info

        backend = backend_info()
    if device is None:
        from .._gpu import gpu_identity

        device = gpu_identity()
    problem = manifest.verify()
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
        if _major_minor(version) > _major_minor(here):
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
    note = " (TensorRT for RTX finishes it for this GPU when loaded)" if theirs == "rtx" else ""
    return EngineCheck(True, f"loads: {BACKEND_NAMES.get(mine, mine)} {here} built it{note}")
