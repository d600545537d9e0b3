"""What the project says about itself is true: an RTX engine is called one where it is saved, and the Stop text
in the quick start and docs/stop.md states the grace period the code uses, for GPU builds too."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trt_widget import Build
from trt_widget.__main__ import engine_note, main
from trt_widget._backend import select_backend
from trt_widget.runners._base import DEFAULT_GRACE_S

ROOT = Path(__file__).resolve().parents[1]


def test_build_o_says_an_rtx_engine_is_not_for_nvidia_tensorrt_or_triton(
    onnx_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if select_backend()[0] != "rtx":
        pytest.skip("the line is for TensorRT for RTX's engines")
    engine = tmp_path / "model.engine"
    assert main(["build", str(onnx_path), "-o", str(engine), "--isolation", "thread", "--plain"]) == 0
    out, err = capsys.readouterr()
    assert f"written to {engine}" in out and engine.stat().st_size > 0
    (line,) = [line for line in err.splitlines() if "TensorRT for RTX engine" in line]
    assert line == (
        f"{engine} is a TensorRT for RTX engine (finished on the GPU when loaded): NVIDIA TensorRT and Triton's "
        "TensorRT backend cannot load it"
    )


def test_only_rtx_engines_get_the_line_and_save_says_it() -> None:
    assert engine_note("tensorrt") == "" and "Triton" in engine_note("rtx")
    assert Build.save.__doc__ is not None
    assert "TensorRT for RTX" in Build.save.__doc__ and "Triton's TensorRT backend" in Build.save.__doc__


def test_the_quickstart_states_the_grace_period_the_code_uses() -> None:
    cells = json.loads((ROOT / "notebooks" / "quickstart.ipynb").read_text())["cells"]
    text = " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    stated = re.findall(r"when none comes within ([\d.]+) s", text)
    assert stated == [f"{DEFAULT_GRACE_S:g}"]


def test_docs_stop_explains_stop_for_gpu_builds_with_the_default_grace() -> None:
    page = (ROOT / "docs" / "stop.md").read_text()
    gpu = next(p for p in page.split("\n\n") if p.startswith("On a GPU with NVIDIA TensorRT"))
    assert "tactic" in gpu and "minutes" in gpu
    assert f"default grace of {DEFAULT_GRACE_S:g} s" in " ".join(gpu.split())
