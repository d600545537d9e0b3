"""Fourteenth adversarial re-run (issue 35): every read of a model path is bounded (at most 2 GiB, protobuf's
limit, ``_external_data.open_model``/``read_model``), except the copy ``trt-widget bundle --include-model`` makes:
``_add_file`` checks only that the file is regular. A model that is a link to a ``/proc`` file whose size says 0
but whose reading goes on (``/proc/self/pagemap``: 8 bytes per page of the address space, 256 GiB; a link a
cloned repository or a tarball carries as it is) is copied into the zip for hours at full CPU, the ``.part`` file
growing, where ``build`` of the same path ends in seconds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PAGEMAP = "/proc/self/pagemap"


@pytest.mark.skipif(not os.path.exists(PAGEMAP), reason="needs Linux /proc/self/pagemap")
@pytest.mark.xfail(
    strict=True,
    reason="issue 35, 14th re-run B1: bundle --include-model copies a model file without the 2 GiB bound",
)
def test_bundle_include_model_of_an_endless_proc_file_ends(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.symlink_to(PAGEMAP)
    command = [sys.executable, "-m", "trt_widget", "bundle", str(model), "-o", str(tmp_path / "b.zip")]
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    try:  # refused, or the model left out with a note: seconds (a build of it fails at once); the defect: hours
        subprocess.run([*command, "--include-model"], cwd=tmp_path, env=env, capture_output=True, timeout=150)
    except subprocess.TimeoutExpired:  # run() has killed it
        pytest.fail("bundle --include-model was still copying the model after 150 s")
