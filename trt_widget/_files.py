"""Atomic file writes: readers see the old file or the complete new one, never a partial file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Union

_UMASK = os.umask(0o022)  # read once at import (os.umask can only be read by setting it)
os.umask(_UMASK)


def atomic_write(path: Union[str, os.PathLike], data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path``, fsync it, then rename it over ``path``."""
    target = Path(path).expanduser()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the permissions open() would
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target
