"""Issue 39, the sixth newcomer trial: what a new user tripped over in the widget and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from trt_widget import Build, models
from trt_widget._snapshot import snapshot


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_a_build_that_failed_before_tensorrt_built_shows_no_memory_peak(tmp_path: Path, isolation: str) -> None:
    """Item 2: ``BuildWidget("nope.onnx")`` failed in 11 ms and showed "memory peak 872.5 MiB", the warm worker's
    memory, not the build's; a build TensorRT built still shows its peak."""
    missing = Build(tmp_path / "nope.onnx", isolation=isolation, history=False)
    assert missing.start().wait(120) == "failed"
    assert snapshot(missing)["resources"] is None, snapshot(missing)["resources"]
    onnx_path = tmp_path / "m.onnx"
    onnx_path.write_bytes(models.to_bytes(models.deep_residual(2)))
    built = Build(onnx_path, isolation=isolation, history=False)
    assert built.start().wait(120) == "succeeded"
    resources = snapshot(built)["resources"]
    assert resources is not None and (resources["peak_rss"] or 0) > 0, resources


@pytest.mark.parametrize("style", ["plain", "rich"])
def test_a_damaged_model_prints_no_raw_parser_error_above_the_message(tmp_path: Path, style: str) -> None:
    """Item 3: a truncated ONNX file printed TensorRT's raw "ERROR: (deserializeOnnxModel): MODEL_DESERIALIZE_FAILED"
    above the friendly message, which already says it; the build's log keeps it, and --verbose prints it."""
    import io

    from rich.console import Console

    from trt_widget._terminal import TerminalView

    bad = tmp_path / "bad.onnx"
    bad.write_bytes(models.to_bytes(models.deep_residual(4))[:1000])
    for verbose in (False, True):
        out = io.StringIO()
        build = Build(bad, history=False, verbose=verbose)
        console = Console(file=out, force_terminal=True, width=200) if style == "rich" else None
        view = TerminalView(build, out, style=style, console=console)
        assert build.start().wait(120) == "failed"
        assert view.join(60)
        text = out.getvalue()
        assert "could not parse" in text and "is it really an ONNX model?" in text, text
        assert any("MODEL_DESERIALIZE_FAILED" in r["message"] for r in build.logs), build.logs
        assert ("MODEL_DESERIALIZE_FAILED" in text) is verbose, text


def test_a_shape_for_an_unknown_input_names_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 4: ``--shapes nope:1x3x224x224`` said "profiles name unknown input(s) ['nope']", the Python parameter."""
    from trt_widget.__main__ import main

    onnx_path = tmp_path / "m.onnx"
    onnx_path.write_bytes(models.to_bytes(models.deep_residual(2)))
    assert main(["build", str(onnx_path), "--plain", "--shapes", "nope:1x8x8x8"]) == 1
    err = capsys.readouterr().err
    assert "--shapes" in err and "unknown input(s) ['nope']" in err and "'input'" in err, err
