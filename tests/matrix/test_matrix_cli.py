"""``trt-widget matrix`` on real RTX builds: a pseudo-terminal (live table, Ctrl-C), pipes, ``--json`` with the
build id in every event, and the Ray executor connecting to the session's Ray instance."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pexpect
import pytest
from fixture_types import WaitUntil
from pty_output import before, through_match

from trt_widget.__main__ import main
from trt_widget._events import schema
from trt_widget.models import deep_residual, to_bytes

TIMEOUT_S = 180
MATRIX_KEYS = ("build", "variant", "matrix_model")  # what a matrix adds to each build's events


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, TRT_WIDGET_HISTORY="off", PYTHONUNBUFFERED="1", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    for size in ("COLUMNS", "LINES"):  # the pty's dimensions, not the 80x24 a pytest-xdist worker has in its env
        env.pop(size, None)
    env.update(extra)
    return env


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trt_widget", "matrix", *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        timeout=TIMEOUT_S,
    )


@pytest.fixture(scope="module")
def small_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("matrix-cli") / "small.onnx"
    path.write_bytes(to_bytes(deep_residual(5)))
    return path


def _json_events(stdout: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines()]
    validator = jsonschema.Draft202012Validator(schema())
    for event in events:  # each is a build event of the documented schema, plus the matrix's keys
        validator.validate({k: v for k, v in event.items() if k not in MATRIX_KEYS})
    return events


def test_json_has_the_build_id_in_every_event_and_engines_go_to_the_output_dir(
    small_onnx: Path, tmp_path: Path
) -> None:
    result = _cli(str(small_onnx), "--opt-level", "0", "3", "--json", "-o", str(tmp_path))
    assert result.returncode == 0, result.stderr
    events = _json_events(result.stdout)
    assert all(e["build"] in (0, 1) for e in events)
    starts = {e["build"]: e["variant"] for e in events if e["event"] == "build_start"}
    assert starts == {0: "optimization_level=0", 1: "optimization_level=3"}
    ends = {e["build"]: e for e in events if e["event"] == "build_end"}
    assert {b: e["status"] for b, e in ends.items()} == {0: "succeeded", 1: "succeeded"}
    for build in (0, 1):
        mine = [e for e in events if e["build"] == build]
        assert mine[0]["event"] == "build_start" and mine[-1]["event"] == "build_end"
        assert {"phase_start", "phase_finish"} <= {e["event"] for e in mine}
        assert Path(ends[build]["output"]).stat().st_size == ends[build]["engine_bytes"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "small-optimization_level_0.engine",
        "small-optimization_level_0.engine.manifest.json",
        "small-optimization_level_3.engine",
        "small-optimization_level_3.engine.manifest.json",
    ]


def test_pipes_get_a_line_per_status_and_the_table(small_onnx: Path) -> None:
    result = _cli(str(small_onnx), str(small_onnx), "--opt-level", "1")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout
    lines = result.stdout.splitlines()
    assert "#1 small.onnx (2) [optimization_level=1]: queued" in lines  # one at a time by default
    assert sum("succeeded in" in line for line in lines) == 2
    header = lines.index("") + 1  # the table after the status lines, then the comparison (issue 39)
    assert lines[header].split()[:4] == ["id", "model", "variant", "status"]
    assert lines[header + 3] == "" and lines[header + 4].startswith("Comparison against #"), lines


def test_bad_input_and_usage(small_onnx: Path, tmp_path: Path) -> None:
    missing = _cli(str(tmp_path / "nope.onnx"))
    assert missing.returncode == 1 and "ONNX file not found" in missing.stderr
    assert _cli(str(small_onnx), "--opt-level", "9").returncode == 2
    assert _cli(str(small_onnx), "--max-parallel", "0").returncode == 2
    bad = _cli(str(small_onnx), "--workspace", "lots")  # one usage error naming the flag, before any build
    assert bad.returncode == 2 and "--workspace must be a byte count" in bad.stderr and bad.stdout == ""


@pytest.mark.rtx_long_step
def test_terminal_live_table_and_ctrl_c_stops_every_build(long_model_bytes: bytes, tmp_path: Path) -> None:
    model = tmp_path / "long.onnx"
    model.write_bytes(long_model_bytes)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "trt_widget", "matrix", str(model), "--opt-level", "0", "2"],
        env=_env(),
        dimensions=(30, 160),
        encoding="utf-8",
        timeout=TIMEOUT_S,
    )
    child.expect("Determining refit engines")  # the live table shows the running build's current phase
    seen = through_match(child)
    child.sendintr()
    child.expect("Stopping every build")
    child.expect(pexpect.EOF)
    child.close()
    output = seen + before(child)
    assert child.exitstatus == 130, output[-2000:]
    assert "\x1b[" in output and "queued" in output  # rich, and the second build waited for the first
    assert output.count("cancelled") >= 2
    # issue 39 (fifth trial, E): Ctrl-C says so (not "Stop all"), and the final summary shows each row's detail
    # whole (the table's column cuts it off)
    assert "Stop all" not in output and "interrupted (Ctrl-C)" in output, output[-2000:]
    assert "#1 long.onnx [optimization_level=2]: cancelled: never started: interrupted (Ctrl-C) while queued" in (
        output
    ), output[-2000:]


def test_ray_executor_on_the_sessions_cluster(
    ray_session: Any, small_onnx: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # in this process: Ray is initialised already, so the command uses the session's instance (a subprocess
    # would be a new Ray job that starts its own workers: ~15 s here for the same check)
    address = ray_session.get_runtime_context().gcs_address
    argv = ["matrix", str(small_onnx), "--opt-level", "0", "2", "--executor", "ray", "--ray-address", address]
    assert main([*argv, "--json"]) == 0
    events = _json_events(capsys.readouterr().out)
    ends = {e["build"]: e["status"] for e in events if e["event"] == "build_end"}
    assert ends == {0: "succeeded", 1: "succeeded"}
    assert any(e["event"] == "phase_start" and e["build"] == 1 for e in events)


def test_a_narrow_terminal_shortens_names_never_numbers_or_their_headers() -> None:
    """Issue 39: at 60 columns the final table showed the elapsed time as "…" and the engine size as "97…" while
    the empty bar and phase columns kept their width. Names shorten ("…"), numbers and their headers stay whole."""
    import io

    from rich.console import Console

    from trt_widget._format import fmt_bytes, fmt_s
    from trt_widget.matrix import BuildMatrix
    from trt_widget.matrix._cli import MatrixView
    from trt_widget.models import deep_residual

    matrix = BuildMatrix(
        {"a_rather_long_model_name.onnx": deep_residual(2)},
        variants=[{"optimization_level": 0}, {"optimization_level": 3}],
    )
    assert matrix.start().wait(300) == "done"
    view = MatrixView(matrix, io.StringIO(), plain=True)
    for width in (60, 110):
        drawn = io.StringIO()
        Console(file=drawn, force_terminal=False, width=width).print(view._table())
        out = drawn.getvalue()
        assert all(len(line) <= width for line in out.splitlines()), out
        header = out.splitlines()[0]
        assert "elapsed" in header and "engine" in header and "status" in header, out
        for build in matrix.builds:
            assert build.status == "succeeded" and build.engine_size
            assert fmt_s(build.elapsed_s) in out and fmt_bytes(build.engine_size) in out, out
        assert "succeeded" in out, out


def test_a_narrow_table_of_a_running_matrix_keeps_one_header_line_and_its_numbers(
    long_model_bytes: bytes, wait_until: WaitUntil
) -> None:
    """While a build runs at 60 columns the header is one line (the phase header shortens, it does not wrap)
    and the number columns stay whole."""
    import io

    from rich.console import Console

    from trt_widget.matrix import BuildMatrix
    from trt_widget.matrix._cli import MatrixView

    matrix = BuildMatrix({"model.onnx": long_model_bytes}, variants=[{"optimization_level": 0}]).start()
    try:
        build = matrix.builds[0]
        wait_until(lambda: build.model.innermost_running() is not None, timeout=120, what="a running phase")
        drawn = io.StringIO()
        Console(file=drawn, force_terminal=False, width=60).print(
            MatrixView(matrix, io.StringIO(), plain=True)._table()
        )
    finally:
        matrix.stop()
        matrix.wait(300)
    lines = drawn.getvalue().splitlines()
    assert len(lines) == 2, lines  # the header and the one build: nothing wrapped
    assert lines[0].split()[-2:] == ["elapsed", "engine"] and "status" in lines[0], lines
    assert "running" in lines[1] or "cancelling" in lines[1], lines
    assert re.search(r"\d ?m?s$", lines[1].rstrip()), lines  # the elapsed time, whole
