"""Reuse: find an engine whose manifest matches everything that determines the engine, at ``output=`` or in the
engine cache directory, and check its bytes against the manifest before trusting it."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .._files import WrittenFile, expand_user, part_path, place_file, write_part
from ._manifest import JSON, ManifestError, differences, read_manifest

ENGINE_SUFFIX = ".engine"


def default_reuse_dir() -> Path:
    """``$XDG_CACHE_HOME/trt_widget/engines``, else ``~/.cache/trt_widget/engines``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trt_widget" / "engines"


def reuse_dir_of(option: str | None) -> Path:
    """The engine cache directory ``reuse_dir=`` names (its default when None)."""
    return expand_user(option) if option else default_reuse_dir()


def cache_entry(directory: Path, key: str) -> Path:
    """The engine file of ``key`` in the cache directory."""
    return directory / f"{key}{ENGINE_SUFFIX}"


@dataclass(frozen=True)
class Found:
    """What a search for a reusable engine found: the engine (a file or bytes) and where, or why none was used."""

    path: Path | None
    engine: WrittenFile | None  # the file at output= itself
    data: bytes | None  # an engine read from the cache (already checked)
    misses: tuple[str, ...]  # why each candidate was not used
    warnings: tuple[str, ...]  # corrupt or foreign entries ignored


def _read_checked(path: Path, sha256: str, size: int) -> tuple[bytes, os.stat_result] | None:
    """The file's bytes and identity when they are exactly what the manifest says, else None."""
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_size != size:
            return None
        data = handle.read(size + 1)
    if len(data) != size or hashlib.sha256(data).hexdigest() != sha256:
        return None
    return data, info


def find_reusable(candidates: list[Path], key: str, identity: dict[str, JSON]) -> Found:
    """The first candidate engine whose manifest has ``key`` and whose bytes match it."""
    misses: list[str] = []
    warnings: list[str] = []
    for path in candidates:
        try:
            manifest = read_manifest(path)
        except FileNotFoundError:
            if path.exists():
                misses.append(f"{path} has no manifest")
            continue
        except (ManifestError, OSError) as exc:
            warnings.append(f"ignored {path}: {exc}")
            continue
        if manifest.key != key:
            said = differences(identity, manifest.identity) or ["its key"]
            misses.append(f"{path} differs: {'; '.join(said)}")
            continue
        if manifest.engine_file != path.name:
            warnings.append(f"ignored {path}: its manifest describes {manifest.engine_file!r}")
            continue
        try:
            checked = _read_checked(path, manifest.engine_sha256, manifest.engine_size)
        except OSError as exc:
            warnings.append(f"ignored {path}: cannot read it ({exc.strerror or exc})")
            continue
        if checked is None:
            warnings.append(f"ignored {path}: the engine does not match its manifest's sha256 (corrupt or replaced)")
            continue
        data, info = checked
        written = WrittenFile(path, info.st_size, (info.st_dev, info.st_ino, info.st_mtime_ns))
        return Found(path, written, data, tuple(misses), tuple(warnings))
    return Found(None, None, None, tuple(misses), tuple(warnings))


def copy_into_place(source: Path | bytes, target: str | os.PathLike[str]) -> WrittenFile:
    """Put a copy of ``source`` (a file or bytes) at ``target`` atomically: a concurrent reader sees the old file
    or the whole new one, and two writers of one entry never mix their bytes."""
    part = part_path(target)
    try:
        if isinstance(source, bytes):
            write_part(part, source)
        else:
            write_part(part, b"")
            shutil.copyfile(source, part)
        return place_file(part, target, sync=False)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise
