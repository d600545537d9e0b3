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


def test_inspect_of_a_folder_escapes_its_path(tmp_path: Path) -> None:
    (tmp_path / NAME).mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "inspect", str(tmp_path / NAME)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-2000:]
    assert "no\\x0aFORGED line is not a regular file" in output, output  # the path said, escaped
    assert not any(line.startswith("FORGED") for line in output.splitlines()), output


def test_serve_token_file_error_escapes_its_path(tmp_path: Path) -> None:
    (tmp_path / NAME).mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "serve", "--token-file", str(tmp_path / NAME), "--port", "0"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-2000:]
    assert "no\\x0aFORGED line is not a regular file" in output, output  # the path said, escaped
    assert not any(line.startswith("FORGED") for line in output.splitlines()), output


def test_serve_data_start_line_escapes_its_path(tmp_path: Path) -> None:
    """The start line "trt-widget serve: URL  (data PATH, ...)" printed --data raw."""
    command = [sys.executable, "-m", "trt_widget", "serve", "--data", str(tmp_path / NAME), "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path) as child:
        try:
            lines = []
            assert child.stdout is not None
            for line in child.stdout:
                lines.append(line)
                if line.startswith("page:"):
                    break
        finally:
            child.terminate()
            child.wait(60)
    output = "".join(lines)
    assert any(line.startswith("page:") for line in lines), output[-2000:]
    assert "no\\x0aFORGED line" in output, output
    assert not any(line.startswith("FORGED") for line in lines), output


def test_build_engine_note_escapes_its_output_path(tmp_path: Path) -> None:
    """The note after ``build -o`` ("PATH is a TensorRT for RTX engine ...") printed -o raw."""
    from trt_widget._backend import select_backend
    from trt_widget.models import deep_residual, to_bytes

    if select_backend()[0] != "rtx":
        pytest.skip("the engine-kind note is TensorRT for RTX's")
    (tmp_path / "model.onnx").write_bytes(to_bytes(deep_residual(1)))
    (tmp_path / NAME).mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", "model.onnx", "-o", f"{NAME}/e.engine", "--plain"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-2000:]
    assert "no\\x0aFORGED line/e.engine is a TensorRT for RTX engine" in output, output[-2000:]
    assert not any(line.startswith("FORGED") for line in output.splitlines()), output
