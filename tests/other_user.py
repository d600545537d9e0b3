"""Another user, a real one: ``nobody`` through ``setpriv``, for the tests of what a user can plant in a folder all
may write, as ``/tmp`` (links, FIFOs, stores, folders). The ``shared`` fixture (tests/conftest.py) is such a folder.
A plain module, as tests/attacks.py says why."""

from __future__ import annotations

import os
import shutil
import subprocess

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def can_act_as_nobody() -> bool:
    """Whether this process can run commands as ``nobody``: root, with ``setpriv`` installed."""
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def as_nobody(*command: str, timeout: float = 60) -> None:
    """Run ``command`` as ``nobody`` (CalledProcessError where it fails)."""
    subprocess.run([*NOBODY, *command], check=True, timeout=timeout)
