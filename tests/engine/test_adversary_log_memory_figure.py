"""Sixteenth adversarial re-run (issue 35): ``trt-widget inspect LOG`` reads a TensorRT log another machine (or
user) wrote, untrusted as a recording is. Its memory lines ("Total Weights Memory: N bytes") are taken as integers
of any length; one of 400 digits reaches ``fmt_bytes`` (``float(size)``) in the summary and ``inspect`` ends in an
OverflowError traceback; so does a "Created engine with size: N MiB" line of 400 digits (``round(inf)`` where the
log is parsed). The log is that of a real TensorRT for RTX build (trtexec's line format, detailed profiling), with
that one figure changed or that one line added."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from rtx_log import real_rtx_log


def _inspect(log: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trt_widget", "inspect", str(log)],
        cwd=log.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _memory(out: str) -> str:
    """The summary's ``memory:`` line (the figures read) in what ``inspect`` printed."""
    lines = [line for line in out.splitlines() if line.lstrip().startswith("memory:")]
    assert len(lines) == 1, out[-1500:]
    return lines[0]


_LINE_HEAD = "[12/06/2026-21:49:24] [I] [TRT] "


def _created_line(mib: str) -> str:
    return f"{_LINE_HEAD}Created engine with size: {mib} MiB\n"


def _peak_line(cpu: str, gpu: str) -> str:
    head = f"{_LINE_HEAD}[MemUsageStats] Peak memory usage of TRT CPU/GPU memory allocators: "
    return f"{head}CPU {cpu} MiB, GPU {gpu} MiB\n"


def _weights(log: str) -> str:
    return re.sub(r"Total Weights Memory: \d+", "Total Weights Memory: " + "9" * 400, log)


def _created(log: str) -> str:
    return log + _created_line("9" * 400 + ".5")


def _peak(log: str) -> str:
    """A later peak line than the real log's (``CPU 0 MiB, GPU 0 MiB``): the last one is read."""
    return log + _peak_line("9" * 400, "9" * 18)  # 10**18 MiB is past a JSON count in bytes: absent too


@pytest.fixture(scope="module")
def real_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The log of a real TensorRT for RTX build, which ``inspect`` reads."""
    folder = tmp_path_factory.mktemp("log")
    log = real_rtx_log(folder)
    assert "Total Weights Memory:" in log
    real = folder / "build.log"
    real.write_text(log, encoding="utf-8")
    done = _inspect(real)
    assert done.returncode == 0  # the real log is inspected
    memory = _memory(done.stdout)
    assert "weights " in memory and "peak CPU " in memory and "engine " not in memory, memory
    return log


@pytest.mark.parametrize(
    ("change", "gone"),
    [(_weights, "weights "), (_created, "engine "), (_peak, "peak ")],
    ids=["total-weights-memory", "created-engine-size", "peak-memory"],
)
def test_a_huge_memory_figure_in_a_log_is_inspected_without_a_traceback(
    change: Callable[[str], str], gone: str, real_log: str, tmp_path: Path
) -> None:
    """``gone``: the summary's figure the huge one stands for, absent (the real log's one, where it has one, replaced:
    the huge one was read). The real log has no "Created engine" line: the control below shows a small one read."""
    sent = tmp_path / "sent.log"
    changed = change(real_log)
    assert changed != real_log
    sent.write_text(changed, encoding="utf-8")
    done = _inspect(sent)
    said = done.stdout + done.stderr
    assert "Traceback" not in said and "OverflowError" not in said, said[-1500:]
    assert done.returncode == 0 and "memory:" in done.stdout, said[-1500:]  # the other figures are shown
    assert "9" * 30 not in said, said[-1500:]  # the huge one is read as absent
    assert gone not in _memory(done.stdout), said[-1500:]


@pytest.mark.parametrize(
    ("line", "shown"),
    [(_created_line("3.5"), "engine 3.5 MiB"), (_peak_line("7", "9"), "peak CPU 7.0 MiB, peak GPU 9.0 MiB")],
    ids=["created-engine-size", "peak-memory"],
)
def test_control_a_small_figure_in_the_same_line_is_read_and_shown(
    line: str, shown: str, real_log: str, tmp_path: Path
) -> None:
    """The huge figures' lines, with small figures: the line is one ``inspect`` reads (not passed over unread)."""
    sent = tmp_path / "sent.log"
    sent.write_text(real_log + line, encoding="utf-8")
    done = _inspect(sent)
    assert done.returncode == 0, (done.stdout + done.stderr)[-1500:]
    assert shown in _memory(done.stdout), done.stdout[-1500:]


def test_a_huge_memory_figure_in_engine_information_json_is_read_as_absent(real_log: str, tmp_path: Path) -> None:
    """The inspector's JSON (``trtexec --exportLayerInfo``, or a report's ``to_dict``) is read by the same rule."""
    from trt_widget import EngineReport

    (tmp_path / "build.log").write_text(real_log, encoding="utf-8")
    info = EngineReport.from_file(tmp_path / "build.log").to_dict()
    assert isinstance(info["memory"], dict) and info["memory"].get("weights") is not None
    info["Layers"] = info.pop("layers")
    info["memory"] = {**info["memory"], "weights": 10**400, "activations": -5}
    info["total_layers"] = 10**400
    sent = tmp_path / "layers.json"
    sent.write_text(json.dumps(info), encoding="utf-8")
    done = _inspect(sent)
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in said and "OverflowError" not in said, said[-1500:]
    report = EngineReport.from_file(sent)
    assert report.memory["weights"] is None and report.memory["activations"] is None
    assert report.total_layers == len(report.layers)
