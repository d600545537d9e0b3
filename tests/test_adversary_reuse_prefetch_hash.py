"""Fifteenth adversarial re-run (issue 35): the fourteenth's C2 fix has reuse compare the manifest's size before it
hashes an engine (``_reuse._checked`` passes ``size=``), but ``Build._find_reusable`` first starts a prefetch
thread, ``hashes.file(output)`` with no size, and joins it without a bound before it looks at any manifest. With
``--reuse``, an output that is a file of terabytes (sparse) beside a manifest that records another size (a stale
one, or one sent with the file) holds the build, before any phase, for hours at full CPU; a stop cannot end the
join. The size alone says it is not the engine. A real ``trt-widget build --reuse`` and a real RTX build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from attacks import huge_file_a_manifest_names

BOUND_S = 90


def test_reuse_with_a_huge_output_and_a_manifest_of_another_size_ends(tmp_path: Path) -> None:
    huge_file_a_manifest_names(tmp_path, "out.engine")  # a real RTX build's manifest names the file beside it
    command = [
        sys.executable, "-m", "trt_widget", "build", str(tmp_path / "model.onnx"), "-o", str(tmp_path / "out.engine"),
        "--reuse", "--reuse-dir", str(tmp_path / "cache"), "--plain",
    ]  # fmt: skip
    try:  # its size is not the manifest's: built anew at once; the defect: hours of hashing first
        done = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=BOUND_S,
            env={**os.environ, "TRT_WIDGET_HISTORY": "off"},
        )  # fmt: skip
    except subprocess.TimeoutExpired:  # run() has killed it
        pytest.fail(f"the --reuse build was still hashing its output after {BOUND_S} s")
    assert done.returncode == 0, done.stdout[-500:] + done.stderr[-500:]
