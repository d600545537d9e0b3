"""The supervisor between a watcher and its command (Linux): it starts the command in its own process group and,
when the watcher dies (even by SIGKILL: the kernel sends this process its death signal), kills the whole group, so
no grandchild of the command (a shell's ``sleep``, a ``trtexec``) outlives the watcher.

Run as a script with the standard library only (``python -I -S _supervisor.py PARENT REPORT_FD COMMAND...``): it
imports nothing of trt_widget, and it passes the command the environment it was given itself (``/proc``).
"""

from __future__ import annotations

import os
import signal
import sys

# group signals (a stop's SIGINT, a terminate's SIGTERM) reach the command directly: here they only ask whether
# the watcher is gone (the watcher's death signal is SIGTERM)
WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Python ignores these at start; the command gets them back as any program starts with them
RESTORED = (*WATCHED, signal.SIGPIPE, signal.SIGXFSZ)


def _environment() -> dict[bytes, bytes]:
    """The environment this process was started with (Python may have changed ``os.environ``: LC_CTYPE)."""
    with open("/proc/self/environ", "rb") as f:
        return dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)


def main(argv: list[str]) -> None:
    parent, report, command = int(argv[0]), int(argv[1]), argv[2:]
    os.set_inheritable(report, False)

    def on_signal(_sig: int, _frame: object) -> None:
        if os.getppid() != parent:  # the watcher died: end the command and everything it started
            os.killpg(0, signal.SIGKILL)

    for sig in WATCHED:
        signal.signal(sig, on_signal)
    if os.getppid() != parent:  # it died before the handlers were in place
        os._exit(137)
    try:
        child = os.posix_spawnp(command[0], command, _environment(), setsigdef=RESTORED)
    except OSError as exc:
        os.write(report, str(exc.errno or 0).encode())
        os._exit(127)
    os.close(report)  # the command runs: the watcher stops waiting
    while True:
        _pid, status = os.waitpid(child, 0)
        if os.WIFEXITED(status):
            os._exit(os.WEXITSTATUS(status))
        if os.WIFSIGNALED(status):
            os._exit(128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main(sys.argv[1:])
