"""Seventeenth adversarial re-run (issue 35): a succeeded build's end reads its warnings for TensorRT's
insufficient-memory tactic skips (``_gpu.memory_skips``: ``Skipping tactic ... requested size of (\\d+)``, searched
anywhere in a message). The size is taken as an integer of any length; ``_mib`` divides it by 2**20, and a
400-digit one raises OverflowError ("integer division result too large for a float") inside ``Build._finish``, on
the build's thread: the build never ends. Its engine is written, but ``wait()`` never returns, the CLI hangs
(``trt-widget build``, ``trt-widget view`` of a recording), and ``trt-widget serve`` holds the build's slot for
ever (its record says succeeded, new uploads get "too many builds", a cancel "already ended").

A model reaches it without any recording: TensorRT warns ``Unused Input: NAME`` for a graph input no node reads,
and the name is the model's. A real RTX build of ``deep_residual(2)`` with such an input added."""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from onnx import TensorProto, helper

from trt_widget import Build
from trt_widget._gpu import describe_skips, memory_skips
from trt_widget._subscribe import BuildEvent
from trt_widget.models import deep_residual, to_bytes

SKIP_LINE = "Skipping tactic 1 due to insufficient memory on requested size of " + "9" * 400


@pytest.fixture
def thread_errors() -> Iterator[list[BaseException]]:
    """Exceptions that end a thread (threading.excepthook), so a build thread that died is seen at once."""
    caught: list[BaseException] = []
    before = threading.excepthook

    def hook(args: Any) -> None:
        caught.append(args.exc_value)

    threading.excepthook = hook
    try:
        yield caught
    finally:
        threading.excepthook = before


def _ended(build: Build, caught: list[BaseException]) -> bool:
    """True once the build has ended; False as soon as a thread died with an exception (the build never will)."""
    for _ in range(600):  # 120 s at most, for a loaded machine; a build of this model takes well under a second
        if build.done():
            return True
        if caught:
            return False
        build.wait(0.2)
    return build.done()


def test_a_warning_naming_a_huge_skipped_request_does_not_stop_the_build_from_ending(
    tmp_path: Path, thread_errors: list[BaseException]
) -> None:
    model = deep_residual(2)
    model.graph.input.append(helper.make_tensor_value_info(SKIP_LINE, TensorProto.FLOAT, [1]))  # unused: warned
    path = tmp_path / "m.onnx"
    path.write_bytes(to_bytes(model))
    build = Build(str(path), output=str(tmp_path / "m.engine"))
    build.start()
    ended = _ended(build, thread_errors)
    assert ended, f"the build thread died: {thread_errors!r}"
    assert build.status == "succeeded", build.status_detail
    assert not thread_errors, thread_errors
    warned = [p["message"] for p in build.problems if SKIP_LINE in str(p["message"])]
    assert warned, build.problems  # TensorRT warned of the input: the skip line reached the log
    # the end read it as a skip whose 400-digit size is none: counted, no "largest request"
    assert re.match(r"TensorRT skipped [1-9]\d* tactic\(s\) for lack of free GPU memory", build.status_detail)
    assert "largest request" not in build.status_detail, build.status_detail


PEAK_LINE = "[MemUsageStats] Peak memory usage of TRT CPU/GPU memory allocators: CPU " + "9" * 400 + " MiB, GPU 0 MiB"


def test_a_model_named_peak_memory_line_neither_breaks_the_resources_summary_nor_loses_the_history_record(
    tmp_path: Path,
) -> None:
    """The sibling reader (seventeenth re-run's weakness): TensorRT's allocator peak line is searched in every log
    line, and a graph input's name reaches the log in "Unused Input: NAME". A build stopped before TensorRT's own
    peak line (which comes at the end) kept the model's: ``float(400 digits)`` made ``summary()`` raise and the
    history record was lost. A real build, stopped once TensorRT has warned of the input: a model whose build lasts
    seconds, so the stop (sent from a subscriber, after the pump's throttle) lands whatever the machine's load; a
    build of deep_residual(2) once ended before it in a clean-clone run."""
    model = deep_residual(400)
    model.graph.input.append(helper.make_tensor_value_info(PEAK_LINE, TensorProto.FLOAT, [1]))  # unused: warned
    path = tmp_path / "m.onnx"
    path.write_bytes(to_bytes(model))
    build = Build(str(path), history=str(tmp_path / "history.sqlite"))

    def stop_at_the_warning(event: BuildEvent) -> None:
        if event.record is not None and "Unused Input" in event.record["message"]:
            build.stop("the model's warning was seen")

    build.subscribe(stop_at_the_warning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build.start()
        assert build.wait(300) == "cancelled", build.status_detail  # stopped before TensorRT's own peak line
        assert build.history is not None and build.history.recorded.wait(60)
    assert build.resources is not None
    summary = build.resources.summary()
    assert summary["trt_peak"] is not None and summary["trt_peak"].startswith("CPU 999")  # the model's line
    assert summary["trt_peak_cpu_bytes"] is None  # a size past any memory is none
    assert repr(build.resources).startswith("<ResourceSampler")  # summary() raised here too
    lost = [str(w.message) for w in caught if "could not record the build" in str(w.message)]
    assert not lost and build.history.error is None, (lost, build.history.error)
    assert build.history.recorded_id is not None


@pytest.mark.parametrize("size", ["9" * 400, "9" * 5000, "\u0663"], ids=["400-digits", "5000-digits", "arabic-3"])
def test_every_skip_line_form_reads_sizes_through_the_bounded_rule(size: str) -> None:
    """The sibling forms of the skip reader: TensorRT 8's MiB sentence and TensorRT 7's "Tactic Device request"
    line. A size that is no bounded ASCII count is none (the skip is still counted), and the note never raises."""
    lines = [
        f"Skipping tactic 3 due to insuficient memory on requested size of {size} detected for tactic 0x1",
        f"Tactic Device request: {size}MB Available: {size}MB",
        "Skipping tactic 4 due to insufficient memory on requested size of 1048576 detected for tactic 0x2",
    ]
    skips = memory_skips(lines)
    counted = 2 if size.isascii() else 1  # a line whose size is no ASCII digits is no skip line at all
    assert skips == {"count": counted, "largest_request": 1 << 20, "free": None}
    assert "largest request 1 MiB" in describe_skips(skips, free_at_start=int("9" * 400))
