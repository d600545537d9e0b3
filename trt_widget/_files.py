"""Atomic file writes: readers see the old file or the complete new one, never a partial file.

Only regular files are written: a symlink is followed to its target (which is replaced atomically, so the
link stays), and device nodes, FIFOs, sockets and directories are refused. A symlink another user (not root)
owns is never followed (``UntrustedLink``): planted in a shared folder (``/tmp``) or one of theirs, it could
point a write at any file this user can write (the kernel's ``fs.protected_symlinks`` rule, for every folder).
A rewritten file keeps its permissions; a new one gets those ``open()`` gives. A temporary file left by a
writer that was killed (``.<name>.<pid>.<random>.part``; for a name too long for that, a prefix of it and a hash
of it) is removed on the next write to the same path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shlex
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ._format import escape_controls

_UMASK = os.umask(0o022)  # read once at import (os.umask can only be read by setting it)
os.umask(_UMASK)


def expand_user(path: str | os.PathLike[str]) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; ValueError (not Path.expanduser's RuntimeError)
    naming the user when there is no such user or home directory."""
    text = os.fspath(path)
    try:
        expanded = os.path.expanduser(text)
    except ValueError:  # a NUL in the user's name, which getpwnam refuses: no such user either
        expanded = text
    if text.startswith("~") and expanded == text:
        user = text[1:].split("/", 1)[0]
        raise ValueError(f"{text}: cannot expand '~{user}': {'no such user' if user else 'no home directory'}")
    return Path(expanded)


class BadModelPath(ValueError):
    """A model path that names no regular file, or one the system cannot look at; the message is the one line."""


def model_file(model: str | os.PathLike[str]) -> Path:
    """The model path ``model`` (``~`` expanded) when it is a regular file; else BadModelPath saying why in one line,
    the same on every surface (CLI, MCP, LSP): not found, not a file, or a path ``stat()`` refuses (a name over 255
    bytes, a folder this user may not enter), which ``Path.is_file()`` raises as OSError."""
    try:
        path = expand_user(model)
    except ValueError as exc:  # ~name of no user
        raise BadModelPath(str(exc)) from None
    shown = escape_controls(path)  # a newline in the name forges no second line of the message
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise BadModelPath(f"ONNX file not found: {shown}") from None
    except OSError as exc:
        raise BadModelPath(f"cannot read the model {shown}: {exc.strerror or exc}") from None
    except ValueError:  # a NUL in the path
        raise BadModelPath(f"ONNX file not found: {shown}") from None
    if not stat.S_ISREG(mode):
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file: a FIFO, device or socket"
        raise BadModelPath(f"not an ONNX file ({what}): {shown}")
    return path


class NotARegularFile(OSError):
    """The target exists and is not a regular file (a device, FIFO, socket or directory)."""


class FileTooLarge(OSError):
    """A file holds more than the bytes its reader takes (:func:`read_regular`)."""


class UntrustedLink(PermissionError):
    """A symlink on the way to a file to write is owned by another user (not root)."""


class ForeignFile(PermissionError):
    """A file (or folder) that trt_widget would use in place, writing into it, is owned by another user (not root)."""


def owned_by_another(info: os.stat_result) -> bool:
    """Whether another user (neither this one nor root) owns what ``info`` describes; never on Windows."""
    return os.name == "posix" and info.st_uid not in (os.geteuid(), 0)


def refuse_foreign_folder(folder: str | os.PathLike[str], what: str) -> None:
    """ForeignFile when another user (not root) owns ``folder`` (``what`` names it): its owner may read, remove or
    replace any file put there, sticky or not (a folder made first in ``/tmp``); trt_widget keeps nothing there."""
    info = os.stat(folder)
    if owned_by_another(info):
        raise ForeignFile(
            f"{what} {os.fspath(folder)} is owned by another user (uid {info.st_uid}), who can read, remove or "
            "replace the files in it: trt_widget keeps nothing there; choose a folder of yours"
        )


_WRITE_THROUGH = "write through it (it could point the write at any file you can write)"
_READ_SECRET = "read a secret through it (it could point the read at a file whose content its owner knows)"


def _check_link(link: str, info: os.stat_result, folder: str, doing: str = _WRITE_THROUGH) -> None:
    """Refuse to follow ``link`` when another user owns it (root's and one's own are followed): its owner chooses
    where a write through it lands, at any file this user can write. The kernel's protected_symlinks rule says
    the same for sticky folders (``/tmp``); a folder another user owns is theirs to fill with links too."""
    if info.st_uid in (os.geteuid(), 0):
        return
    raise UntrustedLink(
        f"{link} is a symbolic link that another user (uid {info.st_uid}) owns (in {folder}): trt_widget does "
        f"not {doing}; remove it or choose another path"
    )


def resolve(path: str | os.PathLike[str], *, doing: str = _WRITE_THROUGH) -> Path:
    """``os.path.realpath(path)`` (``~`` expanded) that raises UntrustedLink instead of following a symlink another
    user owns (not root), at any step of the path (``doing`` says what for, in its message)."""
    text = os.fspath(expand_user(path))
    if os.name != "posix":  # no sticky folders to plant links in
        return Path(os.path.realpath(text))
    absolute = text if text.startswith("/") else os.path.join(os.getcwd(), text)
    todo = [part for part in reversed(absolute.split("/")) if part not in ("", ".")]
    resolved, links = "/", 0
    while todo:
        name = todo.pop()
        if name == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, name)
        try:
            info = os.lstat(candidate)
        except OSError:  # missing, or below a file: taken as written, as realpath() does
            resolved = candidate
            continue
        if not stat.S_ISLNK(info.st_mode):
            resolved = candidate
            continue
        _check_link(candidate, info, resolved, doing)
        links += 1
        if links > 40:
            raise OSError(errno.ELOOP, "too many levels of symbolic links", text)
        target = os.readlink(candidate)
        if target.startswith("/"):
            resolved = "/"
        todo.extend(part for part in reversed(target.split("/")) if part not in ("", "."))
    return Path(resolved)


def writable_target(path: str | os.PathLike[str]) -> Path:
    """The regular file a write to ``path`` goes to (a symlink's target); raises NotARegularFile otherwise, and
    UntrustedLink for a link another user planted in a shared folder."""
    target = resolve(path)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        refuse_nameless(path, target)
        return target
    except NotADirectoryError:
        raise NotADirectoryError(f"{path}: a part of its folder path is a file, not a folder") from None
    if not stat.S_ISREG(mode):
        shown = f"{path} (-> {target})" if str(target) != str(path) else str(path)
        raise NotARegularFile(
            f"{shown} is {_file_kind(mode)}; trt_widget writes engines and caches to regular files only"
        )
    return target


def _file_kind(mode: int, fifo: str = "a FIFO") -> str:
    """What a file that is not a regular one is, in words (``fifo``: the words for a FIFO)."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, fifo),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((words for test, words in kinds if test(mode)), "not a regular file")


def refuse_nameless(path: str | os.PathLike[str], target: Path) -> None:
    """NotARegularFile where ``path`` resolves to ``target``, a name nothing holds, yet the kernel reaches a file
    through ``path``: a ``/proc/<pid>/fd`` link (``/dev/stdout``, ``/dev/fd/1``) reads as ``pipe:[N]``,
    ``socket:[N]``, ``anon_inode:...`` or ``/x (deleted)``. A write there, found only at the build's end, fails."""
    if os.path.lexists(target):
        return
    try:
        mode = os.stat(expand_user(path)).st_mode
    except (OSError, ValueError):
        return  # nothing there: a new file
    kind = "a deleted file" if stat.S_ISREG(mode) else _file_kind(mode, fifo="a pipe")
    raise NotARegularFile(
        f"{os.fspath(path)} (-> {target}) is {kind}, a process's open file with no name on disk; trt_widget "
        "writes to named files only: name a file"
    )


def xdg_home(variable: str, *default: str) -> Path:
    """The XDG base directory ``$variable``, else ``~/<default...>``: a relative value is ignored, as the XDG spec
    says (it was taken relative to whatever folder the command ran from)."""
    value = os.environ.get(variable, "")
    return Path(value) if os.path.isabs(value) else Path(os.path.expanduser("~"), *default)


class TooOpen(PermissionError):
    """A secret's file that other users can read or write (as ssh refuses such a private key)."""


def read_regular(path: str | os.PathLike[str], limit: int, *, secret: bool = False, follow: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, read without blocking and never more than ``limit`` + 1 of them:
    NotARegularFile for a device, FIFO or socket (``/dev/zero`` was read without end, a FIFO with no writer waited
    forever), FileTooLarge for a file over ``limit`` bytes (its callers say which limit that is). A ``secret`` file
    any other user may read or write, or that another user (not root) owns, is refused (`TooOpen`), as ssh refuses
    a private key: its mode and owner are those of the file read (``fstat``). A secret is never read through a
    symlink another user owns (UntrustedLink, as for writes), nor from a file whose size is not what it holds (a
    ``/proc`` or ``/sys`` file, e.g. ``/proc/self/personality``: the reader's own, 0400, content known to all).
    ``follow=False``: a symlink as the last component is refused (ELOOP), not followed (a service's own files)."""
    opened: str | os.PathLike[str] = path
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    if secret and os.name == "posix":
        opened, flags = resolve(path, doing=_READ_SECRET), flags | os.O_NOFOLLOW  # no link swapped in since
    fd = os.open(opened, flags)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotARegularFile(f"{os.fspath(path)} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileTooLarge(f"{os.fspath(path)} is larger than {limit:,} bytes")
    if secret and len(data) != status.st_size:
        shown = os.fspath(path) + ("" if os.fspath(opened) == os.fspath(path) else f" (-> {os.fspath(opened)})")
        raise NotARegularFile(
            f"{shown} says it holds {status.st_size:,} bytes but {len(data):,} were read: not a file on disk (such as "
            "a /proc or /sys file, whose content others may know) or one being written; a secret is read from a "
            "file of yours on disk"
        )
    if secret and os.name == "posix" and status.st_uid not in (0, os.getuid()):
        raise TooOpen(
            f"{os.fspath(path)} is owned by another user (uid {status.st_uid}), who chose the secret it holds and "
            "may change it; use a file of yours (as ssh asks of a private key)"
        )
    if secret and status.st_mode & 0o077:
        mode = stat.S_IMODE(status.st_mode)
        raise TooOpen(
            f"{os.fspath(path)} has mode {mode:04o}: other users can read or change the secret it holds; "
            f"make it private with `chmod 600 {shlex.quote(os.fspath(path))}` (as ssh asks of a private key)"
        )
    return data


def read_small_text(path: str | os.PathLike[str], limit: int = 4096, *, secret: bool = False) -> str:
    """The UTF-8 text of the small regular file at ``path`` (a token file): OSError for a device, FIFO, socket or a
    file over ``limit`` bytes, TooOpen for a ``secret`` one others can read (:func:`read_regular`);
    UnicodeDecodeError (a ValueError) for text that is not UTF-8."""
    return read_regular(expand_user(path), limit, secret=secret).decode("utf-8")


def open_lock_file(path: str | os.PathLike[str]) -> int:
    """Open (create) ``<path's target>.lock`` to lock the writes to ``path``, never through a symlink (a link
    there is refused, whoever owns it: a lock file is ours); its descriptor."""
    lock = f"{writable_target(path)}.lock"
    refusal = UntrustedLink(f"{lock} is a symbolic link: trt_widget does not lock through it (remove it)")
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(lock).st_mode):
            raise refusal
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # it became one since
            raise refusal from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotARegularFile(f"{lock} is not a regular file; trt_widget locks with regular files only")
    return fd


def model_inputs(model: str | os.PathLike[str]) -> dict[str, str]:
    """The files a model path reads, real path -> what it is: the model file and each external-data file it names
    (found as the build finds them; an unreadable model names none here, its build says why)."""
    text = os.fspath(expand_user(model))
    real = os.path.realpath(text)
    found = {real: "the model file itself"}
    with contextlib.suppress(Exception):
        from ._external_data import file_locations

        folder = os.path.dirname(os.path.abspath(text))
        for location in file_locations(real)[:10_000]:
            if "\0" in location:  # no file's name (realpath raises); the build refuses it
                continue
            found.setdefault(
                os.path.realpath(os.path.join(folder, location)), f"the model's external data {location!r}"
            )
    return found


def build_inputs(build: object) -> dict[str, str]:
    """``model_inputs`` of ``build`` (a Build, or anything with a ``source``): its model file and external data, or
    its recording; nothing for bytes, a ModelProto or a network function."""
    source = getattr(build, "source", None)
    kind, value = getattr(source, "kind", None), getattr(source, "value", None)
    if not isinstance(value, str):
        return {}
    if kind == "path":
        return model_inputs(value)
    if kind == "recording":
        return {os.path.realpath(expand_user(value)): "the recording itself"}
    return {}


def _refuse(inputs: dict[str, str], targets: dict[str, str | os.PathLike[str] | None]) -> None:
    for name, value in targets.items():
        what = inputs.get(os.path.realpath(expand_user(value))) if value is not None else None
        if what is not None:
            victim = "it" if what == "the recording itself" else "the model"
            raise ValueError(f"{name}={str(value)!r} is {what}: writing it would destroy {victim}; choose another path")
        if value is not None and _an_onnx_file(value):
            raise ValueError(
                f"{name}={str(value)!r} is an ONNX model file: trt_widget writes nothing over a model (a watched or "
                "relayed build does not know which file its model came from); choose another path"
            )


def _an_onnx_file(path: str | os.PathLike[str]) -> bool:
    """An existing regular file named ``*.onnx`` (where a link leads too): a model, whichever build it fed."""
    real = os.path.realpath(expand_user(path))
    return real.lower().endswith(".onnx") and os.path.isfile(real)


def refuse_overwriting(model: str | os.PathLike[str], **targets: str | os.PathLike[str] | None) -> None:
    """Raise ValueError when a target (``output=``, ``timing_cache=``, ``path=``) is the model file itself or one
    of its external-data files: writing it would destroy the model."""
    _refuse(model_inputs(model), targets)


def refuse_inputs(build: object, **targets: str | os.PathLike[str] | None) -> None:
    """``refuse_overwriting`` for the inputs of ``build`` (``build_inputs``)."""
    _refuse(build_inputs(build), targets)


# what running builds of this process write, real path -> {id(build): (build, role)}; a file may be shared only
# in a role both builds' ``shared_roles`` name: timing caches (TensorRT merges them, under the cache's lock file,
# across processes too), and a watch's one events file for the builds it caught
_claims: dict[str, dict[int, tuple[object, str]]] = {}
_claims_lock = threading.Lock()
SHARED_ROLES = frozenset({"timing_cache="})


def _shares(build: object, role: str) -> bool:
    return role in getattr(build, "shared_roles", SHARED_ROLES)


Targets = dict[str, "str | os.PathLike[str] | None"]


def _claim_keys(path: str | os.PathLike[str]) -> list[str]:
    """What names the file at ``path`` in ``_claims``: its real path, its folder's device and inode with its name (a
    bind mount shows one folder at two real paths: a file not written yet) and, when it exists, its own device and
    inode (a hard link is another path to the same file)."""
    real = os.path.realpath(expand_user(path))
    keys = [real]
    with contextlib.suppress(OSError):
        folder = os.stat(os.path.dirname(real))
        keys.append(f"in:{folder.st_dev}:{folder.st_ino}:{os.path.basename(real)}")
    with contextlib.suppress(OSError):
        info = os.stat(real)
        keys.append(f"inode:{info.st_dev}:{info.st_ino}")
    return keys


def _taken(build: object, role: str, path: str | os.PathLike[str]) -> str | None:
    """The message refusing ``path`` as ``build``'s ``role`` when another running build writes it; None if free."""
    holders = [holder for key in _claim_keys(path) for holder in _claims.get(key, {}).values()]
    for other, other_role in holders:
        if other is not build and not (role == other_role and _shares(build, role) and _shares(other, role)):
            return (
                f"{role} {str(path)!r} is being written by another build that is still running ({other!r}), as its "
                f"{other_role}: wait for it to end, or choose another path"
            )
    return None


def refuse_taken(build: object, targets: Targets) -> None:
    """ValueError when a target (role -> path) is a file another running build of this process writes (its
    ``output=``, the manifest beside it, ``events=``, ``timing_cache=``, ``log_file=``): one would destroy or
    interleave with the other's file. Two builds may share a timing cache."""
    with _claims_lock:
        for role, path in targets.items():
            problem = _taken(build, role, path) if path is not None else None
            if problem is not None:
                raise ValueError(problem)


def claim_targets(build: object, targets: Targets) -> None:
    """``refuse_taken``, then hold the targets for ``build`` until ``release_targets`` (all or none)."""
    with _claims_lock:
        for role, path in targets.items():
            problem = _taken(build, role, path) if path is not None else None
            if problem is not None:
                raise ValueError(problem)
        for role, path in targets.items():
            if path is not None:
                for key in _claim_keys(path):
                    _claims.setdefault(key, {})[id(build)] = (build, role)


def release_targets(build: object) -> None:
    """The files ``build`` held are free for other builds again (it has ended)."""
    with _claims_lock:
        for key in [key for key, holders in _claims.items() if id(build) in holders]:
            holder = _claims[key].get(id(build))
            if holder is not None and holder[0] is build:
                del _claims[key][id(build)]
            if not _claims[key]:
                del _claims[key]


def check_output(path: str | os.PathLike[str], what: str, build: object = None, *, now: bool = True) -> Path:
    """The one policy for every file written for a build (``save``, ``to_html``, ``to_json``, ``to_trace``, a
    timeline, ``output=``, ``events=``, ``report=``, ``trace=``), checked before anything is written: never the
    build's model, its external data or its recording, nor a file another running build writes (ValueError; with
    ``now=False`` that is left to the build's start); never a directory or another non-regular file,
    never through a link another user planted in a shared folder, the folder must exist and be writable (OSError).
    The write itself is ``atomic_write``: the old file or the whole new one, never a partial file. Returns the
    file written."""
    refuse_inputs(build, **{what.rstrip("="): path})
    if now:  # written now, not once a build starts (that claims its files then: ``claim_targets``)
        refuse_taken(build, {what if what.endswith("=") else f"{what}=": path})
    return check_writable(path, what)


def utf8(text: str) -> bytes:
    """``text`` as UTF-8 for a file we write. A lone surrogate (a path that is not UTF-8, an outside event's
    ``\\udcff``) is written as that escape: a JSON string reads it back as the same character, a page shows it."""
    return text.encode("utf-8", "backslashreplace")


def write_output(
    path: str | os.PathLike[str],
    data: bytes | memoryview,
    what: str,
    build: object = None,
    *,
    sync: bool = True,
    like: str | os.PathLike[str] | None = None,
) -> Path:
    """``check_output`` then ``atomic_write``: how every file written for a build is written. ``like``: the file
    whose permissions it takes (``place_file``)."""
    check_output(path, what, build)
    return atomic_write(path, data, sync=sync, like=like)


@contextlib.contextmanager
def output_stream(
    path: str | os.PathLike[str], what: str, build: object = None, *, sync: bool = True
) -> Iterator[BinaryIO]:
    """``write_output`` for a file written in pieces (a zip of a large model, never whole in memory): the policy
    checked, then a new temporary file beside the target, which takes its place when the block ends without an
    error (the old file or the whole new one); nothing is left when it fails."""
    check_output(path, what, build)
    part = part_path(path)
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise _about(exc, path) from None
    try:
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle
        except OSError as exc:
            raise _about(exc, path) from None
        place_file(part, path, sync=sync)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


def check_writable(path: str | os.PathLike[str], what: str) -> Path:
    """Raise OSError, naming ``what`` and the reason, when ``atomic_write(path)`` could not succeed: the target
    is not a regular file (a pipe or socket reached through ``/dev/stdout`` neither), or its folder is missing, not
    a folder, not writable, or holds no new file (``/proc``). Done before a build, so a bad
    path is found before the build's time is spent, not after it."""
    folder = resolve(path).parent
    shown, where = escape_controls(os.fspath(path)), escape_controls(folder)  # one line, whatever the names hold
    if not folder.exists():
        raise FileNotFoundError(f"{what} {shown}: its folder {where} does not exist")
    if not folder.is_dir():
        raise NotADirectoryError(f"{what} {shown}: {where} is not a folder")
    try:
        target = writable_target(path)
    except NotARegularFile as exc:
        raise NotARegularFile(f"{what}: {exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"{what}: the folder {where} is not writable")
    # the write makes a new file there first (``part_path``): try it, as /proc and /sys pass os.access yet hold none;
    # named as one, so that a probe a killed process left is removed by the next write, as its parts are
    probe = _new_part(target)
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    except OSError as exc:
        raise type(exc)(f"{what}: no file can be created in the folder {where} ({exc.strerror or exc})") from None
    finally:  # also where close() failed (NFS) or Ctrl-C came between the calls
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return target


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes | memoryview,
    *,
    sync: bool = True,
    like: str | os.PathLike[str] | None = None,
) -> Path:
    """Write ``data`` to a temporary file beside ``path``'s target, fsync it (``sync``), then rename it over the
    target. Engines pass ``sync=False`` (see ``ENGINES_SYNCED``); ``like``: see ``place_file``."""
    part = part_path(path)
    try:
        write_part(part, data)
    except OSError as exc:
        raise _about(exc, path) from None
    try:
        return place_file(part, path, sync=sync, like=like).path
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
    return _new_part(writable_target(path))


def _new_part(target: Path) -> Path:
    """``.<name>.<pid>.<random>.part`` beside ``target``: the one spelling ``_remove_stale_parts`` knows."""
    return target.parent / f".{_part_stem(target)}.{os.getpid()}.{os.urandom(4).hex()}.part"


_PART_EXTRA = len(".") + 7 + len(".") + 8 + len(".part")  # after the stem: a pid (pid_max <= 2**22: 7 digits), 8 hex


def _part_stem(target: Path) -> str:
    """The name a temporary file for ``target`` begins with: ``target``'s own name, or where that would make the
    temporary name longer than the folder's NAME_MAX (a valid name of 232 bytes or more), its first bytes and a
    hash of the whole name, so that the write of a long name does not fail at the end of a build."""
    try:
        limit = os.pathconf(target.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    name = os.fsencode(target.name)
    room = (limit if limit > 0 else 255) - 1 - _PART_EXTRA
    if len(name) <= room:
        return target.name
    import hashlib

    digest = hashlib.sha256(name).hexdigest()[:12]
    head = name[: max(room - len(digest) - 1, 0)].decode("utf-8", "ignore")  # never half a character
    return f"{head}~{digest}"


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


def place_file(
    part: str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    sync: bool = True,
    like: str | os.PathLike[str] | None = None,
) -> WrittenFile:
    """Make ``part``, a finished temporary file from ``part_path(path)``, the file at ``path``: fsync it (``sync``),
    give it the permissions of the file of ours it replaces (a new file, or another user's: those ``open()``
    gives), then rename it over the target, as ``atomic_write`` does. ``like``: take those of this file of ours
    instead (a manifest takes its engine's: it says where the engine and its model are)."""
    target = writable_target(path)
    mode = 0o666 & ~_UMASK
    group: int | None = None
    with contextlib.suppress(OSError if like is not None else FileNotFoundError):
        old = os.stat(resolve(like) if like is not None else target)
        if old.st_uid == os.geteuid():  # another user's file (planted where we write) must not set our mode
            mode = old.st_mode & 0o777  # no set-id or sticky bits on a file we write
            group = old.st_gid  # and its group: a 0640 file stays readable by that group only
    if Path(os.path.realpath(part)).parent != target.parent:
        raise OSError(f"{part} is not beside {target}")
    _remove_stale_parts(target)
    fd = os.open(part, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"{part} is not a regular file")
        if group is not None and group != info.st_gid:
            with contextlib.suppress(OSError):  # a group we are not in: the new file keeps ours (and the mode)
                os.fchown(fd, -1, group)
        os.fchmod(fd, mode)
        if sync:
            os.fsync(fd)
        os.replace(part, target)
    finally:
        os.close(fd)
    return WrittenFile(target, info.st_size, (info.st_dev, info.st_ino, info.st_mtime_ns))


def _remove_stale_parts(target: Path) -> None:
    """Delete our own temporary files for ``target`` whose writing process no longer exists."""
    pattern = re.compile(rf"^\.{re.escape(_part_stem(target))}\.(\d+)\.[^.]+\.part$")
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
    except (ProcessLookupError, OverflowError):  # OverflowError: no pid is that large (anyone can name a file)
        return False
    except PermissionError:
        return True
    return True


def is_text(head: bytes) -> bool:
    """Whether a file's first bytes (a few KiB) read as text: UTF-8, every character printable or white space (a
    character cut at the end of ``head`` counts). No ONNX model is: its first byte is a control character."""
    import codecs

    try:  # incremental: a character cut at the end of the head is not binary
        decoded = codecs.getincrementaldecoder("utf-8")().decode(head)
    except UnicodeDecodeError:
        return False
    return bool(decoded) and all(c.isprintable() or c in "\t\n\r\f\v" for c in decoded)


def not_onnx(head: bytes) -> str:
    """What a file that is no ONNX model is, in words, from its first bytes: the same words wherever it is given
    as a model (``build``, the MCP and LSP servers, ``inspect``), not TensorRT's parser assertion."""
    what = "a text file" if is_text(head) else "a binary file of another kind (or a damaged model)"
    return f"it is {what}, not an ONNX model (the binary file that torch.onnx.export and onnx.save write)"
