"""Eleventh adversarial re-run (issue 35, N2): the tenth's fix checked the owner and mode of the token file it
opened, but followed any symlink to it. ``nobody`` planted a link to ``/proc/self/personality`` (owned by whoever
reads it, 0400, holding ``00000000``): ``serve`` and ``mcp --http`` ran with a token ``nobody`` knew. A secret is
never read through another user's link, nor from a file whose size is not what it holds (``/proc``, ``/sys``);
a link of one's own (or root's) to a private token file still works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from other_user import as_nobody

TOKEN = "private-token-from-a-file-0123456789"
COMMANDS = [["serve", "--port", "0"], ["mcp", "--http", "--port", "0"]]


def _refused(command: list[str], token_file: Path, data: Path) -> str:
    """The one line ``command`` exits 2 with; a failure where it starts serving instead."""
    extra = ["--data", str(data)] if command[0] == "serve" else []
    try:
        done = subprocess.run(
            [sys.executable, "-m", "trt_widget", *command, *extra, "--token-file", str(token_file)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{command[0]} started with the token read through {token_file}")
    assert done.returncode == 2, (command, done.stderr[-1000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot read --token-file" in lines[0], (command, done.stderr[-1000:])
    return lines[0]


def test_a_token_file_linked_by_another_user_to_a_proc_file_is_refused(shared: Path, tmp_path: Path) -> None:
    folder = shared / "nobodys"  # a folder of nobody's (not sticky): the kernel follows any link in it
    as_nobody("mkdir", "-m", "0755", str(folder), timeout=30)
    link = folder / "token"
    as_nobody("ln", "-s", "/proc/self/personality", str(link), timeout=30)
    for command in COMMANDS:
        line = _refused(command, link, tmp_path / "data")
        assert f"{link} is a symbolic link that another user (uid 65534) owns" in line, line
        assert "read a secret through it" in line, line


@pytest.mark.skipif(not Path("/proc/self/personality").exists(), reason="needs Linux's /proc")
def test_a_token_file_on_proc_is_refused_even_through_ones_own_link(tmp_path: Path) -> None:
    link = tmp_path / "token"
    link.symlink_to("/proc/self/personality")  # the reader's own, 0400: its owner and mode pass the checks
    for command in COMMANDS:
        line = _refused(command, link, tmp_path / "data")
        assert "says it holds 0 bytes but 9 were read: not a file on disk" in line, line


def test_ones_own_link_to_a_private_token_file_still_works(tmp_path: Path) -> None:
    token_file = tmp_path / "real" / "token"
    token_file.parent.mkdir()
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    link = tmp_path / "token"
    link.symlink_to(token_file)  # root's when the tests run as root: root's links are trusted too
    command = [sys.executable, "-m", "trt_widget", "serve", "--port", "0", "--data", str(tmp_path / "data")]
    process = subprocess.Popen(
        [*command, "--token-file", str(link)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ),
    )  # fmt: skip
    try:
        assert process.stdout is not None
        while not (first := process.stdout.readline()).startswith("trt-widget serve: http://"):
            assert first, "the server ended before its banner"
        url = first.split()[2]
        assert httpx.get(f"{url}/builds", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60).status_code == 200
        assert httpx.get(f"{url}/builds", headers={"Authorization": "Bearer 00000000"}, timeout=60).status_code == 401
    finally:
        process.kill()
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()
