"""Private temporary directories, each holding a lock its maker keeps while it lives, and the sweep of those whose
maker has ended.

A process killed with SIGKILL (a kernel restart, the OOM killer) runs no clean-up: its model copy in ``/dev/shm``
(RAM until reboot) or its ``trt-widget run`` directory would stay. Each directory is named
``<prefix><pid>-<random>`` and holds ``LOCK_NAME``, ``flock``ed by the process that made it for as long as it keeps
the directory; the first one made with a prefix in a process removes that prefix's directories of this user whose
lock it can take. A lock, not the pid: a process of another PID namespace sharing ``/dev/shm`` or ``/tmp``
(``docker --ipc=host``, a Kubernetes pod) cannot see the maker's pid, but sees its lock.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import NamedTuple

from ._fork import PerProcess

_swept: set[tuple[str, str]] = set()
_lock = PerProcess(threading.Lock)  # a forked child's own: the parent's may have been held by a thread it lacks
LOCK_NAME = ".trt_widget.lock"  # in each private directory, flocked by its maker while it lives


class _Made(NamedTuple):
    """A directory made here: by which process (a forked child inherits this map; the parent's directories are
    the parent's to remove, never its child's as it ends) and its lock file, held open (None: no lock there).
    O_CLOEXEC: a command the maker starts does not hold the lock; a forked child does, sharing it, so the directory
    of a parent that died stays while its forked children live."""

    pid: int
    lock_fd: int | None


_made: dict[str, _Made] = {}  # by path


class UnsafeTempDir(PermissionError):
    """The temporary folder (or a folder above it) lets another user rename what is in it: a private directory
    made there could be swapped for theirs, with their code in it."""


SAFE_TMPDIR = (
    "set TMPDIR to a folder only you (or root) can write whose parents are also safe, such as /dev/shm or a "
    "folder under your home"
)


def private_dir(prefix: str, parent: str | None = None) -> str:
    """A new 0700 directory ``<prefix><pid>-<random>`` in ``parent`` (the temp directory by default) whose lock this
    process holds until :func:`remove_private_dir`, after the sweep of what ended processes left there with this
    prefix. Raises :class:`UnsafeTempDir` where another user could swap it (the directory holds code the command
    imports, pickles and engines)."""
    parent = check_parent(parent or tempfile.gettempdir())
    sweep(prefix, parent)
    path = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent)
    try:
        fd = _hold(path)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    with _lock.get():
        _made[path] = _Made(os.getpid(), fd)
    return path


def remove_private_dir(path: str) -> None:
    """Remove a directory :func:`private_dir` made, then let go of its lock (in that order: no sweep sees it free
    while it is still there). In a forked child, a directory its parent made is left alone: the parent still uses
    it (the child's end, its exit hooks, must not pull it away)."""
    with _lock.get():
        made = _made.get(path)
    if made is not None and made.pid != os.getpid():
        return
    shutil.rmtree(path, ignore_errors=True)
    with _lock.get():
        made = _made.pop(path, None)
    if made is not None and made.lock_fd is not None:
        os.close(made.lock_fd)  # never LOCK_UN: a forked child's copy of the descriptor keeps its own hold


def _hold(path: str) -> int | None:
    """Lock ``path``'s lock file for this process's life (or until :func:`remove_private_dir`); its descriptor. It
    is locked under another name, then renamed into place, so a sweep never finds it there unlocked. Where the file
    system has no locks (``flock`` refused), the directory holds no lock file (None): the sweep leaves such
    directories alone."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no sweep either
        return None
    new = os.path.join(path, LOCK_NAME + ".new")
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        os.unlink(new)
        return None
    try:
        os.rename(new, os.path.join(path, LOCK_NAME))
    except BaseException:
        os.close(fd)
        raise
    return fd


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
        sticky = info.st_mode & stat.S_ISVTX
        by_acl = bool(info.st_mode & stat.S_IWGRP) and _has_access_acl(folder)  # the group bits are its mask
        by_group = _group_label(info.st_gid) if info.st_mode & stat.S_IWGRP and not sticky else ""
        why = ""
        if info.st_uid not in (0, os.getuid()):
            why = f"is owned by another user (uid {info.st_uid})"
        elif info.st_mode & stat.S_IWOTH and not sticky:
            why = "may be written by other users and has no sticky bit (chmod +t)"
        elif by_acl and not sticky:  # its group bits are the ACL's mask: the ACL, not the group, is the door
            why = "an ACL may let other users write it and has no sticky bit (chmod +t)"
        elif by_group:
            why = f"is writable by {by_group} and has no sticky bit (chmod g-w or chmod +t)"
        if why:
            raise UnsafeTempDir(
                f"{what} {parent!r}: {folder!r} {why}, so another user could swap trt_widget's "
                f"private directory there for one holding their code; {instead}"
            )
        if folder == os.path.dirname(folder):
            return resolved
        folder = os.path.dirname(folder)


def _group_label(gid: int) -> str:
    """Who a group-writable folder lets write: its group, whose members no file on this machine lists for sure.
    A process may hold any group without an entry in /etc/group or /etc/passwd (a container's ``-u 1001:0``,
    Kubernetes' ``fsGroup``, ``setpriv --groups``), so even a user's private group may hold another user."""
    import grp

    try:
        name = repr(grp.getgrgid(gid).gr_name)
    except (KeyError, OverflowError):
        name = str(gid)
    return f"group {name} (any process holding that group, listed or not)"


def temp_dir_refused() -> str:
    """Why process builds cannot use the temporary folder ("" when they can): what a service says once at start,
    rather than failing every build it is sent."""
    try:
        check_parent(tempfile.gettempdir())
    except OSError as exc:  # UnsafeTempDir, or a folder that vanished
        return f"builds cannot use {exc}" if isinstance(exc, UnsafeTempDir) else f"the temporary folder: {exc}"
    return ""


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
    """Remove (once per process) ``parent``'s ``<prefix><pid>-*`` directories of this user whose lock file is not
    held (their maker ended, in whatever PID namespace); returns what was removed. Never a link, never another
    user's directory; one without a lock file (made by an earlier version, or being made now) is left alone."""
    with _lock.get():
        if (prefix, parent) in _swept:
            return []
        _swept.add((prefix, parent))
    removed: list[str] = []
    try:
        import fcntl

        names = os.listdir(parent)
    except (ImportError, OSError):
        return removed
    for name in names:
        if not name.startswith(prefix):
            continue
        pid_text, dash, _ = name[len(prefix) :].partition("-")
        if not dash or not (pid_text.isascii() and pid_text.isdigit()):
            continue
        path = os.path.join(parent, name)
        with contextlib.suppress(OSError):
            if _remove_if_free(path, fcntl.flock, fcntl.LOCK_EX | fcntl.LOCK_NB):
                removed.append(path)
    return removed


def _remove_if_free(path: str, flock: Callable[[int, int], None], how: int) -> bool:
    """Remove the directory ``path`` if it is ours, not a link, and its lock file can be locked now (``how``:
    exclusive, non-blocking); whether it was. Raises OSError where it cannot tell (or cannot remove it)."""
    folder = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)  # a link: ELOOP
    try:
        if os.fstat(folder).st_uid != os.getuid():
            return False
        lock = os.open(LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=folder)
        try:
            if not stat.S_ISREG(os.fstat(lock).st_mode):
                return False
            try:
                flock(lock, how)
            except BlockingIOError:  # held: its maker lives
                return False
            shutil.rmtree(path)  # while locked: the lock is let go once the file is gone
            return True
        finally:
            os.close(lock)
    finally:
        os.close(folder)
