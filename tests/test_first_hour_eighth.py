"""Issue 39, the eighth newcomer trial's leftovers (Python and widget side): TensorRT's parser assertion for a
model that is none reached ``logging`` (a server's stderr) at ERROR, and a command that ``BuildWidget.run`` ended
by a signal was said as a bare exit code ("the command exited with code 143")."""

from __future__ import annotations

import logging
import signal
import sys
import textwrap
from pathlib import Path

import pytest
from fixture_types import WaitUntil

from trt_widget import Build, BuildWidget

RAW = "ParseFromCodedStream"  # TensorRT's assertion for bytes that are no ONNX protobuf


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_failed_parse_logs_the_parser_s_assertion_at_debug_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, isolation: str
) -> None:
    """Item 1: ``trt-widget mcp``'s stderr (logging at WARNING) printed "ERROR:trt_widget.tensorrt:
    (deserializeOnnxModel): MODEL_DESERIALIZE_FAILED: Assertion failed: model->ParseFromCodedStream(...)" while
    every view holds that line back (``_expected.held_back``): the build's failure says it in words."""
    caplog.set_level(logging.DEBUG, logger="trt_widget.tensorrt")
    bad = tmp_path / "bad.onnx"
    bad.write_text("not a model\n")
    build = Build(str(bad), isolation=isolation, history=False).start()
    assert build.wait(120) == "failed"
    assert "it is a text file, not an ONNX model" in build.status_detail
    assert any(RAW in r["message"] for r in build.logs)  # the build's own log keeps TensorRT's words
    records = [r for r in caplog.records if r.name == "trt_widget.tensorrt" and RAW in r.getMessage()]
    assert records, caplog.text  # logging still gets them, for whoever asks for DEBUG
    assert all(r.levelno == logging.DEBUG for r in records), [(r.levelname, r.getMessage()) for r in records]
    assert all("build's failure says" in str(getattr(r, "expected", "")) for r in records)  # why, for a handler


def _ignores_sigint(ready: Path) -> list[str]:
    """A command that ignores SIGINT (a graceful stop) and writes its pid to ``ready`` once it does."""
    script = f"""
        import os, signal, time
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        open({str(ready)!r} + ".part", "w").write(str(os.getpid()))
        os.rename({str(ready)!r} + ".part", {str(ready)!r})
        time.sleep(120)
    """
    return [sys.executable, "-c", textwrap.dedent(script)]


def test_a_command_stop_all_terminated_is_said_as_its_signal(tmp_path: Path, wait_until: WaitUntil) -> None:
    """Item 3: after Stop all, the widget said "the command exited with code 143", unexplained: 143 is 128 +
    SIGTERM, the signal the stop sent when the command had not ended ``force_after`` s after its SIGINT."""
    ready = tmp_path / "ready"
    widget = BuildWidget.run(_ignores_sigint(ready), force_after=0.5)
    wait_until(ready.exists, timeout=60, what="the command ignoring SIGINT")
    widget._on_custom_msg(widget, {"type": "stop_all"}, [])  # what a click on "Stop all" sends
    assert widget.result(60) == 128 + signal.SIGTERM
    note = widget.state()["note"]
    assert note == "the command was ended by SIGTERM (exit code 143), sent by Stop all", note
    widget.close()


def test_a_command_killed_from_outside_says_the_signal_was_not_ours(tmp_path: Path, wait_until: WaitUntil) -> None:
    """Item 3: a signal trt_widget did not send (the out-of-memory killer's SIGKILL) is named, and said not ours."""
    import os

    ready = tmp_path / "ready"
    widget = BuildWidget.run(_ignores_sigint(ready))
    wait_until(ready.exists, timeout=60, what="the command")
    os.kill(int(ready.read_text()), signal.SIGKILL)
    assert widget.result(60) == 128 + signal.SIGKILL
    note = widget.state()["note"]
    # the supervisor reports a signal's end as 128 + N: a command that exits 137 itself reads the same, so said so
    assert note == "the command exited with code 137, the code of a process ended by SIGKILL (trt_widget sent none)", (
        note
    )
    widget.close()
