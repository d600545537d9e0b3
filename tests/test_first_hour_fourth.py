"""Issue 39's fourth trial: what a new user still tripped over (check's wording, the serve page's failure reason,
a queued build's header, watched builds' labels, the terminal's cancel tree, the matrix's two times)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trt_widget.__main__ import main


def test_check_says_what_was_checked_not_that_it_loads(
    onnx_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 8: no engine is loaded by a check (and none can be with no GPU): the line says it is compatible, and
    why it was not loaded."""
    from trt_widget._gpu import gpu_identity

    engine = tmp_path / "e.engine"
    assert main(["build", str(onnx_path), "-o", str(engine), "--plain"]) == 0
    capsys.readouterr()
    assert main(["check", str(engine)]) == 0
    line = capsys.readouterr().out.strip()
    assert "loads" not in line and ": compatible with this TensorRT" in line, line
    assert ("not loaded: no GPU here" in line) == (gpu_identity() is None), line
    assert main(["check", str(engine), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["loads"] is True and said["verdict"] == "compatible", said
