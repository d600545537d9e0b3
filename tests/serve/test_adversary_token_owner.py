"""Tenth adversarial re-run (issue 35): a ``--token-file`` another user owns is a token they chose and may
change; ssh refuses a key the user does not own, as well as one others can read. Root reads anyone's 0600 file,
so ``serve`` run as root took ``nobody``'s file (a name in /tmp they made first) and let ``nobody`` in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TOKEN = "attacker-chosen-token-123456"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_token_file_another_user_owns_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    os.chown(token_file, 65534, 65534)  # nobody's, private to nobody: its mode passes the check
    for command in (["serve", "--port", "0", "--data", str(tmp_path / "data")], ["mcp", "--http", "--port", "0"]):
        try:
            done = subprocess.run(
                [sys.executable, "-m", "trt_widget", *command, "--token-file", str(token_file)],
                capture_output=True,
                text=True,
                timeout=20,
            )
        except subprocess.TimeoutExpired:  # it started serving with nobody's token
            pytest.fail(f"{command[0]} started with a token file owned by another user")
        assert done.returncode == 2 and "owned by another user" in done.stderr, (command, done.stderr[-1000:])
