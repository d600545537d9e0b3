"""A real terminal for rendering tests: a command in a detached tmux pane (its own server socket), keys sent when
the screen shows a text, and everything the pane showed once the command exited."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest


def tmux_screen(
    tmp_path: Path,
    command: list[str],
    env: dict[str, str],
    *,
    width: int = 110,
    keys: Sequence[tuple[str, str, float]] = (),
) -> list[str]:
    """Run ``command`` in a detached tmux pane and return every line it showed (scrollback included) once it
    exited. ``keys``: (text to wait for on the screen, key to send, seconds to wait after sending it)."""
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("tmux is not installed")
    sock = f"trtw-{os.getpid()}-{tmp_path.name}"[:60]
    marker = tmp_path / "exited"
    shell = f"{' '.join(map(shlex.quote, command))}; echo $? > {shlex.quote(str(marker))}; sleep 600"
    base = [tmux, "-L", sock, "-f", "/dev/null"]
    # the pane's size, not COLUMNS/LINES (pytest-xdist's workers set them to 80x24): rich takes those first
    environ = {**{k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}, "TERM": "xterm-256color"}
    subprocess.run([*base, "new-session", "-d", "-x", str(width), "-y", "40", shell], check=True, env=environ)

    def capture() -> str:
        return subprocess.run(
            [*base, "capture-pane", "-p", "-J", "-S", "-5000"], check=True, capture_output=True, text=True
        ).stdout

    try:
        subprocess.run([*base, "set-option", "-g", "history-limit", "5000"], check=True)
        deadline = time.monotonic() + 240
        for wait_for, key, pause in keys:
            while wait_for not in capture() and not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert wait_for in capture(), f"the screen never showed {wait_for!r}:\n{capture()}"
            subprocess.run([*base, "send-keys", key], check=True)
            time.sleep(pause)
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marker.exists(), "the command did not end"
        shown = capture()
    finally:
        subprocess.run([*base, "kill-server"], check=False)
        socket_dir = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (socket_dir / sock).unlink(missing_ok=True)  # tmux leaves its socket file behind
    return [line.rstrip() for line in shown.splitlines()]
