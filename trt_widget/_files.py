"""Atomic file writes: readers see the old file or the complete new one, never a partial file.

Only regular files are written: a symlink is followed to its target (which is replaced atomically, so the
link stays), and device nodes, FIFOs, sockets and directories are refused. A temporary file left by a writer
that was killed (``.<name>.<pid>.<random>.part``) is removed on the next write to the same path.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

_UMASK = os.umask(0o022)  # read once at import (os.umask can only be read by setting it)
os.umask(_UMASK)


def expand_user(path: str | os.PathLike[str]) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; ValueError (not Path.expanduser's RuntimeError)
    naming the user when there is no such user or home directory."""
    text = os.fspath(path)
    expanded = os.path.expanduser(text)
    if text.startswith("~") and expanded == text:
        user = text[1:].split("/", 1)[0]
        raise ValueError(f"{text}: cannot expand '~{user}': {'no such user' if user else 'no home directory'}")
    return Path(expanded)


class NotARegularFile(OSError):
    """The target exists and is not a regular file (a device, FIFO, socket or directory)."""


def writable_target(path: str | os.PathLike[str]) -> Path:
    """The regular file a write to ``path`` goes to (a symlink's target); raises NotARegularFile otherwise."""
    target = Path(os.path.realpath(expand_user(path)))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    except NotADirectoryError:
        raise NotADirectoryError(f"{path}: a part of its folder path is a file, not a folder") from None
    if not stat.S_ISREG(mode):
        kind = (
            "a directory"
            if stat.S_ISDIR(mode)
            else "a character device"
            if stat.S_ISCHR(mode)
            else "a block device"
            if stat.S_ISBLK(mode)
            else "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "not a regular file"
        )
        shown = f"{path} (-> {target})" if str(target) != str(path) else str(path)
        raise NotARegularFile(f"{shown} is {kind}; trt_widget writes engines and caches to regular files only")
    return target


def refuse_overwriting(model: str | os.PathLike[str], **targets: str | os.PathLike[str] | None) -> None:
    """Raise ValueError when a target (``output=``, ``timing_cache=``, ``path=``) is the model file itself:
    writing it would destroy the model."""
    for name, value in targets.items():
        if value is not None and os.path.realpath(expand_user(value)) == os.path.realpath(model):
            raise ValueError(
                f"{name}={str(value)!r} is the model file itself: writing it would destroy the model; "
                "choose another path"
            )


def refuse_inputs(build: object, **targets: str | os.PathLike[str] | None) -> None:
    """``refuse_overwriting`` for the inputs of ``build`` (a Build, or anything with a ``source``): its model
    file or its recording."""
    source = getattr(build, "source", None)
    kind, value = getattr(source, "kind", None), getattr(source, "value", None)
    if kind not in ("path", "recording") or not isinstance(value, str):
        return
    what = "the model file" if kind == "path" else "the recording"
    for name, target in targets.items():
        if target is not None and os.path.realpath(expand_user(target)) == os.path.realpath(value):
            raise ValueError(f"{name}={str(target)!r} is {what} itself: writing it would destroy it; choose another")


def check_writable(path: str | os.PathLike[str], what: str) -> Path:
    """Raise OSError, naming ``what`` and the reason, when ``atomic_write(path)`` could not succeed: the target
    is not a regular file, or its folder is missing, not a folder, or not writable. Done before a build, so a bad
    path is found before the build's time is spent, not after it."""
    folder = Path(os.path.realpath(expand_user(path))).parent
    if not folder.exists():
        raise FileNotFoundError(f"{what} {os.fspath(path)}: its folder {folder} does not exist")
    if not folder.is_dir():
        raise NotADirectoryError(f"{what} {os.fspath(path)}: {folder} is not a folder")
    try:
        target = writable_target(path)
    except NotARegularFile as exc:
        raise NotARegularFile(f"{what}: {exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"{what}: the folder {folder} is not writable")
    return target


def atomic_write(path: str | os.PathLike[str], data: bytes | memoryview, *, sync: bool = True) -> Path:
    """Write ``data`` to a temporary file beside ``path``'s target, fsync it (``sync``), then rename it over the
    target. Engines pass ``sync=False`` (see ``ENGINES_SYNCED``)."""
    part = part_path(path)
    try:
        write_part(part, data)
    except OSError as exc:
        raise _about(exc, path) from None
    try:
        return place_file(part, path, sync=sync).path
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


def _about(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """The error of writing a temporary file, naming the file the caller asked for (the temporary name is ours)."""
    if exc.errno is None or type(exc).__module__ != "builtins":  # our own OSErrors say what they mean
        return exc
    return type(exc)(exc.errno, exc.strerror, os.fspath(path))


def write_part(part: str | os.PathLike[str], data: bytes | memoryview) -> None:
    """Write ``data`` to ``part``, a new file created here (never through a link); nothing is left if it fails."""
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


# Engines are written atomically (a reader sees the old file or the complete new one, even when the writer is
# killed) but not fsynced, as trtexec, Polygraphy and torch.save write theirs: flushing costs ~0.15 s per 100 MB
# before the build may end (a fifth of a short build), and an engine can be built again. Small files that later
# builds rely on (timing caches, the service's records) are fsynced.
ENGINES_SYNCED = False


def part_path(path: str | os.PathLike[str]) -> Path:
    """A fresh name for a temporary file beside ``path``'s target, as ``atomic_write`` names its own (removed by
    the next write when the process that made it is gone); a builder process writes an engine there."""
    target = writable_target(path)
    return target.parent / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.part"


@dataclass(frozen=True)
class WrittenFile:
    """A file this process put in place, known by its identity: read back only while it is still that file."""

    path: Path
    size: int
    identity: tuple[int, int, int]  # device, inode, modification time (ns)

    def read(self) -> bytes:
        """The file's bytes; OSError when it was replaced, changed or removed since it was written."""
        with open(self.path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if (info.st_dev, info.st_ino, info.st_mtime_ns) != self.identity or info.st_size != self.size:
                raise OSError(f"{self.path} was replaced or changed after this build wrote it")
            data = handle.read()
        if len(data) != self.size:
            raise OSError(f"{self.path} changed while it was read")
        return data


def place_file(part: str | os.PathLike[str], path: str | os.PathLike[str], *, sync: bool = True) -> WrittenFile:
    """Make ``part``, a finished temporary file from ``part_path(path)``, the file at ``path``: fsync it (``sync``),
    give it the permissions ``open()`` would, then rename it over the target, as ``atomic_write`` does."""
    target = writable_target(path)
    if Path(os.path.realpath(part)).parent != target.parent:
        raise OSError(f"{part} is not beside {target}")
    _remove_stale_parts(target)
    fd = os.open(part, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"{part} is not a regular file")
        os.fchmod(fd, 0o666 & ~_UMASK)
        if sync:
            os.fsync(fd)
        os.replace(part, target)
    finally:
        os.close(fd)
    return WrittenFile(target, info.st_size, (info.st_dev, info.st_ino, info.st_mtime_ns))


def _remove_stale_parts(target: Path) -> None:
    """Delete our own temporary files for ``target`` whose writing process no longer exists."""
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.(\d+)\.[^.]+\.part$")
    try:
        names = os.listdir(target.parent)
    except OSError:
        return
    for name in names:
        match = pattern.match(name)
        if match and not _alive(int(match.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(target.parent / name)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
