"""Reuse: find an engine whose manifest matches everything that determines the engine, at ``output=`` or in the
engine cache directory, and check its bytes against the manifest before trusting it."""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .._files import WrittenFile, expand_user, part_path, place_file, write_part, xdg_home
from ._hashes import ForeignFile, HashCache, trusted_owners
from ._manifest import JSON, ManifestError, differences, read_manifest

ENGINE_SUFFIX = ".engine"


def default_reuse_dir() -> Path:
    """``$XDG_CACHE_HOME/trt_widget/engines``, else ``~/.cache/trt_widget/engines``."""
    return xdg_home("XDG_CACHE_HOME", ".cache") / "trt_widget" / "engines"


def reuse_dir_of(option: str | None) -> Path:
    """The engine cache directory ``reuse_dir=`` names (its default when None)."""
    return expand_user(option) if option else default_reuse_dir()


def cache_entry(directory: Path, key: str) -> Path:
    """The engine file of ``key`` in the cache directory."""
    return directory / f"{key}{ENGINE_SUFFIX}"


@dataclass(frozen=True)
class Found:
    """What a search for a reusable engine found: the engine file, checked, and where; or why none was used."""

    path: Path | None
    engine: WrittenFile | None  # the file found, known by its identity
    misses: tuple[str, ...]  # why each candidate was not used
    warnings: tuple[str, ...]  # corrupt or foreign entries ignored
    sha256: str = ""  # the engine's, checked


def _checked(path: Path, sha256: str, size: int, hashes: HashCache) -> os.stat_result | None:
    """The file's stat (of the file read, this user's) when its bytes are exactly what the manifest says
    (remembered by its stat, or read now), else None; ForeignFile for a link or another user's file."""
    if os.stat(path).st_size != size:
        return None  # not worth reading
    hashed, info = hashes.file(path, owners=trusted_owners(), size=size)  # the file opened: its size again
    return info if hashed.sha256 == sha256 and hashed.size == size else None


def _stranger(path: Path, exc: ForeignFile) -> str:
    """Why the entry of ``path`` is never reused, whatever its manifest says (anyone who can write a shared cache
    folder could plant a consistent pair): its engine or manifest is another user's, or a link."""
    return f"ignored {path}: {exc.args[0] if exc.args else exc} (an engine is code this user runs)"


def find_reusable(
    candidates: list[Path], key: str, identity: dict[str, JSON], hashes: HashCache | None = None
) -> Found:
    """The first candidate engine whose manifest has ``key`` and whose bytes match it (``hashes``: file hashes
    remembered by stat, see :class:`HashCache`)."""
    misses: list[str] = []
    warnings: list[str] = []
    for path in candidates:
        try:
            manifest = read_manifest(path, owners=trusted_owners())
        except ForeignFile as exc:
            warnings.append(_stranger(path, exc))
            continue
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
        other = manifest.names_other(path)
        if other:
            warnings.append(f"ignored {path}: {other}")
            continue
        try:
            info = _checked(path, manifest.engine_sha256, manifest.engine_size, hashes or HashCache(None))
        except ForeignFile as exc:
            warnings.append(_stranger(path, exc))
            continue
        except OSError as exc:
            warnings.append(f"ignored {path}: cannot read it ({exc.strerror or exc})")
            continue
        if info is None:
            warnings.append(f"ignored {path}: the engine does not match its manifest's sha256 (corrupt or replaced)")
            continue
        written = WrittenFile(path, info.st_size, (info.st_dev, info.st_ino, info.st_mtime_ns))
        return Found(path, written, tuple(misses), tuple(warnings), manifest.engine_sha256)
    return Found(None, None, tuple(misses), tuple(warnings))


FICLONE = 0x40049409  # Linux's ioctl that shares a file's blocks (btrfs, XFS, bcachefs: a reflink)


def copy_into_place(source: Path | bytes | WrittenFile, target: str | os.PathLike[str]) -> WrittenFile:
    """Put a copy of ``source`` (a file, one known by its identity, or bytes) at ``target`` atomically: a
    concurrent reader sees the old file or the whole new one, and two writers of one entry never mix their bytes.
    A file is cloned where the file system shares blocks, else copied inside the kernel (never read into Python);
    a ``WrittenFile`` that was replaced or changed since it was checked raises OSError."""
    part = part_path(target)
    try:
        if isinstance(source, bytes):
            write_part(part, source)
        else:
            write_part(part, b"")
            _copy_file(source, part)
        return place_file(part, target, sync=False)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


def _copy_file(source: Path | WrittenFile, part: Path) -> None:
    path = source.path if isinstance(source, WrittenFile) else source
    with open(path, "rb") as src, open(part, "r+b") as dst:
        info = os.fstat(src.fileno())
        if isinstance(source, WrittenFile) and (
            (info.st_dev, info.st_ino, info.st_mtime_ns) != source.identity or info.st_size != source.size
        ):
            raise OSError(f"{path} was replaced or changed after it was checked")
        with contextlib.suppress(OSError, ImportError):
            import fcntl

            fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
            return
        left = info.st_size
        copy = getattr(os, "copy_file_range", None)
        try:
            while left > 0:
                done = (
                    copy(src.fileno(), dst.fileno(), left)
                    if copy is not None
                    else os.sendfile(dst.fileno(), src.fileno(), None, left)
                )
                if done == 0:
                    break
                left -= done
        except (OSError, AttributeError):  # no in-kernel copy between these files: through Python
            src.seek(0)
            dst.seek(0)
            dst.truncate()
            shutil.copyfileobj(src, dst, 1 << 20)
            left = 0
        if left:
            raise OSError(f"{path} changed while it was copied")
        if os.fstat(src.fileno()).st_size != info.st_size:
            raise OSError(f"{path} changed while it was copied")
