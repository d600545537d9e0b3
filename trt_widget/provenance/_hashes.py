"""File hashes remembered in the engine cache directory, keyed by what ``stat`` says of the file (device, inode,
size, modification and change time in ns), so a ``reuse=True`` build of an unchanged model, its external data and
an engine it already checked reads none of them again (docs/reuse.md, "The hash cache")."""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .._external_data import remember_locations, settled, stat_key, stat_vouches
from .._files import resolve, utf8
from .._json import json_int

HASHES_FILE = "file-hashes.json"
MAX_ENTRIES = 4096  # ~150 bytes each: the file stays well under MAX_BYTES
MAX_BYTES = 4 << 20
CHUNK = 1 << 20
_KEY = re.compile(r"\d{1,20}:\d{1,20}:\d{1,20}:-?\d{1,20}:-?\d{1,20}")
_SHA = re.compile(r"[0-9a-f]{64}")

log = logging.getLogger("trt_widget")


class NotRegularFile(OSError):
    """The path is a FIFO, a device, a socket or a folder, not a regular file."""


class ForeignFile(PermissionError):
    """A file that must be this user's (an engine cache's) is another user's, or a link to follow."""


def trusted_owners() -> tuple[int, ...] | None:
    """The owners whose files in an engine cache this process trusts: itself and root (None: not checked here)."""
    return (os.geteuid(), 0) if os.name == "posix" else None


def open_regular(path: str | os.PathLike[str], *, owners: tuple[int, ...] | None = None) -> int:
    """A read-only descriptor of the regular file at ``path``; OSError for anything else. Opened without blocking:
    a FIFO planted where a manifest or cache is expected would hold ``open`` until some process writes to it.
    With ``owners``: never through a link, and `ForeignFile` unless the file opened is theirs (``fstat`` of the
    descriptor: the file checked is the file read, however the folder changes meanwhile)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if owners is not None:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if owners is not None and exc.errno == errno.ELOOP:
            raise ForeignFile(f"{os.fspath(path)} is a symbolic link (not followed here)") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegularFile(f"{os.fspath(path)} is not a regular file")
    if owners is not None and info.st_uid not in owners:
        os.close(fd)
        raise ForeignFile(f"{os.fspath(path)} is owned by another user")
    return fd


def read_sha256(handle: BinaryIO, limit: int | None = None) -> tuple[str, int]:
    """(sha256 hex, size) of what is left to read of ``handle``; with ``limit``, reading stops one byte past it, so
    a file larger than the size expected (a ``/proc`` file whose size says 0, a sparse file of terabytes, a file
    growing meanwhile) costs at most that much reading: a size over ``limit`` says it is not the file expected."""
    digest = hashlib.sha256()
    size = 0
    while block := handle.read(CHUNK if limit is None else min(CHUNK, limit + 1 - size)):
        digest.update(block)
        size += len(block)
    return digest.hexdigest(), size


@dataclass(frozen=True)
class Hashed:
    """What was read of a file: its sha256 and size, and (for a model) the external-data locations it names."""

    sha256: str
    size: int
    locations: tuple[str, ...] | None = None


class HashCache:
    """Hashes by :func:`stat_key`, loaded from and saved to ``directory/file-hashes.json`` (None: kept in memory
    only). A file owned by another user, a corrupt file or a malformed entry is ignored, never trusted."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[str, int, tuple[str, ...] | None]] = {}  # key: sha256, hashed_at, locations
        self._new: dict[str, tuple[str, int, tuple[str, ...] | None]] = {}
        self.ignored = ""  # why the stored file was not used ("" when it was, or there was none)
        if directory is not None:
            self._entries = self._load(directory / HASHES_FILE)

    def _load(self, path: Path) -> dict[str, tuple[str, int, tuple[str, ...] | None]]:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return {}
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self.ignored = f"{path} is not a regular file"
                return {}
            if os.name == "posix" and info.st_uid not in (os.geteuid(), 0):
                self.ignored = f"{path} is owned by another user"
                return {}
            with os.fdopen(fd, "rb", closefd=False) as handle:
                raw = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            self.ignored = f"{path} cannot be read ({exc.strerror or exc})"
            return {}
        finally:
            os.close(fd)
        if len(raw) > MAX_BYTES:
            self.ignored = f"{path} is larger than {MAX_BYTES:,} bytes"
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):  # ValueError: also a number Python will not convert (4,300+ digits)
            self.ignored = f"{path} is not JSON (corrupt)"
            return {}
        found = data.get("files") if isinstance(data, dict) else None
        if not isinstance(found, dict):
            self.ignored = f"{path} is not a trt_widget hash cache"
            return {}
        return {key: entry for key, value in found.items() if (entry := _entry(key, value)) is not None}

    def lookup(self, info: os.stat_result) -> Hashed | None:
        """The remembered hash of the file ``info`` describes, when it is still that file and was not changed
        near the time it was hashed."""
        with self._lock:
            entry = self._new.get(stat_key(info)) or self._entries.get(stat_key(info))
        if entry is None:
            return None
        sha256, hashed_at, locations = entry
        if not settled(info, hashed_at):
            return None  # changed too close to when it was read: read it again
        if locations is not None:  # the build's output-path checks need them too
            remember_locations(info, hashed_at, locations)
        return Hashed(sha256, info.st_size, locations)

    def recall(self, path: str | os.PathLike[str]) -> Hashed | None:
        """The remembered hash of the file at ``path`` (None when unknown, changed or unreadable)."""
        try:
            return self.lookup(os.stat(path))
        except OSError:
            return None

    def remember(self, info: os.stat_result, hashed_at: int, hashed: Hashed) -> None:
        """Keep the hash of the file ``info`` describes (read from ``hashed_at``, ``time.time_ns()``) for
        :meth:`save`."""
        with self._lock:
            self._new[stat_key(info)] = (hashed.sha256, hashed_at, hashed.locations)

    def file(
        self, path: str | os.PathLike[str], *, owners: tuple[int, ...] | None = None, size: int | None = None
    ) -> tuple[Hashed, os.stat_result]:
        """sha256 and size of the file at ``path``, remembered or read now (then remembered); OSError when it
        cannot be read or changes while it is read (``owners``: as `open_regular` checks them). ``size``: the size
        expected; a file of another size (``fstat`` of the file opened) is not read, its sha256 given as ""."""
        with open(open_regular(path, owners=owners), "rb") as handle:
            info = os.fstat(handle.fileno())
            # a file another user may write is read now: its stat may stay the same while its bytes change (D24-1)
            known = self.lookup(info) if stat_vouches(info, handle.fileno(), time.time_ns()) else None
            if known is not None:
                return known, info
            if size is not None and info.st_size != size:
                return Hashed("", info.st_size), info  # not the file expected: never read
            began = time.time_ns()
            sha256, read = read_sha256(handle, info.st_size)
            if stat_key(os.fstat(handle.fileno())) != stat_key(info) or read != info.st_size:
                raise OSError(f"{path} changed while it was read")
        hashed = Hashed(sha256, read)
        self.remember(info, began, hashed)
        return hashed, info

    def save(self) -> None:
        """Write the hashes learnt since loading into the directory's file (merged with what is there now, newest
        kept, atomically); a failure only costs reading the files again next time."""
        if self.directory is None or not self._new:
            return
        from .._files import atomic_write, refuse_foreign_folder

        with self._lock:
            new, self._new = self._new, {}
        try:
            merged = self._load(self.directory / HASHES_FILE)
            merged.update(new)
            kept = sorted(merged.items(), key=lambda item: item[1][1])[-MAX_ENTRIES:]
            files = {
                key: {"sha256": sha, "hashed_at": at, "locations": list(loc) if loc is not None else None}
                for key, (sha, at, loc) in kept
            }
            text = json.dumps({"format": "trt_widget.file-hashes", "files": files}, separators=(",", ":"))
            resolve(self.directory)  # UntrustedLink: no folder is made through another user's link
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            refuse_foreign_folder(self.directory, "reuse_dir")  # its owner would read which files were hashed
            atomic_write(self.directory / HASHES_FILE, utf8(text), sync=False)
            with self._lock:
                self._entries.update(new)
        except OSError as exc:
            log.debug("reuse: could not save the hash cache in %s: %s", self.directory, exc)


def _entry(key: object, value: object) -> tuple[str, int, tuple[str, ...] | None] | None:
    """A stored entry, checked (None when malformed: ignored)."""
    if not isinstance(key, str) or not _KEY.fullmatch(key) or not isinstance(value, dict):
        return None
    sha, at, locations = value.get("sha256"), value.get("hashed_at"), value.get("locations")
    if not isinstance(sha, str) or not _SHA.fullmatch(sha) or not json_int(at):
        return None
    if locations is None:
        return sha, at, None
    if not isinstance(locations, list) or not all(isinstance(item, str) for item in locations):
        return None
    return sha, at, tuple(locations)
