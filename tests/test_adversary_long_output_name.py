"""Fifteenth adversarial re-run (issue 35): an output file name of 232 to 255 bytes is a valid name (``touch``
makes it), but trt_widget writes every file through a temporary ``.<name>.<pid>.<8 hex>.part`` beside it, 23 bytes
longer, which no file system takes (NAME_MAX 255). Nothing checks that before the build (``check_writable`` says a
bad path "is found before the build's time is spent"): the whole build runs, then fails with "File name too long"
naming the user's valid name, and the engine is lost ("The engine is not saved"). A real RTX build."""

from __future__ import annotations

import os
from pathlib import Path

from trt_widget import Build, models

NAME = "e" * 240 + ".engine"  # 247 bytes: a valid file name


def test_a_valid_long_output_name_is_written(tmp_path: Path) -> None:
    """Written through a shortened temporary name (``_files``); no refusal, for this or any other cause."""
    (tmp_path / "m.onnx").write_bytes(models.to_bytes(models.deep_residual(2)))
    output = tmp_path / NAME
    output.touch()  # the file system takes the name
    output.unlink()
    build = Build(str(tmp_path / "m.onnx"), output=str(output), history=False)
    build.start()
    build.wait(300)
    assert build.status == "succeeded", f"{build.status}: {str(build.error or build.status_detail)[:200]}"
    assert output.stat().st_size > 0
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".part")]
