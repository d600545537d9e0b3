"""Issue 39, what the ninth newcomer trial found in replays of a recording: a paced replay's clock stood still
through the recording's long silent step, a stopped replay ended at that frozen time (its rows at 0 ms, the
terminal's final tree without them) and exited 0, and a report made from a recording showed the replay's options
instead of the recorded build's."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pexpect
import pytest
from cli_recordings import record_build, view_with_report
from fixture_types import WaitUntil
from pty_output import before, cli_in_pty

from trt_widget import Build, BuildWidget
from trt_widget.models import deep_residual

INNER = ("Optimizing graph", "Computing profile costs", "Timing tactics", "Determining refit engines")


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``trt-widget build deep.onnx -o deep.engine --json > deep.jsonl`` of a ``deep_residual(1000)`` (a real RTX
    build in a builder process): its "Determining refit engines" step is seconds without an event."""
    return record_build(tmp_path_factory.mktemp("deep"), deep_residual(1000), "deep.jsonl", timeout=600)


def _silence(recording: Path) -> tuple[float, float]:
    """The recording's longest stretch without an event: (its start, its end) in recorded seconds."""
    times = [json.loads(line)["t"] for line in recording.read_text().split("\n") if line.strip()]
    latest = itertools.accumulate(times, max)  # events are stamped when they happened, not always in that order
    start, end = max(itertools.pairwise(latest), key=lambda pair: pair[1] - pair[0])
    assert end - start > 2.0, (start, end)  # the build this test is about: a step of seconds
    return start, end


def _stop_in_the_silence(build: Build, recording: Path, wait_until: WaitUntil) -> tuple[float, list[str]]:
    """Stop a paced replay once its clock is half a second into the silence; the clock then and the rows shown."""
    start, _ = _silence(recording)
    wait_until(lambda: build.model.now() >= start + 0.5, what="the replay's clock running through the silence")
    shown = [row["name"] for row in build.model.rows()]
    build.stop()
    return start + 0.5, shown


@pytest.mark.rtx_long_step
def test_a_stopped_paced_replay_keeps_the_time_it_replayed(deep: Path, wait_until: WaitUntil) -> None:
    """Items (a)/(b): the replay's clock ran only from event to event, so through the silent step it read 293 ms,
    and a Stop there ended the build at 293 ms with the running rows at 0 ms. Now it keeps time as recorded."""
    build = Build.from_events(deep, speed=1.0).start()
    reached, shown = _stop_in_the_silence(build, deep, wait_until)
    assert build.wait(120) == "cancelled"
    _, end = _silence(deep)
    ended = build.model.now()
    assert reached <= ended < end - 1.0, (reached, ended, end)  # the time replayed until the stop, not the step's end
    assert set(INNER) <= set(shown), shown
    rows = {row["name"]: row for row in build.model.rows()}
    assert set(shown) <= set(rows)
    refit = rows["Determining refit engines"]
    duration = refit["duration_s"]
    assert refit["status"] == "cancelled" and duration is not None and 0.5 <= duration < end - 1.0, refit


@pytest.mark.rtx_long_step
def test_a_stopped_widget_replay_shows_the_time_it_replayed(deep: Path, wait_until: WaitUntil) -> None:
    """Item (b) in the widget: Stop at ~3.8 s showed "Cancelled 293 ms" and the running rows at 0 ms."""
    widget = BuildWidget.from_events(deep, speed=1.0).start()
    reached, _ = _stop_in_the_silence(widget.build, deep, wait_until)
    assert widget.wait(120) == "cancelled"
    widget._pump.join(10)
    _, end = _silence(deep)
    assert widget.status == "cancelled" and reached <= widget.elapsed_s < end - 1.0, (widget.status, widget.elapsed_s)
    rows = {row["name"]: row for row in json.loads(widget.phases_json)}
    refit = rows["Determining refit engines"]
    assert refit["status"] == "cancelled" and 0.5 <= refit["duration_s"] < end - 1.0, refit


@pytest.mark.rtx_long_step
def test_ctrl_c_in_a_paced_view_keeps_the_tree_and_exits_130(deep: Path) -> None:
    """Items (a)-(c) in the terminal: the status line froze at "running 293 ms", Ctrl-C printed "Cancelled after
    293 ms", the final tree lost the rows the live one showed, and the exit code was 0, not --help's 130."""
    start, _ = _silence(deep)
    child = cli_in_pty("view", deep.name, "--speed", "1", cwd=deep.parent, width=120, timeout=120)
    # the clock ticks through the silent step (it stood at 293 ms); Ctrl-C once it is half a second into it, where
    # every inner row has started however late the recorded build reached the step
    reached = 0.0
    while reached < start + 0.5:
        child.expect(r"running (\d+\.\d\d) s")
        assert isinstance(child.match, re.Match)
        reached = float(child.match.group(1))
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    text = before(child)
    assert child.exitstatus == 130, text
    cancelled = re.search(r"Cancelled after (\d+\.\d\d) s", text)
    assert cancelled and float(cancelled.group(1)) >= 1.0, text
    final = text[text.rindex("Ctrl-C to stop") : text.rindex("Summary")]  # after the last live frame
    for name in INNER:
        assert name in final, (name, final)


def test_a_report_from_a_recording_shows_the_recorded_options(deep: Path, tmp_path: Path) -> None:
    """Item 2: ``view --report`` said isolation="thread" (the replay's own) for a build that ran in a process."""
    report = tmp_path / "deep.html"
    view_with_report(deep, report)
    options = re.search(r"<th>Options</th><td>(.*?)</td>", report.read_text())
    assert options, report.read_text()[:2000]
    assert "isolation=&quot;process&quot;" in options.group(1) and "thread" not in options.group(1), options.group(1)
