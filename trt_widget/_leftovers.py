"""Private temporary directories named after the process that owns them, and the sweep of those a dead one left.

A process killed with SIGKILL (a kernel restart, the OOM killer) runs no clean-up: its model copy in ``/dev/shm``
(RAM until reboot) or its ``trt-widget run`` directory would stay. Each directory is named
``<prefix><pid>-<random>``; the first one made with a prefix in a process removes that prefix's directories of
this user whose process has ended.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
import threading

_swept: set[tuple[str, str]] = set()
_lock = threading.Lock()


class UnsafeTempDir(PermissionError):
    """The temporary folder (or a folder above it) lets another user rename what is in it: a private directory
    made there could be swapped for theirs, with their code in it."""


SAFE_TMPDIR = (
    "set TMPDIR to a folder only you (or root) can write whose parents are also safe, such as /dev/shm or a "
    "folder under your home"
)


def private_dir(prefix: str, parent: str | None = None) -> str:
    """A new 0700 directory ``<prefix><pid>-<random>`` in ``parent`` (the temp directory by default), after the
    sweep of what ended processes left there with this prefix. Raises :class:`UnsafeTempDir` where another
    user could swap it (the directory holds code the command imports, pickles and engines)."""
    parent = check_parent(parent or tempfile.gettempdir())
    sweep(prefix, parent)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent)


def check_parent(parent: str, what: str = "the temporary folder", instead: str = SAFE_TMPDIR) -> str:
    """``parent`` resolved, once no folder on its way lets another user rename its entries: each must be ours or
    root's, and writable by no one else unless sticky (as ``/tmp``) — a mode 0700 directory does not stop the
    rename of its name in a folder others may write."""
    resolved = os.path.realpath(parent)
    if os.name != "posix":
        return resolved
    folder = resolved
    while True:
        info = os.stat(folder)
        by_acl = bool(info.st_mode & stat.S_IWGRP) and _has_access_acl(folder)  # the group bits are its mask
        others = info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and info.st_gid != os.getgid())
        why = ""
        if info.st_uid not in (0, os.getuid()):
            why = f"is owned by another user (uid {info.st_uid})"
        elif (others or by_acl) and not info.st_mode & stat.S_ISVTX:
            whom = "an ACL may let other users write it" if by_acl and not others else "may be written by other users"
            why = f"{whom} and has no sticky bit (chmod +t)"
        if why:
            raise UnsafeTempDir(
                f"{what} {parent!r}: {folder!r} {why}, so another user could swap trt_widget's "
                f"private directory there for one holding their code; {instead}"
            )
        if folder == os.path.dirname(folder):
            return resolved
        folder = os.path.dirname(folder)


def _has_access_acl(folder: str) -> bool:
    """Whether ``folder`` carries an extended POSIX access ACL (then its group mode bits are the ACL's mask, the
    most any named user or group gets, not the rights of its group alone)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        os.getxattr(folder, "system.posix_acl_access")
    except OSError:  # ENODATA: no ACL; ENOTSUP: a file system without ACLs
        return False
    return True


def sweep(prefix: str, parent: str) -> list[str]:
    """Remove (once per process) ``parent``'s ``<prefix><pid>-*`` directories of this user whose process has ended;
    returns what was removed."""
    with _lock:
        if (prefix, parent) in _swept:
            return []
        _swept.add((prefix, parent))
    removed: list[str] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(prefix):
            continue
        pid_text, dash, _ = name[len(prefix) :].partition("-")
        if not dash or not (pid_text.isascii() and pid_text.isdigit()) or _alive(int(pid_text)):
            continue
        path = os.path.join(parent, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():  # never a link, never another user's
            continue
        with contextlib.suppress(OSError):
            shutil.rmtree(path)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid <= 0 or pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: a number no pid can be (anyone can name a folder)
        return False
    except OSError:  # another user's process (EPERM): alive
        return True
    return True
