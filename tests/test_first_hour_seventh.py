"""Issue 39, the sixth newcomer trial's leftovers (Python and widget side): what a new user still tripped over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixture_types import WaitUntil
from IPython.lib.pretty import pretty
from user_scripts import BUILD_FUNCTION

from trt_widget import Build, BuildWidget, models
from trt_widget._backend import select_backend
from trt_widget._expected import PARSE_PHASE, RTX_TIMING_CACHE, shown_logs
from trt_widget._phases import CANCELLED, DONE, RUNNING, PhaseModel, PhaseRow
from trt_widget._snapshot import snapshot
from trt_widget._tensorrt_log import LogRecord
from trt_widget.report import to_html


def test_timings_in_its_own_cell_shows_the_top_level_phases_compactly() -> None:
    """``w.timings()`` as a cell's last line printed about 150 lines (one dict per phase instance); it now shows
    the top-level phases with their times and a count of the nested rows, and stays the list the docs promise."""
    w = BuildWidget(models.deep_residual(4), history=False).start()
    assert w.wait(120) == "succeeded"
    timings = w.timings()
    rows = list(timings)
    top = [row for row in rows if row["parent"] is None]
    assert len(rows) > 2 * len(top) > 0  # a real build nests: the full list is long
    text = pretty(timings)  # what IPython prints for a cell's last line
    assert len(text.splitlines()) <= len(top) + 3, text
    for row in top:
        assert row["name"] in text
    assert f"{len(rows) - len(top)} nested" in text, text
    html = timings._repr_html_()
    assert all(row["name"] in html for row in top) and "<script" not in html.lower()
    # the API the docs promise: a list of dicts (indexing, iteration, len, JSON, equality with a list)
    assert timings[0] == rows[0] and len(timings) == len(rows) and timings == rows
    assert json.loads(json.dumps(timings)) == json.loads(json.dumps(rows))
    assert isinstance(timings, list) and timings[1:] == rows[1:]


def test_a_build_s_timings_repr_escapes_phase_names(tmp_path: Path) -> None:
    """Phase names come from TensorRT (or a recording): the compact display escapes them in HTML."""
    b = Build(models.deep_residual(2), history=False).start()
    assert b.wait(120) == "succeeded"
    timings = b.timings()
    timings[0]["name"] = "<img src=x onerror=alert(1)>"
    assert "<img" not in timings._repr_html_()


@pytest.mark.rtx_long_step  # names RTX's own phase
def test_a_phase_whose_steps_all_completed_before_the_cancel_landed_is_done() -> None:
    """Item 4: with ``isolation="thread"``, Stop during "Determining refit engines" (one long step) ended with that
    row reading "1/1 100 %" and badged cancelled. Its only step completed (TensorRT calls ``stepComplete`` when a
    step is done; the cancel is honoured there), so it is done; the phases cut short around it are cancelled.
    The callbacks replayed are those of a recorded RTX build (deep_residual(400), Stop while that step ran)."""
    clock = iter(x * 0.01 for x in range(1, 1000))
    model = PhaseModel(lambda: next(clock))
    model.phase_start("Building engine", None, 6)
    for step in range(4):
        model.step_complete("Building engine", step)
    model.phase_start("Building engine from subgraph", "Building engine", 1)
    model.phase_start("Computing profile costs", "Building engine from subgraph", 5)
    for step in range(3):
        model.step_complete("Computing profile costs", step)
    model.phase_start("Determining refit engines", "Computing profile costs", 1)
    model.request_cancel()  # Stop, while the refit step runs
    model.step_complete("Determining refit engines", 0)  # the step completed; the builder is told to stop here
    for name in ("Determining refit engines", "Computing profile costs", "Building engine from subgraph"):
        model.phase_finish(name)
    model.phase_finish("Building engine")
    status = {row["name"]: (row["status"], row["step"], row["num_steps"]) for row in model.rows()}
    assert status == {
        "Building engine": (CANCELLED, 4, 6),
        "Building engine from subgraph": (CANCELLED, 0, 1),
        "Computing profile costs": (CANCELLED, 3, 5),
        "Determining refit engines": (DONE, 1, 1),
    }


@pytest.mark.rtx_long_step  # names RTX's own phase
def test_a_thread_build_stopped_mid_step_has_no_complete_row_badged_cancelled() -> None:
    """Item 4 with a real RTX build on a thread: Stop while "Determining refit engines" runs its single long step;
    the build is cancelled, no row reads all its steps done yet cancelled, and a cut-short parent stays cancelled."""
    b = Build(models.deep_residual(400), isolation="thread", history=False).start()
    deadline = time.monotonic() + 120
    while not any(r["name"] == "Determining refit engines" and r["status"] == RUNNING for r in b.model.rows()):
        assert time.monotonic() < deadline and b.status in ("queued", "running"), b.model.rows()
        time.sleep(0.005)
    b.stop()
    assert b.wait(120) == "cancelled"
    rows = b.model.rows()
    assert [r for r in rows if r["status"] == CANCELLED and r["num_steps"] and r["step"] >= r["num_steps"]] == []
    (refit,) = [r for r in rows if r["name"] == "Determining refit engines"]
    assert refit["status"] == DONE and refit["step"] == refit["num_steps"] == 1, rows
    assert rows[refit["parent"]]["status"] == CANCELLED, rows  # type: ignore[index]


def test_the_widget_log_of_a_truncated_onnx_holds_back_the_raw_parser_assertion(
    tmp_path: Path, wait_until: WaitUntil
) -> None:
    """Item 5: the terminal held back TensorRT's raw parser ERROR lines when the parse failed (the friendly
    message says what they mean), but the widget's log still showed "MODEL_DESERIALIZE_FAILED: Assertion failed"
    above it. The rule lives in ``_expected`` now: every front end applies it; verbose and ``build.logs`` keep it."""
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(models.to_bytes(models.deep_residual(4))[:1000])
    for verbose in (False, True):
        w = BuildWidget(bad, history=False, verbose=verbose).start()
        assert w.wait(120) == "failed"
        wait_until(lambda: "could not parse" in w.status_detail, what="the final state")  # noqa: B023
        assert "is it really an ONNX model?" in w.status_detail, w.status_detail
        assert any("MODEL_DESERIALIZE_FAILED" in r["message"] for r in w.build.logs), w.build.logs
        shown = [r["message"] for r in w.logs]  # the widget's TensorRT log (the synced trait)
        assert any("MODEL_DESERIALIZE_FAILED" in m for m in shown) is verbose, shown
        report = to_html(w.build)  # the HTML report's warnings and errors: the same rule
        assert ("MODEL_DESERIALIZE_FAILED" in report) is verbose


def test_parser_errors_are_held_only_while_the_parse_runs_or_when_it_failed() -> None:
    """The rule itself: an ERROR logged during a parse that then succeeded is news, shown once the parse ended."""
    rows: list[PhaseRow] = [
        {
            "id": 0,
            "name": PARSE_PHASE,
            "parent": None,
            "depth": 0,
            "step": 0,
            "num_steps": 0,
            "start_s": 1.0,
            "end_s": None,
            "duration_s": None,
            "status": "running",
        }
    ]
    records: list[LogRecord] = [
        {"severity": "ERROR", "message": "before", "t": 0.5},
        {"severity": "ERROR", "message": "while parsing", "t": 1.5},
        {"severity": "WARNING", "message": "a warning while parsing", "t": 1.6},
    ]
    held = ["before", "a warning while parsing"]
    assert [r["message"] for r in shown_logs(records, rows, verbose=False)] == held
    assert len(shown_logs(records, rows, verbose=True)) == 3
    rows[0]["status"], rows[0]["end_s"], rows[0]["duration_s"] = "failed", 2.0, 1.0
    assert [r["message"] for r in shown_logs(records, rows, verbose=False)] == held
    rows[0]["status"] = "done"
    assert len(shown_logs(records, rows, verbose=False)) == 3


@pytest.mark.skipif(select_backend()[0] != "rtx", reason="TensorRT for RTX's behaviour; NVIDIA TensorRT uses the file")
@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_the_readme_s_timing_cache_on_rtx_is_one_calm_note_and_no_file(tmp_path: Path, isolation: str) -> None:
    """Item 2: the README's ``timing_cache="model.cache"`` on TensorRT for RTX did nothing, yet the widget's log
    showed five "expected" lines about it and a ``model.cache`` (an empty RTX cache, which RTX itself then failed
    to read) appeared. RTX tunes no tactics (NVIDIA: its timing-cache calls do not affect RTX engines): one note,
    marked expected, says so; the file is neither written nor, when one exists, read or changed."""
    cache = tmp_path / "model.cache"
    for existing in (None, b"an NVIDIA TensorRT cache, kept for a GPU machine"):
        if existing is not None:
            cache.write_bytes(existing)
        w = BuildWidget(models.deep_residual(2), timing_cache=str(cache), history=False, isolation=isolation)
        assert w.start().wait(120) == "succeeded", w.status_detail
        about = [r for r in w.build.logs if "timing cache" in r["message"].lower() or "timing_cache" in r["message"]]
        about = [r for r in about if "Local timing cache in use" not in r["message"]]  # logged by every RTX build
        assert [r["message"] for r in about] == [f"{RTX_TIMING_CACHE}; {about[0]['message'].split('; ', 1)[1]}"]
        assert str(cache) in about[0]["message"] and "NVIDIA TensorRT" in about[0]["message"]
        shown = [r for r in snapshot(w.build)["logs"] if "timing" in r["message"].lower()]
        assert len(shown) == 1 and shown[0].get("expected"), shown  # said once, calmly
        assert cache.read_bytes() == existing if existing is not None else not cache.exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ([] if existing is None else ["model.cache"])


# the user's code, build(path): a new trt.Logger per call, VERBOSE here so that it says much
KERNEL_LIKE = (
    BUILD_FUNCTION.replace("trt.Logger.ERROR", "trt.Logger.VERBOSE")
    + """
import json, os, sys, threading
from trt_widget import watch_call
from trt_widget.watch import _lines, _watch

_watch._in_kernel = lambda: True  # a Jupyter kernel: its fd 1 is a pipe that a thread reads, as below
_lines.IDLE_S = 600.0  # a loaded machine's pause inside one line is not the quiet prompt this flushes early

class OutStream:  # the kernel's sys.stdout: each write() call's text is sent as it is (a stream message)
    def __init__(self):
        self.sent, self.lock = [], threading.Lock()
    def write(self, text):
        with self.lock:
            self.sent.append(text)
        return len(text)
    def flush(self):
        pass

read, write = os.pipe()
kernel = os.dup(1)
os.dup2(write, 1)
os.close(write)
sys.stdout = out = OutStream()
def forward():  # what ipykernel's fd watcher does: each read of fd 1's pipe goes to sys.stdout as it comes
    while data := os.read(read, 1000):
        out.write(data.decode(errors="replace"))
reader = threading.Thread(target=forward)
reader.start()
call = watch_call(lambda paths: [build(p) for p in paths], [sys.argv[1]] * 2)
engines = call.result(120)
os.dup2(kernel, 1)
reader.join(30)
split = [text for text in out.sent if not text.endswith("\\n")]
json.dump({"lines": "".join(out.sent).count("[TRT]"), "split": split[:5], "engines": len(engines)}, sys.stderr)
"""
)


def test_a_watched_build_s_own_trt_logger_reaches_the_kernel_in_whole_lines(tmp_path: Path) -> None:
    """Item 1: with ``BuildWidget.watch`` and a user script that makes a new ``trt.Logger`` per call, the cell's
    output showed a stray ``[`` above the watch list and a log line split in two. TensorRT's logger writes each
    line to fd 1 in pieces ("[", the date, "] ", "[TRT] [V] ", the message, "\\n") when C's stdout is unbuffered
    (``python -u``, ``PYTHONUNBUFFERED``); the kernel forwards what it reads as it comes. While a watch is open in
    a kernel, the kernel's fd gets whole lines. Real RTX builds; a pipe and a reader thread play the kernel."""
    onnx_path = tmp_path / "a.onnx"
    onnx_path.write_bytes(models.to_bytes(models.deep_residual(4)))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    done = subprocess.run(
        [sys.executable, "-c", KERNEL_LIKE, str(onnx_path)], env=env, capture_output=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    got = json.loads(done.stderr.decode().strip().splitlines()[-1])
    assert got["engines"] == 2 and got["lines"] > 20, got
    assert got["split"] == [], got
