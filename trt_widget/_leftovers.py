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
import tempfile
import threading

_swept: set[tuple[str, str]] = set()
_lock = threading.Lock()


def private_dir(prefix: str, parent: str | None = None) -> str:
    """A new 0700 directory ``<prefix><pid>-<random>`` in ``parent`` (the temp directory by default), after the
    sweep of what ended processes left there with this prefix."""
    parent = parent or tempfile.gettempdir()
    sweep(prefix, parent)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent)


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
