"""Eighteenth adversarial re-run (issue 35), U1's family: the seventeenth's U1 fix builds a model whose path is not
UTF-8 (a folder named with a Latin-1 byte, held by Python with a lone surrogate) and keeps its manifest and history
record, but the HTML report of such a build cannot be written: ``report/_page.py`` encodes the page (which names
the model) with ``text.encode("utf-8")``, so ``build --report`` ends rc 1 "cannot write the --report file ...
surrogates not allowed" after a succeeded build (no report), and ``Build.to_html`` raises UnicodeEncodeError. The
report should be written, the name shown escaped as the terminal and the manifest show it. Real RTX builds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from trt_widget import Build
from trt_widget.models import deep_residual, to_bytes
from trt_widget.report import timeline


def _model_in(tmp_path: Path, folder: bytes) -> bytes:
    directory = os.path.join(os.fsencode(tmp_path), folder)
    os.mkdir(directory)
    with open(os.path.join(directory, b"m.onnx"), "wb") as handle:
        handle.write(to_bytes(deep_residual(2)))
    return os.path.join(folder, b"m.onnx")


def _build_with_report(tmp_path: Path, model: bytes) -> tuple[int, str]:
    """``trt-widget build MODEL -o m.engine --plain --report r.html`` in ``tmp_path``: its exit status, its text."""
    command: list[str | bytes] = [
        sys.executable,
        "-m",
        "trt_widget",
        "build",
        model,
        "-o",
        "m.engine",
        "--plain",
        "--report",
        "r.html",
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=300)
    return done.returncode, (done.stdout + done.stderr).decode("utf-8", "replace")


def test_build_report_of_a_model_whose_folder_is_not_utf8_is_written(tmp_path: Path) -> None:
    model = _model_in(tmp_path, b"d\xff")
    code, said = _build_with_report(tmp_path, model)
    assert (tmp_path / "m.engine").stat().st_size > 0, said[-1500:]  # the build itself succeeds (U1's fix)
    assert "surrogates not allowed" not in said, said[-1500:]
    assert code == 0, said[-1500:]
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<html" in page and "<td>d\\udcff/m.onnx</td>" in page  # the model named, escaped


def test_to_html_of_a_model_whose_folder_is_not_utf8(tmp_path: Path) -> None:
    model = _model_in(tmp_path, b"e\xff")
    build = Build(os.fsdecode(os.path.join(os.fsencode(tmp_path), model)), output=str(tmp_path / "m.engine"))
    build.start()
    assert build.wait(300) == "succeeded", build.error
    build.to_html(tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<html" in page and "e\\udcff/m.onnx</td>" in page  # the model named, escaped


def test_control_the_same_report_in_a_utf8_folder_is_written(tmp_path: Path) -> None:
    model = _model_in(tmp_path, b"dq")
    code, said = _build_with_report(tmp_path, model)
    assert code == 0, said[-1500:]
    assert "<html" in (tmp_path / "r.html").read_text(encoding="utf-8")


SURROGATES = [
    {"event": "build_start", "t": 0.0, "model": "sec\udcff.onnx", "backend": "rtx", "version": "1"},
    {"event": "phase_start", "t": 0.1, "id": 1, "parent": None, "name": "A\udcff\ud800", "num_steps": 0},
    {"event": "phase_finish", "t": 0.5, "id": 1, "name": "A\udcff\ud800"},
    {"event": "build_end", "t": 0.6, "status": "succeeded", "engine_bytes": 1000},
]


def _recording(tmp_path: Path) -> Path:
    path = tmp_path / "z.jsonl"
    path.write_text("".join(json.dumps(event) + "\n" for event in SURROGATES))  # "\udcff" escapes, as json writes
    return path


def test_view_report_of_a_recording_holding_lone_surrogates_is_written(tmp_path: Path) -> None:
    """U2's sibling: any recording may hold a "\\udcff" escape; ``view --report`` writes the page, names escaped."""
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(_recording(tmp_path)), "--report", "v.html"],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    said = (done.stdout + done.stderr).decode("utf-8", "replace")
    assert done.returncode == 0 and "surrogates" not in said, said[-1500:]
    page = (tmp_path / "v.html").read_text(encoding="utf-8")
    assert "sec\\udcff.onnx" in page and "A\\udcff\\ud800" in page


def test_timeline_svg_of_a_recording_holding_lone_surrogates_is_written(tmp_path: Path) -> None:
    """U2's sibling: ``timeline.save_svg`` (a phase's colour hashes its name; the page is encoded) of that recording."""
    build = Build.from_events(str(_recording(tmp_path))).start()
    assert build.wait(60) == "succeeded", build.error
    timeline.save_svg(build, tmp_path / "t.svg")
    assert ">A\ufffd\ufffd</text>" in (tmp_path / "t.svg").read_text(encoding="utf-8")  # XML holds no surrogate
