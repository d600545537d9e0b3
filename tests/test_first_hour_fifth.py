"""Issue 39's fifth trial: what a new user still tripped over (a recording of several builds, ...)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trt_widget import models
from trt_widget.__main__ import main


def test_view_replays_every_build_of_a_recording_and_picks_one_with_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item C: ``trt-widget view`` of a recording with two builds (``run --json`` of a script that builds two
    models) replayed the first alone and never said so. Two real RTX builds, recorded with ``--json``."""
    import onnx

    recording = tmp_path / "ev.jsonl"
    for name, blocks in (("a.onnx", 2), ("b.onnx", 3)):
        onnx.save(models.deep_residual(blocks), str(tmp_path / name))
        assert main(["build", str(tmp_path / name), "--json", "--isolation", "thread"]) == 0
        with recording.open("a") as handle:
            handle.write(capsys.readouterr().out)
    assert main(["view", str(recording), "--plain"]) == 0
    out = capsys.readouterr().out
    assert "Build 1 of 2 in this recording: " in out and "a.onnx" in out, out
    assert "Build 2 of 2 in this recording: " in out and "b.onnx" in out, out
    assert out.count("Replayed a build that succeeded") == 2, out
    assert main(["view", str(recording), "--plain", "--build", "2"]) == 0
    out = capsys.readouterr().out
    assert "b.onnx" in out and "a.onnx" not in out, out
    assert main(["view", str(recording), "--build", "3"]) == 2
    assert "holds 2 build(s)" in capsys.readouterr().err
    assert main(["view", str(recording), "--report", str(tmp_path / "r.html")]) == 2
    assert "--build N" in capsys.readouterr().err
