"""Twenty-first re-run, second half (issue 35, W1): a path given on the command line was printed whole in the
error line of ``build``, ``view``, ``inspect``, ``bundle`` and ``check``: a newline in it (a loop over a shared
folder's names hands over other users' names) forged a line of its own. Each path is shown with
``escape_controls``, as docs/security.md says of the CLI's messages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NAME = "no\nFORGED line \x1b[31mred"


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["build"], "ONNX file not found"),
        (["view"], "recording not found"),
        (["inspect"], "no such file"),
        (["bundle", "-o", "b.zip"], "no such file"),
        (["check"], "not found"),
    ],
)
def test_a_control_character_in_a_path_argument_is_escaped_in_the_error_line(
    command: list[str], said: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", command[0], str(tmp_path / NAME), *command[1:]],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-2000:]
    (line,) = [line for line in output.splitlines() if said in line]
    assert "no\\x0aFORGED line \\x1b[31mred" in line, line
    assert "\x1b" not in output and not any(line.startswith("FORGED") for line in output.splitlines()), output
