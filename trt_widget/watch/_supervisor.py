"""The supervisor between a watcher and its command (Linux): it starts the command in its own process group and,
when the watcher dies (even by SIGKILL: the kernel sends this process its death signal), kills the whole group, so
no grandchild of the command (a shell's ``sleep``, a ``trtexec``) outlives the watcher.

Run as a script with the standard library only (``python -I -S _supervisor.py PARENT REPORT_FD COMMAND...``): it
imports nothing of trt_widget, and it passes the command the environment it was given itself (``/proc``).
"""

from __future__ import annotations

import errno
import os
import signal
import sys

# group signals (a stop's SIGINT, a terminate's SIGTERM) reach the command directly: here they only ask whether
# the watcher is gone (the watcher's death signal is SIGTERM)
WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Python ignores these at start; the command gets them back as any program starts with them
RESTORED = (*WATCHED, signal.SIGPIPE, signal.SIGXFSZ)
PF_EXITING = 0x4  # a thread's flag (/proc/.../stat, field 9) from the first instant of its exit


def _environment() -> dict[bytes, bytes]:
    """The environment this process was started with (Python may have changed ``os.environ``: LC_CTYPE), less a
    variable with an empty name (``=value``: POSIX allows it, ``posix_spawnp`` refuses it, no name can read it)."""
    with open("/proc/self/environ", "rb") as f:
        pairs = [item.partition(b"=") for item in f.read().split(b"\0")]
    return {name: value for name, equals, value in pairs if name and equals}


def _exiting(parent: int) -> bool:
    """Whether every thread of ``parent`` has begun to exit (False where ``/proc`` cannot tell)."""
    try:
        threads = os.listdir(f"/proc/{parent}/task")
    except OSError:
        return False
    for tid in threads:
        try:
            with open(f"/proc/{parent}/task/{tid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # this thread has ended
        fields = stat.rsplit(b")", 1)[-1].split()  # after the name, which may hold anything
        if len(fields) < 7 or not fields[6].isdigit() or not int(fields[6]) & PF_EXITING:
            return False
    return True


def watcher_gone(parent: int) -> bool:
    """Whether the watcher died or is dying. A dying process's files close before the kernel hands its children
    on and signals them: the command, which ends itself on its connection's EOF, can end first, and the watcher
    is then still this process's parent, every one of its threads exiting."""
    if os.getppid() != parent:
        return True
    # the last look at the parent: its pid cannot be reused while it is, so /proc named the watcher
    return _exiting(parent) or os.getppid() != parent


def main(argv: list[str]) -> None:
    parent, report, command = int(argv[0]), int(argv[1]), argv[2:]
    os.set_inheritable(report, False)

    def on_signal(_sig: int, _frame: object) -> None:
        if watcher_gone(parent):  # end the command and everything it started
            os.killpg(0, signal.SIGKILL)

    for sig in WATCHED:
        signal.signal(sig, on_signal)
    if os.getppid() != parent:  # it died before the handlers were in place
        os._exit(137)
    try:
        child = os.posix_spawnp(command[0], command, _environment(), setsigdef=RESTORED)
    except (OSError, ValueError) as exc:  # ValueError: an argument or a variable that execve cannot take
        os.write(report, str(getattr(exc, "errno", None) or errno.EINVAL).encode())
        os._exit(127)
    os.close(report)  # the command runs: the watcher stops waiting
    while True:
        _pid, status = os.waitpid(child, 0)
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            break
    # The command may have ended because the watcher died (its connection's EOF) before the death signal came
    # here: its group ends as on that signal. A watcher that lives (one that only turned a process away) keeps it.
    if watcher_gone(parent):
        os.killpg(0, signal.SIGKILL)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main(sys.argv[1:])
