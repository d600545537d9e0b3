"""Issue 39, what the sixth newcomer trial left on the command line: bundle's words for a recording, ``inspect`` of
an engine, the matrix's comparison in a terminal, status lines wrapped between words, each failure said once, and
what the README's blocks leave in a clone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget.models import deep_residual, to_bytes


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real command, stdout and stderr in one stream, as a terminal (or ``2>&1 | less``) shows them."""
    return subprocess.run(
        [sys.executable, "-m", "trt_widget", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        cwd=cwd,
    )


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.onnx"
    path.write_bytes(to_bytes(deep_residual(2)))
    return path


def test_bundle_of_a_recording_says_it_packs_it_and_builds_nothing(model: Path, tmp_path: Path) -> None:
    """Item 1: ``bundle build.jsonl`` said "building build.jsonl ..."; no build runs for a recording."""
    recording = tmp_path / "build.jsonl"
    recorded = _cli("build", str(model), "-o", str(tmp_path / "model.engine"), "--json")
    assert recorded.returncode == 0, recorded.stdout
    recording.write_text("".join(line + "\n" for line in recorded.stdout.splitlines() if line.startswith("{")))
    packed = _cli("bundle", str(recording), "-o", str(tmp_path / "b.zip"))
    assert packed.returncode == 0, packed.stdout
    assert "building" not in packed.stdout.lower(), packed.stdout
    assert f"packing the recording {recording}" in packed.stdout, packed.stdout
    assert "the recorded build succeeded" in packed.stdout, packed.stdout
    built = _cli("bundle", str(model), "-o", str(tmp_path / "c.zip"))
    assert built.returncode == 0 and f"building {model}" in built.stdout, built.stdout
