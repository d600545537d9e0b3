"""Module state that belongs to the process that made it: a forked child (a ``multiprocessing`` worker) gets its
own, never its parent's copy, whose threads it lacks and whose locks one of those threads may have held."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerProcess(Generic[T]):
    """``make()``'s value for this process, made anew in a forked child: at the fork (``os.register_at_fork``), else
    on the child's first :meth:`get` (a fork that ran no hooks, a C library's ``fork()``). Module-level state only:
    each instance lives as long as the interpreter (its fork hook holds it)."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._pid = os.getpid()
        self._value = make()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._renew)

    def _renew(self) -> None:
        self._pid, self._value = os.getpid(), self._make()

    def get(self) -> T:
        """This process's value."""
        if self._pid != os.getpid():
            self._renew()
        return self._value
