"""Python processes of our own (the builder process, ``watch_call``'s process) that never import from the working
directory: a ``queue.py`` or ``json.py`` in the folder a command was started from must not run inside them.

``python -m module`` puts the working directory first on ``sys.path`` before it imports ``runpy``, and ``-c`` puts
``''`` (the working directory) there. So the process starts with ``-c`` (and ``-P`` where Python has it, 3.11+)
and its code first drops every empty entry from ``sys.path``: nothing is imported between the interpreter putting
that entry there and ``-c``'s code running. ``-I`` is not used: it would also drop ``PYTHONPATH``, the user's site
packages and every ``PYTHON*`` setting the user made for the builder.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

SAFE_PATH_FLAG: tuple[str, ...] = ("-P",) if sys.version_info >= (3, 11) else ()

# The first line of every -c program started here: `sys` is built in, so this line imports nothing from the path.
DROP_WORKING_DIRECTORY = "import sys as _sys; _sys.path[:] = [_p for _p in _sys.path if _p]; del _sys\n"


def python_command(code: str, *args: str) -> list[str]:
    """The command line running ``code`` (with ``sys.argv[1:]`` = ``args``) in this interpreter without the working
    directory on ``sys.path``."""
    return [sys.executable, *SAFE_PATH_FLAG, "-c", DROP_WORKING_DIRECTORY + code, *args]


def module_command(module: str, *args: str) -> list[str]:
    """``python -m module args`` as ``python_command`` runs it: ``main(sys.argv[1:])`` of ``module``."""
    return python_command(f"from {module} import main\nmain(__import__('sys').argv[1:])", *args)


def python_path(env: Mapping[str, str], *first: str) -> str:
    """``PYTHONPATH`` for a process of ours: ``first``, then the user's entries without empty ones (an empty entry,
    as ``PYTHONPATH=$PYTHONPATH:/x`` leaves, means the working directory)."""
    entries = [*first, *env.get("PYTHONPATH", "").split(os.pathsep)]
    return os.pathsep.join(entry for entry in entries if entry)


def parent_path() -> list[str]:
    """This process's ``sys.path`` for a child that loads this process's functions: ``''`` (the working directory,
    where an interactive session imports from) as the absolute folder it means now. The child appends these after
    its own entries, so the user's modules are found but never shadow the standard library or installed packages."""
    cwd = os.getcwd()
    return [entry or cwd for entry in sys.path]


def hold_standard_fds() -> None:
    """Put ``/dev/null`` on a closed fd 0, 1 or 2 of this process (cron's or a daemon's ``<&-``) before making pipes
    for a child: else a pipe takes that number, and the child's stdin (``/dev/null``) replaced it there or its
    stdout was the pipe."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)  # inheritable, as a standard fd is
                os.close(null)
            else:
                os.set_inheritable(fd, True)
