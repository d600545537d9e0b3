"""Twenty-third adversarial re-run (issue 35, W23-2, W23-3): W22-3's fix escapes the whole message in the CLI's
one-line error handlers, but two lines still print a path given on the command line with its newline raw: the
build failure of a model that does not parse ("trt-widget: build failed: could not parse PATH as ONNX", and the
view's "Failed after ..." line; ``trtexec --onnx=`` the same) and ``run --report``'s check before the command
("trt-widget run: error: cannot write --report: PATH is a directory"). A newline in the name forges a line of
its own (/srv/adv23/cli_paths.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

NAME = "no\nFORGED line"


def test_build_failure_of_an_unparsable_model_escapes_its_path(tmp_path: Path) -> None:
    (tmp_path / NAME).mkdir()
    model = tmp_path / NAME / "m.onnx"
    model.write_bytes(b"\x08\x07")  # an ONNX file of no graph: "could not parse PATH as ONNX"
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", "--plain", str(model)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "TRT_WIDGET_HISTORY": "off"},
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-2000:]
    assert "could not parse" in output, output[-2000:]
    assert not any(line.startswith("FORGED") for line in output.splitlines()), output


def test_run_report_check_escapes_its_path(tmp_path: Path) -> None:
    (tmp_path / NAME).mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "run", "--report", str(tmp_path / NAME), "--", sys.executable, "-c", ""],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-2000:]
    assert "--report" in output, output[-2000:]
    assert not any(line.startswith("FORGED") for line in output.splitlines()), output
