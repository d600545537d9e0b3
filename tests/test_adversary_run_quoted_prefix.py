"""Sixteenth adversarial re-run (issue 35): ``trt-widget run`` from a virtual environment whose path holds an
apostrophe (``~/Bob's project/.venv``) or a backslash watches nothing. The sitecustomize it injects (28e2688) puts
``repr()`` of "source <prefix>/bin/activate" inside an f-string's braces; Python 3.11 refuses a quote of the
f-string's own kind (repr picks ``"`` for a text holding ``'``) or a backslash there, so every Python process of the
command prints "Error in sitecustomize ... SyntaxError" and its TensorRT builds are not shown (nor is the command's
own sitecustomize run). A real TensorRT for RTX build, no trt_widget in the command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from user_scripts import DIRECT_BUILD

from trt_widget.models import deep_residual, to_bytes


@pytest.mark.xfail(
    strict=True,
    reason="issue 35, 16th re-run Q1: run's sitecustomize is a SyntaxError when the environment's path holds an "
    "apostrophe (repr of the activate hint inside an f-string expression); the build is not watched",
)
def test_run_watches_builds_from_an_environment_whose_path_holds_an_apostrophe(tmp_path: Path) -> None:
    if sys.prefix == sys.base_prefix:
        pytest.skip("needs trt_widget installed in a virtual environment (the activate hint is given only there)")
    env = tmp_path / "Bob's project"
    env.symlink_to(sys.prefix, target_is_directory=True)  # the same environment, reached by such a path
    python = env / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                          check=True).stdout.strip() == str(env)  # fmt: skip
    (tmp_path / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    (tmp_path / "direct.py").write_text(DIRECT_BUILD, encoding="utf-8")
    done = subprocess.run(
        [str(python), "-m", "trt_widget", "run", "--plain", "--", str(python), "direct.py", "m.onnx"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-1500:]
    assert "ENGINE" in done.stdout, said[-1500:]  # the command itself ran its build
    assert "SyntaxError" not in said, said[-1500:]
    assert "Succeeded in" in said, said[-1500:]  # and trt-widget run showed it
