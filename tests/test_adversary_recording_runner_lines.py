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

from trt_widget import Build
from trt_widget.models import deep_residual, to_bytes

LINES = 300  # 4.8 MB: about 105 s to replay here with the hostile lines, about 1 s with plain ones
LIMIT_S = 30  # generous: a plain replay of the same size takes ~1 s on a loaded 2-core machine


def _recording(tmp_path: Path, message: str) -> Path:
    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    events = tmp_path / "real.jsonl"
    build = Build(str(model), output=str(tmp_path / "m.engine"), events=str(events))
    build.start().result(timeout=300)
    assert build.status == "succeeded", build.error
    recorded = [json.loads(line) for line in events.read_text().splitlines()]
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
@pytest.mark.xfail(strict=True, raises=subprocess.TimeoutExpired, reason="T2: quadratic Timing Runner search")
def test_a_recording_of_long_timing_runner_lines_replays_in_bounded_time(tmp_path: Path) -> None:
    done = _view(_recording(tmp_path, "-" * 16_000 + " Timing Runner: x"))
    assert done.returncode == 0 and "Replayed a build that succeeded" in done.stdout, done.stderr[-1500:]


@pytest.mark.slow
@pytest.mark.deadline
def test_control_the_same_recording_with_plain_lines_replays(tmp_path: Path) -> None:
    done = _view(_recording(tmp_path, "x" * 16_017))
    assert done.returncode == 0 and "Replayed a build that succeeded" in done.stdout, done.stderr[-1500:]
