"""What a command run in a pseudo-terminal (``pexpect.spawn`` with an encoding) wrote, as text: shared by the CLI
tests of several folders (a plain module, as tests/attacks.py says why)."""

from __future__ import annotations

import os
import sys

import pexpect


def before(child: pexpect.spawn[str]) -> str:
    """What the child wrote before the last match (text: the child was spawned with an encoding)."""
    assert isinstance(child.before, str), child.before
    return child.before


def through_match(child: pexpect.spawn[str]) -> str:
    """What the child wrote up to the end of the last match, a text pattern's."""
    assert isinstance(child.after, str), child.after
    return before(child) + child.after


def cli_in_pty(*args: str, cwd: str | os.PathLike[str], width: int = 60, timeout: float = 300) -> pexpect.spawn[str]:
    """``trt-widget ARGS`` (this interpreter's) in a pseudo-terminal ``width`` columns wide, as text; the pty's size
    rules (COLUMNS and LINES dropped) and TERM=xterm."""
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    environ["TERM"] = "xterm"
    return pexpect.spawn(
        sys.executable,
        ["-m", "trt_widget", *args],
        cwd=str(cwd),
        dimensions=(40, width),
        env=environ,
        encoding="utf-8",
        timeout=timeout,
    )
