"""Fourteenth adversarial re-run (issue 35): every read of a model path is bounded (at most 2 GiB, protobuf's
limit, ``_external_data.open_model``/``read_model``), except the copy ``trt-widget bundle --include-model`` makes:
``_add_file`` checks only that the file is regular. A model that is a link to ``/proc/self/pagemap`` (size 0,
256 GiB to read; a link a cloned repository or a tarball carries as it is) was copied into the zip for many
minutes at full CPU, the ``.part`` file growing, where ``build`` of the same path ends in seconds. The test uses a
sparse 4 TiB file, which ``build`` refuses at once by its size and the copy takes hours to compress at any speed
(the pagemap's time depends on the machine)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from attacks import sparse_file

from trt_widget.provenance._bundle import FileTooLarge, _add_file


def test_bundle_include_model_of_a_huge_model_ends(tmp_path: Path) -> None:
    model = sparse_file(tmp_path / "model.onnx")
    command = [sys.executable, "-m", "trt_widget", "bundle", str(model), "-o", str(tmp_path / "b.zip")]
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    try:  # refused: seconds (its build is refused by size); the defect: hours
        done = subprocess.run(
            [*command, "--include-model"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90
        )
    except subprocess.TimeoutExpired:  # run() has killed it
        pytest.fail("bundle --include-model was still copying the model after 90 s")
    assert done.returncode == 1, done.stderr
    refusal = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(refusal) == 1 and "larger than 2,147,483,648 bytes" in refusal[0], done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]  # no bundle, no .part


def test_a_model_read_past_its_bound_stops_the_copy(tmp_path: Path) -> None:
    """A model whose size says 0 and whose content is endless (a link to /proc/self/pagemap): the copy stops at the
    bound, the zip left unwritten. /proc/self/status (size 0, about 1 KiB to read) with a bound of 100 bytes."""
    status = tmp_path / "model.onnx"
    status.symlink_to("/proc/self/status")
    assert status.stat().st_size == 0 and len(status.read_bytes()) > 100
    real = os.path.realpath(status)  # what the bundle lists and copies: the real path checked (/proc/<pid>/status)
    with zipfile.ZipFile(tmp_path / "b.zip", "w") as archive, pytest.raises(FileTooLarge, match="larger than 100"):
        _add_file(archive, "model/model.onnx", real, "the model file itself", 100)
    with zipfile.ZipFile(tmp_path / "c.zip", "w") as archive:  # the same within its bound: all of it, past fstat's 0
        _add_file(archive, "model/model.onnx", real, "the model file itself", 1 << 20)
    with zipfile.ZipFile(tmp_path / "c.zip") as archive:
        assert archive.read("model/model.onnx").startswith(b"Name:")
