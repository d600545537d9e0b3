"""Attacks on the terminal: nothing untrusted (a recording's names, logs, details) reaches a terminal raw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from attacks import EVIL

from trt_widget import Build


def _evil_recording(path: Path) -> Path:
    from trt_widget.runners import gpu_shaped_events

    events = list(gpu_shaped_events(measurements=2, threads=1, seed=1))
    events[0]["model"] = f"model {EVIL}"
    for event in events:
        if event["event"] == "phase_start" and event["depth"] == 0:
            event["name"] = f"phase {EVIL}"
        if event["event"] == "build_end":
            event.update(status="failed", detail=f"detail {EVIL}", error=f"error {EVIL}")
    events.insert(2, {"event": "log", "severity": "WARNING", "message": f"log {EVIL}\nforged line", "t": 0.3})
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_escape_controls_shows_every_control_character_as_an_escape() -> None:
    from trt_widget._format import escape_controls

    shown = escape_controls(EVIL + "\udcff\x00\x7f")
    assert shown.isprintable() and "\\x1b]0;PWNED-TITLE\\x07" in shown and "\\u202e" in shown
    assert escape_controls("Measuring tactic time ×3 é") == "Measuring tactic time ×3 é"


def test_view_prints_names_logs_and_details_of_a_recording_escaped(tmp_path: Path) -> None:
    recording = _evil_recording(tmp_path / "esc.jsonl")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(recording), "--plain"],
        capture_output=True,
        timeout=120,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    out = done.stdout + done.stderr
    assert b"\x1b" not in out and b"\x07" not in out and b"\r" not in out and "\u202e".encode() not in out, out
    text = out.decode()
    assert "phase \\x1b]0;PWNED-TITLE\\x07" in text and "log \\x1b]0;PWNED" in text and "\\x0aforged line" in text
    assert "model \\x1b]0;PWNED" in text


def test_the_rich_tree_and_summary_show_names_escaped_and_take_no_markup(tmp_path: Path) -> None:
    import io

    from trt_widget._terminal import TerminalView

    recording = _evil_recording(tmp_path / "esc.jsonl")
    text = recording.read_text().replace("phase \\u001b", "[bold red]phase[/] \\u001b", 1)
    recording.write_text(text)
    stream = io.StringIO()
    view = TerminalView(Build.from_events(recording), stream, style="rich")
    view.build.start().wait(60)
    assert view.join(30)
    out = stream.getvalue()
    for raw in ("\x1b]", "\x1b[2J", "\x07", "\x9b", "\u202e", "\r"):
        assert raw not in out, (raw, out)
    assert "PWNED-TITLE" in out and "[bold red]phase[/]" in out  # shown, as text


def test_a_warning_of_the_command_line_is_printed_escaped(tmp_path: Path) -> None:
    """Python's own warning display printed a RuntimeWarning's text raw: a history store path holding ESC [2J
    (a FIFO, which history refuses with a warning) cleared the screen."""
    from attacks import SMALL, build_command

    model = tmp_path / "m.onnx"
    model.write_bytes(SMALL)
    store = tmp_path / "h\x1b[2J\u202e.sqlite"
    os.mkfifo(store)
    done = build_command(model, tmp_path / "m.engine", history=str(store))
    assert done.returncode == 0, done.stderr
    assert "cannot use the history store" in done.stderr, done.stderr
    assert "\x1b" not in done.stderr and "\u202e" not in done.stderr, done.stderr


def test_a_build_of_a_model_with_a_huge_node_name_prints_bounded_lines_and_replays(tmp_path: Path) -> None:
    """A 2,000,000-character node name: TensorRT's parser errors echo it, so the terminal got 2 MB log lines and a
    4 MB failure line, and ``build --json`` wrote an 8 MB build_end line: a recording ``view`` then refused as
    "not a recording" (its reader takes lines up to 1 MiB and shortens log messages to 16,384 characters)."""
    from trt_widget.models import deep_residual, to_bytes

    model = tmp_path / "long.onnx"
    model.write_bytes(to_bytes(deep_residual(2, node_name="N" * 2_000_000)))
    command = [sys.executable, "-m", "trt_widget", "build", str(model), "-o", str(tmp_path / "m.engine")]
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    plain = subprocess.run([*command, "--plain"], capture_output=True, text=True, timeout=300, env=env)
    assert plain.returncode == 1 and "could not parse" in plain.stdout + plain.stderr
    assert max(len(line) for line in (plain.stdout + plain.stderr).splitlines()) < 40_000
    recorded = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=300, env=env)
    assert recorded.returncode == 1
    recording = tmp_path / "build.jsonl"
    recording.write_text(recorded.stdout)
    assert max(len(line) for line in recorded.stdout.splitlines()) < 1 << 20
    view = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(recording), "--plain", "--speed", "1000"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "not a recording" not in view.stderr and "could not parse" in view.stdout + view.stderr, view.stderr[-500:]
