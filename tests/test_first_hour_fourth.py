"""Issue 39's fourth trial: what a new user still tripped over (check's wording, the serve page's failure reason,
a queued build's header, watched builds' labels, the terminal's cancel tree, the matrix's two times)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixture_types import WaitUntil

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


@pytest.mark.rtx_long_step
def test_a_phase_the_cancel_cut_short_is_not_ticked_in_the_terminal(
    long_model_bytes: bytes, wait_until: WaitUntil
) -> None:
    """Item 6: a Stop during "Determining refit engines" (one long step) is heard at that step's callback. That
    step completed (TensorRT calls ``stepComplete`` when a step is done), so the phase is done and ticked (the
    sixth trial's item 4: "1/1 100 %" badged cancelled read as a contradiction); the phase it cut short, its
    parent "Computing profile costs", is not ticked. A real RTX build, stopped there."""
    import io

    from rich.console import Console

    from trt_widget import Build
    from trt_widget._terminal import TerminalView

    build = Build(long_model_bytes, isolation="thread", history=False)
    build.start()
    wait_until(
        lambda: (p := build.model.innermost_running()) is not None and p.name == "Determining refit engines",
        timeout=120,
        what="the long build to reach its long step",
    )
    assert build.stop() is True
    assert build.wait(120) == "cancelled"
    refit = next(r for r in build.timings() if r["name"] == "Determining refit engines")
    assert refit["status"] == "done" and refit["step"] == refit["num_steps"], refit
    cut = next(r for r in build.timings() if r["id"] == refit["parent"])
    assert cut["status"] == "cancelled" and cut["step"] < cut["num_steps"], cut
    out = io.StringIO()
    Console(file=out, width=200).print(TerminalView(build, io.StringIO(), style="plain", summary=False)._tree())
    line = next(line for line in out.getvalue().splitlines() if "Determining refit engines" in line)
    assert "✓" in line and "✗" not in line, out.getvalue()
    line = next(line for line in out.getvalue().splitlines() if cut["name"] in line)
    assert "✓" not in line and "✗" in line, out.getvalue()
    # what finished before the cancel was heard stays done
    assert next(r for r in build.timings() if r["name"] == "Optimizing graph")["status"] == "done"
