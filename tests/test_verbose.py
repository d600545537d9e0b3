"""What a silent step is doing, from TensorRT's VERBOSE lines: real GPU build logs (tests/data/gpu_verbose_logs.json,
with their sources) read by TacticWatch; the lines reach it without verbose=True and without being kept; through a
builder process too."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fixture_types import WaitUntil

from trt_widget import Build
from trt_widget._engine import CaptureLogger
from trt_widget._snapshot import snapshot
from trt_widget._verbose import TacticWatch, describe, wanted

LOGS = {
    log["source"].split(" ")[0]: log["lines"]
    for log in json.loads((Path(__file__).parent / "data" / "gpu_verbose_logs.json").read_text())["logs"]
}
_PREFIX = re.compile(r"^(?:\[(\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d)\] \[V\] \[TRT\] |\[TensorRT\] VERBOSE: )")


def _messages(lines: list[str]) -> list[tuple[float, str]]:
    """(seconds since the first line, the message TensorRT gave its logger); one second apart without dates."""
    out: list[tuple[float, str]] = []
    first = None
    for index, line in enumerate(lines):
        match = _PREFIX.match(line)
        assert match, line
        if match.group(1):
            at = datetime.strptime(match.group(1), "%m/%d/%Y-%H:%M:%S").timestamp()
            first = at if first is None else first
            t = at - first
        else:
            t = float(index)
        out.append((t, line[match.end() :]))
    return out


def test_a_nine_minute_myelin_timing_is_named_with_its_duration() -> None:
    watch = TacticWatch()
    (t0, runner), (t1, tactic), *rest = _messages(LOGS["https://github.com/NVIDIA/TensorRT/issues/2576"])
    watch.feed(runner, t0)
    assert (
        describe(watch.snapshot(), t1 - 1)
        == "timing {ForeignNode[transformer.h.0.attn.bias.../Cast]} (Myelin) for 9 min 19.0 s"
    )
    watch.feed(tactic, t1)
    assert watch.snapshot() == {
        "layer": "{ForeignNode[transformer.h.0.attn.bias.../Cast]}",
        "runner": "Myelin",
        "since_s": 0.0,
        "tactics": 1,
    }
    for t, message in rest:
        watch.feed(message, t)
    assert watch.snapshot() is None  # the runner was chosen: nothing is being timed until the next layer


def test_tactics_are_counted_per_runner_and_each_runner_restarts_the_clock() -> None:
    watch = TacticWatch()
    seen = []
    for t, message in _messages(LOGS["https://github.com/NVIDIA/TensorRT/issues/1389"]):
        watch.feed(message, t)
        seen.append(watch.snapshot())
    gather = [s for s in seen if s and s["layer"] == "Gather_25"]
    assert gather[0] == {"layer": "Gather_25", "runner": "Gather", "since_s": 5.0, "tactics": 0}
    assert gather[-1]["tactics"] == 8 and seen[-1] is None
    assert [s["tactics"] for s in seen[:4] if s] == [0, 1, 2, 2]  # Optimizer Reformat: 2 tactics, then "Fastest"


def test_only_the_autotuners_lines_pass_the_prefilter() -> None:
    messages = [m for log in LOGS.values() for _t, m in _messages(log)]
    passed = [m for m in messages if wanted(m)]
    assert all(
        re.match(r"(-+ Timing Runner|Tactic: |Tactic Name: |>+ Chose Runner|=+ Computing costs)", m) for m in passed
    )
    assert not wanted("Skipping CaskFlattenConvolution: No valid tactics for /features/features.0/Conv")
    assert not wanted("Autotuning format combination: Float(3,1) -> Float(1536,3,1)")
    assert not wanted("001_convolutional (h1688cudnn) Set Tactic Name: turing_h1688cudnn_128x128")
    assert not wanted("Formats and tactics selection completed in 567.208 seconds.")
    # TensorRT 7's lower-case "time" counts as a tactic timed too
    watch = TacticWatch()
    for t, m in _messages(LOGS["https://github.com/NVIDIA/TensorRT/issues/875"]):
        watch.feed(m, t) if wanted(m) else None
    assert watch.snapshot() == {"layer": "<reformat>", "runner": "Reformat", "since_s": 2.0, "tactics": 2}


TRT10 = (
    "https://github.com/fuzzylabs/edge-vision-power-estimation/blob/6d8ac68acf65c3e6ee846ab27bd2bd9de0d997c7/"
    "desktop/torch_onnx_trtexec/docs/trtexec.md"
)


def test_tensorrt_10s_named_tactic_lines_are_counted_as_tactics_timed() -> None:
    """TensorRT 10.x logs ``Tactic Name: KERNEL Tactic: 0x… Time: ms`` (a public TensorRT 10.4 log): each is a
    tactic timed, through the router's pre-filter as during a build."""
    watch = TacticWatch()
    seen = []
    for t, message in _messages(LOGS[TRT10]):
        if wanted(message):
            watch.feed(message, t)
        seen.append(watch.snapshot())
    layer = "/features/features.0/Conv + /features/features.1/Relu"
    assert seen[0] == {"layer": layer, "runner": "", "since_s": 0.0, "tactics": 0}  # "Computing costs for"
    assert seen[2] == {"layer": layer, "runner": "CaskConvolution", "since_s": 0.0, "tactics": 0}
    assert [s and s["tactics"] for s in seen[3:11]] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert describe(seen[10], 65.0) == f"timing {layer} (CaskConvolution) for 1 min 05.0 s, 8 tactics timed"
    assert seen[13] is None  # "Chose Runner Type"
    assert seen[-1] == {"layer": layer, "runner": "CaskConvolution", "since_s": 0.0, "tactics": 3}


def test_a_logger_without_verbose_reads_them_but_keeps_none() -> None:
    clock = [100.0]
    logger = CaptureLogger(verbose=False, clock=lambda: clock[0])
    for t, message in _messages(LOGS["https://github.com/NVIDIA/TensorRT/issues/2576"])[:1]:
        clock[0] = 100.0 + t
        logger.log(4, message)
    clock[0] = 160.0
    assert not logger.records  # VERBOSE lines are not kept
    assert (
        describe(logger.tactics.snapshot(), 60.0)
        == "timing {ForeignNode[transformer.h.0.attn.bias.../Cast]} (Myelin) for 1 min 00.0 s"
    )


def test_a_hostile_layer_name_reaches_no_terminal_raw() -> None:
    watch = TacticWatch()
    watch.feed("--------------- Timing Runner: evil\x1b[2J\nname" + "x" * 500 + " (Kind[0x80000009])", 0.0)
    state = watch.snapshot()
    assert state is not None and "\x1b" not in state["layer"] and "\n" not in state["layer"]
    assert len(state["layer"]) == 120 and state["runner"] == "Kind"


def _network_that_logs_a_timing_runner(seen: str, network: Any) -> None:
    """Runs in the builder process: a line as TensorRT's autotuner logs it, through the process's TensorRT logger,
    then a pause until the test has seen it (the file ``seen`` exists; a fixed pause could pass unseen on a loaded
    machine), at most a minute."""
    import time

    from trt_widget import _engine
    from trt_widget._backend import trt

    assert _engine._router is not None
    _engine._router.log(
        4, "--------------- Timing Runner: {ForeignNode[/blocks.0/attn/MatMul.../Softmax]} (Myelin[0x80000023])"
    )
    deadline = time.monotonic() + 60
    while not Path(seen).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    t: Any = trt()  # the network API beyond what trt_widget itself calls
    relu = network.add_activation(network.add_input("x", t.float32, (1, 4)), t.ActivationType.RELU)
    network.mark_output(relu.get_output(0))


def timing(build: Build) -> Mapping[str, object] | None:
    """What the snapshot says the autotuner times, if anything."""
    activity = snapshot(build)["activity"]
    return activity["timing"] if activity else None


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_the_now_line_state_reaches_the_snapshot_from_the_builder(
    isolation: str, wait_until: WaitUntil, tmp_path: Path
) -> None:
    seen = tmp_path / "seen"
    network = functools.partial(_network_that_logs_a_timing_runner, str(seen))
    build = Build(network, isolation=isolation, history=False, resources=False).start()
    activity = wait_until(lambda: timing(build), what="the timing state")
    seen.touch()
    assert activity["layer"] == "{ForeignNode[/blocks.0/attn/MatMul.../Softmax]}" and activity["runner"] == "Myelin"
    build.wait(60)
    assert not [r for r in build.logs if r["severity"] == "VERBOSE"]


@pytest.mark.slow
def test_the_terminal_footer_says_what_is_being_timed(wait_until: WaitUntil, tmp_path: Path) -> None:
    import io

    from trt_widget._terminal import TerminalView

    seen = tmp_path / "seen"
    network = functools.partial(_network_that_logs_a_timing_runner, str(seen))
    build = Build(network, isolation="thread", history=False, resources=False)
    view = TerminalView(build, io.StringIO(), style="rich", hint="Ctrl-C to cancel")
    build.start()
    footer = wait_until(lambda: text if "now timing" in (text := view._footer(build.elapsed_s)) else None)
    seen.touch()
    assert footer.startswith("running ")
    assert " · now timing {ForeignNode[/blocks.0/attn/MatMul.../Softmax]} (Myelin) for " in footer
    assert footer.endswith(" — Ctrl-C to cancel")
    build.wait(60)
    view.join(30)
    assert "now timing" not in view._footer(build.elapsed_s)  # ended: nothing is being timed


@pytest.mark.slow
def test_a_real_rtx_build_feeds_the_watch_without_verbose_and_ends_with_nothing_timed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """TensorRT for RTX logs one Myelin 'Timing Runner' per build (then 'Computing reformatting costs', which
    names no layer): the watch sees it although verbose is off, and nothing is left "being timed" afterwards."""
    from trt_widget import models
    from trt_widget._backend import select_backend

    if select_backend()[0] != "rtx":
        pytest.skip("TensorRT for RTX's log lines")
    seen: list[Any] = []
    feed = TacticWatch.feed

    def spy(self: TacticWatch, message: str, t: float) -> None:
        feed(self, message, t)
        seen.append(self.snapshot())

    monkeypatch.setattr(TacticWatch, "feed", spy)
    build = Build(models.deep_residual(3), isolation="thread", history=False, resources=False).start()
    assert build.wait(120) == "succeeded"
    assert any(s and s["runner"] == "Myelin" and s["layer"].startswith("{ForeignNode[") for s in seen)
    assert build.logger.tactics.snapshot() is None and seen[-1] is None
    assert not [r for r in build.logs if r["severity"] == "VERBOSE"]
