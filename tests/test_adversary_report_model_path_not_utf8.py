"""Eighteenth adversarial re-run (issue 35), U1's family: the seventeenth's U1 fix builds a model whose path is not
UTF-8 (a folder named with a Latin-1 byte, held by Python with a lone surrogate) and keeps its manifest and history
record, but the HTML report of such a build cannot be written: ``report/_page.py`` encodes the page (which names
the model) with ``text.encode("utf-8")``, so ``build --report`` ends rc 1 "cannot write the --report file ...
surrogates not allowed" after a succeeded build (no report), and ``Build.to_html`` raises UnicodeEncodeError. The
report should be written, the name shown escaped as the terminal and the manifest show it. Real RTX builds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget import Build
from trt_widget.models import deep_residual, to_bytes


def _model_in(tmp_path: Path, folder: bytes) -> bytes:
    directory = os.path.join(os.fsencode(tmp_path), folder)
    os.mkdir(directory)
    with open(os.path.join(directory, b"m.onnx"), "wb") as handle:
        handle.write(to_bytes(deep_residual(2)))
    return os.path.join(folder, b"m.onnx")


@pytest.mark.xfail(strict=True, reason="U2: the HTML report of a model whose path is not UTF-8 cannot be encoded")
def test_build_report_of_a_model_whose_folder_is_not_utf8_is_written(tmp_path: Path) -> None:
    model = _model_in(tmp_path, b"d\xff")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", model, "-o", "m.engine", "--plain", "--report", "r.html"],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    said = (done.stdout + done.stderr).decode("utf-8", "replace")
    assert (tmp_path / "m.engine").stat().st_size > 0, said[-1500:]  # the build itself succeeds (U1's fix)
    assert "surrogates not allowed" not in said, said[-1500:]
    assert done.returncode == 0, said[-1500:]
    assert "<html" in (tmp_path / "r.html").read_text(encoding="utf-8")


@pytest.mark.xfail(strict=True, reason="U2: Build.to_html raises UnicodeEncodeError for a model path not UTF-8")
def test_to_html_of_a_model_whose_folder_is_not_utf8(tmp_path: Path) -> None:
    model = _model_in(tmp_path, b"e\xff")
    build = Build(os.fsdecode(os.path.join(os.fsencode(tmp_path), model)), output=str(tmp_path / "m.engine"))
    build.start()
    assert build.wait(300) == "succeeded", build.error
    build.to_html(tmp_path / "r.html")
    assert "<html" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_control_the_same_report_in_a_utf8_folder_is_written(tmp_path: Path) -> None:
    model = _model_in(tmp_path, b"dq")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", model, "-o", "m.engine", "--plain", "--report", "r.html"],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    said = (done.stdout + done.stderr).decode("utf-8", "replace")
    assert done.returncode == 0, said[-1500:]
    assert "<html" in (tmp_path / "r.html").read_text(encoding="utf-8")
