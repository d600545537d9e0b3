"""Twelfth adversarial re-run (issue 35): a recording's text is outside text. Its newlines must not start lines of
their own (V1), and the terminal's word wrapping must not multiply what it holds (A1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from cli_recordings import record_build
from pty_output import before

from trt_widget.models import deep_residual


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    """The events of a real build's ``--json`` recording."""
    recorded = record_build(tmp_path_factory.mktemp("rec"), deep_residual(2), "build.jsonl", timeout=300)
    return [json.loads(line) for line in recorded.read_text().splitlines()]


def _failed_with(events: list[dict[str, object]], error: str, path: Path) -> Path:
    """``events`` as a recording whose build failed with ``error`` (what a recording another user sent may say)."""
    out = []
    for event in events:
        if event.get("event") == "engine_report":
            continue
        if event.get("event") == "build_end":
            event = {**event, "status": "failed", "detail": error, "error": error, "engine_bytes": None}
        out.append(json.dumps(event) + "\n")
    path.write_text("".join(out), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["view", "bundle"])
def test_a_recordings_error_text_starts_no_line_of_its_own(
    command: str, recording: list[dict[str, object]], tmp_path: Path
) -> None:
    rec = _failed_with(recording, "boom\nFORGED: Succeeded in 0.1 s", tmp_path / "evil.jsonl")
    args = ["view", str(rec), "--plain"] if command == "view" else ["bundle", str(rec), "-o", str(tmp_path / "b.zip")]
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    lines = (done.stdout + done.stderr).splitlines()
    assert any("boom" in line and "FORGED" in line for line in lines), lines  # the whole text, on one line
    assert not [line for line in lines if line.startswith("FORGED")], lines


def test_a_recordings_indented_error_is_not_multiplied_by_the_terminals_wrapping(
    recording: list[dict[str, object]], tmp_path: Path
) -> None:
    """3.3 KB of error text (300 spaces, then 3,000 letters) printed ~900 KB at 60 columns: one line per letter,
    each with the 300-space indent (an 88 KB recording printed 400 MB, the process held 1.2 GB)."""
    rec = _failed_with(recording, "boom\n" + " " * 300 + "A" * 3000, tmp_path / "indented.jsonl")
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    environ["TERM"] = "xterm"
    child = pexpect.spawn(
        sys.executable,
        ["-m", "trt_widget", "view", str(rec), "--plain"],
        cwd=str(tmp_path),
        dimensions=(40, 60),
        env=environ,
        encoding="utf-8",
        timeout=300,
        maxread=1 << 20,
    )
    child.expect(pexpect.EOF)
    child.close()
    text = before(child)
    assert "boom" in text, text[:2000]
    assert len(text) < 60_000, f"{len(text):,} characters printed for a 3.3 KB error text"


def test_a_multi_build_recordings_model_label_reaches_the_terminal_escaped(
    recording: list[dict[str, object]], tmp_path: Path
) -> None:
    """``view`` of a recording with two builds says "Build 1 of 2 in this recording: <model>" with the model label
    as the recording wrote it: an OSC title, a screen clear and a forged line reached the terminal."""
    label = "m\x1b]0;PWNED\x07\x1b[2J\u202eevil.onnx\nFORGED: Succeeded"
    lines = []
    for number, model in ((1, label), (2, "second.onnx")):
        for event in recording:
            changed = {**event, "build": number}
            if event.get("event") == "build_start":
                changed["model"] = model
            lines.append(json.dumps(changed) + "\n")
    done = _viewed(lines, tmp_path / "two.jsonl")
    assert "Build 2 of 2" in done.stdout, done.stdout + done.stderr
    assert "Build 1 of 2 in this recording: m" in done.stdout and "evil.onnx" in done.stdout, done.stdout
    assert "\x1b" not in done.stdout + done.stderr
    assert "\u202e" not in done.stdout + done.stderr
    assert not [line for line in done.stdout.splitlines() if line.startswith("FORGED")], done.stdout


def test_a_recordings_phase_name_starts_no_line_of_its_own_in_the_plain_summary(
    recording: list[dict[str, object]], tmp_path: Path
) -> None:
    name = "Ph\x1b[2J\nFORGED: Succeeded"
    lines = []
    for event in recording:
        changed = dict(event)
        if event.get("event") in ("phase_start", "phase_finish") and "name" in event:
            changed["name"] = name
        lines.append(json.dumps(changed) + "\n")
    done = _viewed(lines, tmp_path / "phases.jsonl")
    assert "Summary" in done.stdout, done.stdout + done.stderr
    assert "FORGED: Succeeded" in done.stdout, done.stdout  # the name is shown, within a line
    assert "\x1b" not in done.stdout
    assert not [line for line in done.stdout.splitlines() if line.startswith("FORGED")], done.stdout


def _viewed(lines: list[str], rec: Path) -> subprocess.CompletedProcess[str]:
    """``lines`` written as the recording ``rec``, then ``trt-widget view REC --plain`` of it."""
    rec.write_text("".join(lines), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(rec), "--plain"],
        cwd=rec.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
