"""Twenty-second adversarial re-run (issue 35, W22-3): the twenty-first's W2 fix escapes a path in the not-found
lines of ``build``, ``view``, ``inspect``, ``bundle`` and ``check``, but other messages still print a path given on
the command line raw: ``inspect`` of a folder (the OSError's own text repeats the path), ``serve --token-file``,
``serve --data``'s start line and the engine-kind note after ``build -o``/``demo -o``. A newline in the name
forges a line of its own (/srv/adv22/cli_paths.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NAME = "no\nFORGED line"


@pytest.mark.xfail(strict=True, reason="adversary run 22: W22-3 a path's newline is raw in inspect's folder error")
def test_inspect_of_a_folder_escapes_its_path(tmp_path: Path) -> None:
    (tmp_path / NAME).mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "inspect", str(tmp_path / NAME)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-2000:]
    assert not any(line.startswith("FORGED") for line in output.splitlines()), output


@pytest.mark.xfail(strict=True, reason="adversary run 22: W22-3 a path's newline is raw in serve --token-file's error")
def test_serve_token_file_error_escapes_its_path(tmp_path: Path) -> None:
    (tmp_path / NAME).mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "serve", "--token-file", str(tmp_path / NAME), "--port", "0"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-2000:]
    assert not any(line.startswith("FORGED") for line in output.splitlines()), output
