"""Fourteenth adversarial re-run (issue 35): ``trt-widget check ENGINE`` hashes all of ENGINE before it compares
the size its manifest records (``Manifest.verify`` -> ``file_sha256``; reuse compares the size first). An engine
that is a link to ``/proc/self/pagemap`` (size 0, 256 GiB to read) or a sparse file of terabytes, sent with a
manifest naming it, holds ``check`` at full CPU for minutes to hours; its size alone says it is not the engine.
The test uses a sparse 4 TiB file (hours of hashing at any speed; the pagemap's time depends on the machine)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from attacks import huge_file_a_manifest_names


def test_check_of_a_huge_engine_with_a_manifest_ends(tmp_path: Path) -> None:
    huge_file_a_manifest_names(tmp_path, "sent.engine")  # a real RTX build's manifest names the file sent
    command = [sys.executable, "-m", "trt_widget", "check", str(tmp_path / "sent.engine")]
    try:  # its size is not the manifest's: an answer at once; the defect: hours of hashing
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:  # run() has killed it
        pytest.fail("check was still hashing the engine after 60 s")
    assert "compatible" not in done.stdout, done.stdout
    # answered from the manifest (its size is not the file's), not for any other cause
    assert done.returncode == 1, done.stdout + done.stderr
    assert "its manifest sent.engine.manifest.json describes another engine" in done.stdout, done.stdout
