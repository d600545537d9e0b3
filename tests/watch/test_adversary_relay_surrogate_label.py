"""Eighteenth adversarial re-run (issue 35): what a watched command's processes send is untrusted, as a recording is
(docs/security.md). A ``build_start`` whose ``model`` holds a lone surrogate (the JSON escape ``"\\udcff"``, which
``json.dumps`` writes for a path that is not UTF-8) ends the relay's reader thread: ``RelayedBuild`` makes its
source with ``label.encode()`` (watch/_run.py), which raises UnicodeEncodeError. The user's terminal gets
"Exception in thread trt_widget-run-read" and a traceback, and the relay closes the command's socket: no later
build of that process is shown. A recording holding the same label replays. Real processes and sockets."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from trt_widget.watch import CommandRun, RelayedBuild

from ._sender import CONNECT

SENDER = CONNECT + textwrap.dedent(
    """
    first = "sec\\udcff.onnx" if sys.argv[1] == "surrogate" else "sec.onnx"
    for n, model in enumerate([first, "second.onnx"]):
        send(n, "build_start", model=model, backend="rtx", version="1", pid=os.getpid(), method="build")
        send(n, "phase_start", id=1, parent=None, name="Phase", num_steps=0)
        send(n, "phase_finish", id=1, name="Phase")
        send(n, "build_end", status="succeeded", engine_bytes=1000 + n)
    """
)


def _run(tmp_path: Path, mode: str) -> tuple[int, str]:
    sender = tmp_path / "sender.py"
    sender.write_text(SENDER)
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "run", "--plain", "--", sys.executable, str(sender), mode],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
        env=env,
    )
    return done.returncode, (done.stdout + done.stderr).decode("utf-8", "replace")


def test_a_relayed_build_named_with_a_lone_surrogate_is_shown_and_later_builds_too(tmp_path: Path) -> None:
    code, said = _run(tmp_path, "surrogate")
    assert "Traceback" not in said and "Exception in thread" not in said, said[-2000:]
    assert code == 0, said[-2000:]
    assert "Building sec\\udcff.onnx with" in said, said[-2000:]  # the surrogate's build, its name escaped
    assert said.count("Succeeded") == 2, said[-2000:]  # both builds' summaries


def test_control_the_same_builds_with_a_plain_name_are_both_shown(tmp_path: Path) -> None:
    code, said = _run(tmp_path, "plain")
    assert code == 0 and "Traceback" not in said, said[-2000:]
    assert said.count("Succeeded") == 2, said[-2000:]


def test_run_report_of_a_relayed_build_named_with_a_lone_surrogate_is_written(tmp_path: Path) -> None:
    """U2's sibling: ``run --report`` pages name the relayed model, escaped; the command's 0 is the run's."""
    sender = tmp_path / "sender.py"
    sender.write_text(SENDER)
    command = [sys.executable, str(sender), "surrogate"]
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "run", "--plain", "--report", "rr.html", "--", *command],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
        env={**os.environ, "TRT_WIDGET_HISTORY": "off"},
    )
    said = (done.stdout + done.stderr).decode("utf-8", "replace")
    assert done.returncode == 0 and "surrogates" not in said, said[-2000:]
    assert "sec\\udcff.onnx" in (tmp_path / "rr.html").read_text(encoding="utf-8")


def test_an_event_that_cannot_be_shown_is_dropped_and_the_reader_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """V1's guard: whatever one relayed event raises while it is shown (here a build that cannot be made, for any
    cause a check missed), that event is dropped with one note and the process's later builds are shown."""

    class Refused(RelayedBuild):
        def __init__(self, start: Mapping[str, object], index: int) -> None:
            if start.get("model") == "sec.onnx":
                raise RuntimeError("this build cannot be shown")
            super().__init__(start, index)

    monkeypatch.setattr("trt_widget.watch._run.RelayedBuild", Refused)
    sender = tmp_path / "sender.py"
    sender.write_text(SENDER)
    with caplog.at_level(logging.WARNING, logger="trt_widget"):
        run = CommandRun([sys.executable, str(sender), "plain"], env={**os.environ, "TRT_WIDGET_HISTORY": "off"})
        assert run.start().result(120) == 0
    assert [(b.source.label, b.wait(60)) for b in run.builds] == [("second.onnx", "succeeded")]
    notes = [r.getMessage() for r in caplog.records if "could not be shown" in r.getMessage()]
    assert notes == ["trt-widget run: an event of the command could not be shown (RuntimeError)"], notes
