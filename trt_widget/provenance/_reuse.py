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
from ._manifest import JSON, ManifestError, differences, manifest_path, read_manifest

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


Identity = tuple[int, int, int, int]  # device, inode, size, modification time (ns) of a file as hashed


@dataclass(frozen=True)
class Found:
    """What a search for a reusable engine found: the engine file, checked, and where; or why none was used."""

    path: Path | None
    engine: WrittenFile | None  # the file found, known by its identity
    misses: tuple[str, ...]  # why each candidate was not used
    warnings: tuple[str, ...]  # corrupt or foreign entries ignored
    sha256: str = ""  # the engine's, checked


def _identity(info: os.stat_result) -> Identity:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def prehash(path: str | os.PathLike[str]) -> dict[Identity, str]:
    """{identity: sha256} of a file, hashed ahead (on another thread while the model is hashed); {} if unreadable."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            digest = hashlib.sha256()
            while block := handle.read(1 << 20):
                digest.update(block)
            if _identity(os.fstat(handle.fileno())) != _identity(info):
                return {}
        return {_identity(info): digest.hexdigest()}
    except OSError:
        return {}


def _checked(path: Path, sha256: str, size: int, known: dict[Identity, str]) -> os.stat_result | None:
    """The file's identity when its bytes are exactly what the manifest says (hashed now, or ahead), else None."""
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_size != size:
            return None
        digest = known.get(_identity(info))
        if digest is None:
            hasher = hashlib.sha256()
            while block := handle.read(1 << 20):
                hasher.update(block)
            digest = hasher.hexdigest()
    return info if digest == sha256 else None


def _strangers(path: Path) -> str:
    """The engine or manifest file of ``path`` that another user owns ("" when none): never reused, whatever its
    manifest says (anyone who can write a shared cache folder could plant a consistent pair)."""
    if os.name != "posix":
        return ""
    for candidate in (path, manifest_path(path)):
        try:
            owner = os.stat(candidate).st_uid
        except OSError:
            continue
        if owner not in (os.geteuid(), 0):
            return str(candidate)
    return ""


def find_reusable(
    candidates: list[Path], key: str, identity: dict[str, JSON], known: dict[Identity, str] | None = None
) -> Found:
    """The first candidate engine whose manifest has ``key`` and whose bytes match it (``known``: files hashed
    ahead, by identity)."""
    misses: list[str] = []
    warnings: list[str] = []
    for path in candidates:
        stranger = _strangers(path)
        if stranger:
            warnings.append(f"ignored {path}: {stranger} is owned by another user (an engine is code this user runs)")
            continue
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
            info = _checked(path, manifest.engine_sha256, manifest.engine_size, known or {})
        except OSError as exc:
            warnings.append(f"ignored {path}: cannot read it ({exc.strerror or exc})")
            continue
        if info is None:
            warnings.append(f"ignored {path}: the engine does not match its manifest's sha256 (corrupt or replaced)")
            continue
        written = WrittenFile(path, info.st_size, (info.st_dev, info.st_ino, info.st_mtime_ns))
        return Found(path, written, tuple(misses), tuple(warnings), manifest.engine_sha256)
    return Found(None, None, tuple(misses), tuple(warnings))


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
