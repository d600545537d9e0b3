"""Issue 39's second pass over the command line: a taken port, a closed pipe, errors that name the flag, trtexec's
sizes, a replay's last lines, and the small messages of check / inspect / shapes."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trt_widget import Build
from trt_widget.__main__ import main
from trt_widget.models import deep_residual

DATA = Path(__file__).resolve().parent / "data" / "engine_report"


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trt_widget", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize("command", [["serve", "--data", "{tmp}"], ["mcp", "--http"]])
def test_a_port_in_use_is_one_line_naming_the_port_and_port_flag(
    command: list[str], taken_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.replace("{tmp}", str(tmp_path / "data")) for a in command]
    assert main([*argv, "--port", str(taken_port)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"port {taken_port} is already in use" in err and "--port" in err and "Errno" not in err


def _into_a_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """The command with its stdout a pipe whose reader has gone (``| head`` that has read its lines)."""
    read, write = os.pipe()
    os.close(read)  # before the command starts: every write finds the pipe closed
    try:
        return subprocess.run(
            [sys.executable, "-m", "trt_widget", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize("json", [False, True])
def test_inspect_into_a_closed_pipe_ends_quietly(json: bool) -> None:
    result = _into_a_closed_pipe("inspect", str(DATA / "trt10_16_trtexec_dumpLayerInfo.log"), *(["--json"] * json))
    assert result.returncode == 141, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize(
    "argv, said",
    [
        (["build", "{model}", "--budget", "-1"], "--budget must be a positive number of seconds"),
        (["matrix", "{model}", "--budget", "0", "--opt-level", "0", "3"], "--budget must be a positive number"),
        (["bundle", "{model}", "-o", "{tmp}/b.zip", "--budget", "0"], "--budget must be a positive number"),
    ],
)
def test_a_bad_option_value_is_a_usage_error_naming_its_flag(
    argv: list[str], said: str, onnx_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.replace("{model}", str(onnx_path)).replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert said in err and "variant" not in err, err
    assert not (tmp_path / "b.zip").exists()


def test_an_option_the_backend_lacks_is_named_by_its_flag(
    onnx_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trt_widget._backend import select_backend

    if select_backend()[0] != "rtx":
        pytest.skip("TensorRT for RTX has no FP16 flag")
    assert main(["build", str(onnx_path), "--fp16", "-o", str(tmp_path / "m.engine")]) == 2
    err = capsys.readouterr().err
    assert "--fp16 is not available" in err and "fp16=True" not in err
    assert not (tmp_path / "m.engine").exists()


def test_trtexec_mem_pool_size_takes_the_workspace_units_and_lists_them() -> None:
    from trt_widget._trtexec import translate

    sizes = {"1TiB": 1 << 40, "1T": 1 << 40, "2GiB": 2 << 30, "1GB": 10**9, "1024": 1 << 30, "64m": 64 << 20}
    for text, size in sizes.items():
        translation = translate(["--onnx=m.onnx", f"--memPoolSize=workspace:{text}"])
        assert translation.options["workspace"] == size and not translation.refused, text
    (_arg, why), *_ = translate(["--onnx=m.onnx", "--memPoolSize=workspace:1PiB"]).refused
    assert "TiB" in why and "GB" in why and "bare number is MiB" in why, why


def test_check_of_a_missing_engine_says_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.engine"
    assert main(["check", str(missing)]) == 1
    assert capsys.readouterr().out.strip() == f"{missing}: not found: no such file"
    assert main(["check", str(missing), "--json"]) == 1
    assert '"verdict": "not found"' in capsys.readouterr().out


def test_inspect_of_a_missing_or_unreadable_file_is_one_plain_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.jsonl"
    assert main(["inspect", str(missing)]) == 1
    assert capsys.readouterr().err.strip() == f"trt-widget inspect: error: no such file: {missing}"
    assert main(["inspect", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Errno" not in err and str(tmp_path) in err, err


def test_shapes_for_a_fixed_shape_model_say_they_have_no_effect(
    onnx_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = tmp_path / "m.engine"
    assert main(["build", str(onnx_path), "--min-shapes", "input:1x8x8x8", "--plain", "-o", str(engine)]) == 0
    out = capsys.readouterr().out
    assert "the shapes given have no effect: the model's input(s) 'input' 1x8x8x8 have fixed shapes" in out, out
    assert engine.stat().st_size > 0


def test_the_services_unknown_option_error_lists_only_what_it_accepts() -> None:
    pytest.importorskip("starlette")
    from trt_widget.serve._upload import UploadError, parse_options

    with pytest.raises(UploadError) as caught:
        parse_options('{"opt_level": 3}')
    said = str(caught.value)
    assert "unknown build option 'opt_level'" in said and "optimization_level" in said, said
    listed = said.split("Options accepted over HTTP: ")[1].split(", ")
    assert "budget" in listed and not {"configure", "output", "isolation", "timing_cache"} & set(listed), said


def _status_line(build: Build) -> str:
    """The rich view's status line of ``build``, rendered on an in-memory console."""
    from rich.console import Console

    from trt_widget._terminal import TerminalView

    view = TerminalView(build, io.StringIO(), style="rich", summary=False, console=Console(file=io.StringIO()))
    out = io.StringIO()
    Console(file=out, width=300).print(view._renderable())
    return out.getvalue().strip().splitlines()[-1]


def test_the_terminal_says_no_eta_on_a_first_build_and_an_eta_and_delta_column_after(tmp_path: Path) -> None:
    from rich.table import Table

    from trt_widget._terminal import TerminalView

    history = str(tmp_path / "history.sqlite")
    first = Build(deep_residual(3), isolation="thread", history=history)
    assert first.history is not None and first.history.ready.wait(60)
    assert "no ETA: first build" in _status_line(first)
    view = TerminalView(first, io.StringIO(), style="plain", summary=False)
    first.start()
    assert first.wait(300) == "succeeded" and view.join(30) and first.history.recorded.wait(60)
    again = Build(deep_residual(3), isolation="thread", history=history)
    assert again.history is not None and again.history.ready.wait(60)
    line = _status_line(again)
    assert "ETA ~" in line and "(based on build of " in line and "no ETA" not in line, line
    again.start()
    assert again.wait(300) == "succeeded"
    assert again.history.match is not None
    # the Δ column, as the widget's, where a phase has a Δ (what a loaded machine makes of them cannot be chosen:
    # set); none where no phase changed (issue 39, eighth trial: a heading over no values)
    for change, columns in ((1.0, 5), (0.0, 4)):
        deltas = {str(row["id"]): change for row in again.timings()}
        again.history.deltas = lambda deltas=deltas: deltas  # type: ignore[method-assign,misc]
        tree = TerminalView(again, io.StringIO(), style="plain", summary=False)._tree()
        assert isinstance(tree, Table) and len(tree.columns) == columns, change


def test_a_phase_delta_is_shown_as_the_widget_shows_it() -> None:
    from trt_widget._terminal import eta_text, phase_delta

    assert phase_delta(1.5, 11.5) == "+1.50 s" and phase_delta(-0.25, 1.0) == "−250 ms"
    assert phase_delta(0.05, 1.0) == "" and phase_delta(0.2, 10.2) == "" and phase_delta(float("nan"), 1.0) == ""
    assert eta_text({"total_s": 10.0, "based_on": "build of X"}, 4.0) == "ETA ~6.00 s (based on build of X)"
    assert eta_text({"total_s": 10.0, "based_on": None}, 12.0) == "over ETA of ~10.00 s"
    assert eta_text({"none": "first build", "why": "..."}, 1.0) == "no ETA: first build" and eta_text(None, 1) == ""


def test_a_command_not_on_path_but_in_this_pythons_environment_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Jupyter kernel's venv is often not on its PATH: ``BuildWidget.run(["polygraphy", ...])`` and
    ``trt-widget run`` find the program in ``sys.prefix``'s bin (where pip installed it) and run it."""
    from trt_widget import BuildError
    from trt_widget.watch import CommandRun

    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    tool = prefix / "bin" / "trtw-probe-tool"
    tool.write_text('#!/bin/sh\necho "ran $1"\nexit 7\n')
    tool.chmod(0o755)
    monkeypatch.setattr(sys, "prefix", str(prefix))
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    lines: list[bytes] = []
    run = CommandRun(["trtw-probe-tool", "x"], env=env, on_output=lines.append).start()
    assert run.result(60) == 7 and b"ran x" in b"".join(lines)
    missing = CommandRun(["trtw-no-such-tool"], env=env).start()
    with pytest.raises(BuildError, match=r"not on PATH, nor in .*venv/bin"):
        missing.result(60)


@pytest.mark.parametrize("command", ["build", "matrix"])
def test_json_events_into_a_closed_pipe_end_quietly_and_the_build_still_ends(
    command: str, onnx_path: Path, tmp_path: Path
) -> None:
    """The build goes on when its events' reader went away (its outcome is the exit code: 0, engine written)."""
    output = ["-o", str(tmp_path / ("m.engine" if command == "build" else "engines"))]
    result = _into_a_closed_pipe(command, str(onnx_path), "--json", *output)
    assert result.returncode == 0, result.stderr
    assert "pipe" not in result.stderr.lower() and "warning" not in result.stderr, result.stderr
    assert list(tmp_path.glob("**/*.engine"))
