"""Small things a new user meets in the first hour (issue 24): each answered where the user meets it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from trt_widget import Build, BuildWidget
from trt_widget.models import deep_residual, to_bytes


def test_build_has_timings_df_like_the_widget() -> None:
    b = Build(deep_residual(2), isolation="thread", history=False).start()
    assert b.wait(300) == "succeeded"
    df = b.timings_df()
    assert list(df.index) == [r["id"] for r in b.timings()]
    assert list(df["name"]) == [r["name"] for r in b.timings()] and str(df["parent"].dtype) == "Int64"
    w = BuildWidget(None, build=b)
    assert w.timings_df().equals(df)


def test_viewing_a_model_instead_of_a_recording_is_refused_in_one_line(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    proc = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(model)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"trt-widget: error: {model} is not a recording: a recording is the JSON-lines text that --json or "
        f"events= write, and this file is binary; to build this model: trt-widget build {model}"
    ]


def test_ctrl_c_during_wait_raises_a_short_keyboardinterrupt(long_model_bytes: bytes, sigint_raises: None) -> None:
    import _thread
    import threading
    import time
    import traceback

    import pytest

    b = Build(long_model_bytes, history=False).start()
    threading.Timer(0.5, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt) as info:
        b.wait(300)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert [f.name for f in frames] == ["test_ctrl_c_during_wait_raises_a_short_keyboardinterrupt", "wait"], frames
    assert info.value.__context__ is None or info.value.__suppress_context__
    assert "asked to stop" in str(info.value)
    deadline = time.monotonic() + 60
    while not b.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert b.status == "cancelled"
