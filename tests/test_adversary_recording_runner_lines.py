"""Eighteenth adversarial re-run (issue 35): a recording is outside text, and its replay's cost is bounded by what
docs/security.md states (1 MiB a line, 256 MiB, 1,000,000 events; the parsers built linear). The VERBOSE lines a
replay feeds to ``_verbose.TacticWatch`` are searched with ``-+ Timing Runner: (.*) \\(...\\)$``: a message of 16,000
dashes and " Timing Runner: x" (kept whole: under the 16,384-character message bound) makes the search start at
every dash and backtrack over all that follow: quadratic, about 0.23 s a line here. A 3.2 MB recording of 200 such
lines took ``trt-widget view --plain`` 70 s (the same recording with plain 16 KB lines: 0.8 s); 256 MiB of them would
take about an hour and a half. A real RTX build's recording with the lines added before its end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_recordings import recorded_events

from trt_widget._verbose import TacticWatch

LINES = 300  # 4.8 MB: about 105 s to replay here with the hostile lines, about 1 s with plain ones
LIMIT_S = 30  # generous: a plain replay of the same size takes ~1 s on a loaded 2-core machine


def _recording(tmp_path: Path, message: str) -> Path:
    recorded = [json.loads(line) for line in recorded_events(tmp_path)]
    end = recorded.pop()
    assert end["event"] == "build_end"
    line = {"event": "log", "severity": "VERBOSE", "message": message, "t": end["t"]}
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("".join(json.dumps(e) + "\n" for e in [*recorded, *[line] * LINES, end]))
    return hostile


def _view(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(path), "--plain"],
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )


@pytest.mark.slow
@pytest.mark.deadline
def test_a_recording_of_long_timing_runner_lines_replays_in_bounded_time(tmp_path: Path) -> None:
    done = _view(_recording(tmp_path, "-" * 16_000 + " Timing Runner: x"))
    assert done.returncode == 0 and "Replayed a build that succeeded" in done.stdout, done.stderr[-1500:]


@pytest.mark.slow
@pytest.mark.deadline
def test_control_the_same_recording_with_plain_lines_replays(tmp_path: Path) -> None:
    done = _view(_recording(tmp_path, "x" * 16_017))
    assert done.returncode == 0 and "Replayed a build that succeeded" in done.stdout, done.stderr[-1500:]


HUGE = 2 * 1024 * 1024  # 2 MiB a line: read linearly in milliseconds; the quadratic search took about an hour


@pytest.mark.parametrize(
    ("message", "state"),
    [
        ("-" * 16_000 + " Timing Runner: x", None),  # no "(KIND)": no runner
        ("-" * 8_000 + " Timing Runner: " + "(" * 8_000, None),
        ("-" * 16_000 + " Timing Runner: L (Myelin[0x80000023])", ("L", "Myelin")),
        ("x" * 16_000 + " Timing Runner: L (Myelin)", None),  # the rule before it is dashes
        ("=" * 16_000 + " Computing costs for L", ("L", "")),
        ("=" * 16_000 + " Computing x", None),
    ],
)
def test_long_hostile_runner_lines_are_read_as_the_rule_says(message: str, state: tuple[str, str] | None) -> None:
    watch = TacticWatch()
    watch.feed(message, 1.0)
    assert (watch.state[:2] if watch.state else None) == state


def test_a_watch_reads_megabyte_lines_of_every_hostile_shape_linearly() -> None:
    """Each shape at 2 MiB: linear reading takes milliseconds, the quadratic search about an hour (0.23 s at 16 KB,
    times 128 squared): the bound is no race, a hang is the failure."""
    code = (
        "from trt_widget._verbose import TacticWatch\n"
        f"n = {HUGE}\n"
        "w = TacticWatch()\n"
        "for m in ('-' * n + ' Timing Runner: x', '-' * (n // 2) + ' Timing Runner: ' + '(' * (n // 2),\n"
        "          '=' * n + ' Computing x', 'Tactic Name: ' + ' ' * n, '-' * n + ' Timing Runner: L (K)'):\n"
        "    w.feed(m, 0.0)\n"
        "print(w.state)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "('L', 'K', 0.0, 0)", done.stderr[-1500:]
