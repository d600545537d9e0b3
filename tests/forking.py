"""Forking pytest's own process while it runs threads, as a ``multiprocessing`` user's process does (shared by the
fork tests of several folders; a plain module, as tests/attacks.py says why).

Python 3.12+ warns of that fork (a DeprecationWarning: a multi-threaded process). Under ``filterwarnings = error``
CPython drops the exception the warning becomes (a fork cannot fail on it), so it was never seen: here it is
expected, which also proves the parent ran threads when it forked, the case these tests are about."""

from __future__ import annotations

import contextlib
import sys
from multiprocessing.process import BaseProcess

import pytest

THREADED_FORK = r"is multi-threaded, use of fork\(\) may lead to deadlocks in the child"


WARNS = sys.version_info >= (3, 12)  # the version that added the warning


def start_forked(child: BaseProcess) -> None:
    """``child.start()`` for a ``fork`` context's process, from this process while it runs threads."""
    with pytest.warns(DeprecationWarning, match=THREADED_FORK) if WARNS else contextlib.nullcontext():
        child.start()
