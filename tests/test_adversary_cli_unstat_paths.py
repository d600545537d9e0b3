"""Thirteenth adversarial re-run (issue 35, P1b): ``trt-widget matrix`` and ``bundle`` check a model with
``Path.is_file()``, which raises for a path ``stat()`` refuses (a name over 255 bytes; a folder the user may not
enter, EACCES: ``/root/m.onnx`` for an ordinary user): a Python traceback, where ``build`` says it in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget.models import deep_residual, to_bytes

LONG = "b" * 300 + ".onnx"  # one name over NAME_MAX (255): stat() says ENAMETOOLONG


@pytest.mark.parametrize("command", [["matrix", "--plain"], ["bundle", "-o", "b.zip"]])
def test_a_model_path_stat_refuses_is_one_error_line(command: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", command[0], str(tmp_path / LONG), *command[1:]],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (1, 2), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "too long" in done.stderr, done.stderr[-2000:]


def test_matrix_timing_cache_path_stat_refuses_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(to_bytes(deep_residual(1)))
    cache = tmp_path / ("d" * 300) / "t.cache"
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "matrix", "m.onnx", "--plain", "--timing-cache", str(cache)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (1, 2), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "too long" in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["build"], "no such user"),
        (["matrix", "--plain"], "no such user"),
        (["bundle", "-o", "b.zip"], "no such user"),
        (["inspect"], "no such file"),
    ],
)
def test_a_path_under_a_user_that_does_not_exist_is_one_error_line(
    command: list[str], said: str, tmp_path: Path
) -> None:
    """``~name/m.onnx`` of no user ``name``: ``bundle`` and ``inspect`` raised expand_user's ValueError as a
    traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", command[0], "~trtw_no_such_user_x/m.onnx", *command[1:]],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (1, 2), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and said in done.stderr, done.stderr[-2000:]
