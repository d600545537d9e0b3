"""The ``trt-widget`` command line on real RTX builds: a pseudo-terminal (rich tree, Ctrl-C), pipes (plain lines),
``--json``, and the exit codes for bad input and bad usage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pexpect
import pytest
from pty_output import before, through_match

from trt_widget.__main__ import main
from trt_widget._events import schema

TIMEOUT_S = 180


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, TRT_WIDGET_HISTORY="off", PYTHONUNBUFFERED="1")
    env.pop("NO_COLOR", None)
    for size in ("COLUMNS", "LINES"):  # the pty's dimensions, not the 80x24 a pytest-xdist worker has in its env
        env.pop(size, None)
    env.update(extra)
    return env


def _cli(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trt_widget", *args],
        capture_output=True,
        text=True,
        env=_env(TERM="xterm-256color"),
        timeout=TIMEOUT_S,
        **kwargs,
    )


@pytest.fixture(scope="module")
def long_onnx(tmp_path_factory: pytest.TempPathFactory, long_model_bytes: bytes) -> Path:
    """deep_residual(400): its single "Determining refit engines" step lasts seconds, time to press Ctrl-C."""
    path = tmp_path_factory.mktemp("cli") / "long.onnx"
    path.write_bytes(long_model_bytes)
    return path


def _spawn(*args: str) -> pexpect.spawn[str]:
    return pexpect.spawn(
        sys.executable,
        ["-m", "trt_widget", *args],
        env=_env(TERM="xterm-256color"),
        dimensions=(40, 120),
        encoding="utf-8",
        timeout=TIMEOUT_S,
    )


@pytest.mark.rtx_long_step
def test_terminal_renders_the_tree_and_ctrl_c_stops_within_the_long_step(long_onnx: Path, tmp_path: Path) -> None:
    engine = tmp_path / "long.engine"
    child = _spawn("build", str(long_onnx), "-o", str(engine))
    child.expect("Determining refit engines")  # drawn by the live tree while the long step runs
    seen = through_match(child)
    child.sendintr()
    child.expect("Cancelling — waiting for the builder to finish the current step of Determining refit engines")
    child.expect(pexpect.EOF)  # the builder process is terminated 0.1 s later: no second Ctrl-C needed
    child.close()
    output = seen + before(child)
    assert child.exitstatus == 130, output[-2000:]
    assert "\x1b[" in output  # rich drew with escape codes in the terminal
    assert "Building engine" in output and "Cancelled after" in output
    assert "did not reach a step boundary within 0.1 s" in output.replace("\r\n", " ")
    assert not engine.exists() and not list(tmp_path.glob("*.part"))


@pytest.mark.rtx_long_step
def test_thread_isolation_waits_for_the_step_boundary(long_onnx: Path, tmp_path: Path) -> None:
    engine = tmp_path / "thread.engine"
    child = _spawn("build", str(long_onnx), "-o", str(engine), "--isolation", "thread", "--plain")
    child.expect("Determining refit engines")
    child.sendintr()
    child.expect("Cancelling")
    child.sendintr()
    child.expect("Still waiting")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "Cancelled after" in before(child) and "terminated" not in before(child)
    assert not engine.exists()


def test_pipes_get_plain_lines_and_the_engine_is_written(onnx_path: Path, tmp_path: Path) -> None:
    engine = tmp_path / "out.engine"
    result = _cli("build", str(onnx_path), "-o", str(engine))
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"Building {onnx_path}")
    assert any(line.endswith("Building engine (6 steps)") or "] Building engine" in line for line in lines)
    assert any("]   Cloning network graph" in line for line in lines)  # indented one level
    assert "Summary" in lines and lines[-1].startswith("Succeeded in") and str(engine) in lines[-1]
    assert engine.stat().st_size > 0


def test_default_output_is_the_model_with_engine_suffix(onnx_path: Path) -> None:
    result = _cli("build", str(onnx_path), "--plain")
    assert result.returncode == 0, result.stderr
    assert onnx_path.with_suffix(".engine").stat().st_size > 0


def test_json_lines_parse_and_validate(onnx_path: Path, tmp_path: Path) -> None:
    result = _cli("build", str(onnx_path), "--json", "-o", str(tmp_path / "j.engine"))
    assert result.returncode == 0, result.stderr
    validator = jsonschema.Draft202012Validator(schema())
    events = [json.loads(line) for line in result.stdout.splitlines()]
    for event in events:
        validator.validate(event)
    assert events[0]["event"] == "build_start" and events[-1]["event"] == "build_end"
    assert events[-1]["status"] == "succeeded" and events[-1]["output"] == str(tmp_path / "j.engine")
    assert {e["event"] for e in events} >= {"phase_start", "step", "phase_finish"}


def test_budget_cancels_with_exit_124(long_onnx: Path, tmp_path: Path) -> None:
    result = _cli("build", str(long_onnx), "--budget", "0.01", "-o", str(tmp_path / "b.engine"))
    assert result.returncode == 124, result.stdout[-2000:] + result.stderr
    assert "time budget of 0.01 s exceeded" in result.stdout
    assert not (tmp_path / "b.engine").exists()


def test_missing_file_is_one_clear_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.onnx"
    result = _cli("build", str(missing))
    assert result.returncode == 1
    assert result.stderr.strip() == f"trt-widget: error: ONNX file not found: {missing}"
    assert result.stdout == ""
    assert main(["view", str(tmp_path / "nope.jsonl")]) == 1  # a recording: the same kind of line
    assert capsys.readouterr().err.strip() == f"trt-widget: error: recording not found: {tmp_path / 'nope.jsonl'}"


def test_a_build_failure_exits_1_without_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08not an onnx model")
    result = _cli("build", str(bad))
    assert result.returncode == 1
    assert "could not parse" in result.stderr and "Traceback" not in result.stderr + result.stdout
    assert not bad.with_suffix(".engine").exists()


def test_a_build_failure_in_a_terminal_is_said_once(tmp_path: Path) -> None:
    """The view's last line says why; the stderr line repeats it only for pipes and --json (and adds what the
    view's one line leaves out)."""
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08not an onnx model")
    child = _spawn("build", str(bad), "--plain")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    output = before(child)
    assert output.count("could not parse") == 1, output
    assert "Failed after" in output and "trt-widget: build failed" not in output
    assert "Summary" not in output and "slowest" not in output  # nothing of TensorRT's ran to sum up


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["build"],
        ["build", "m.onnx", "--bogus"],
        ["build", "m.onnx", "--opt-level", "9"],
        ["build", "m.onnx", "--isolation", "fork"],
        ["demo", "--blocks", "0"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if len(argv) > 1:
        argv = [str(tmp_path / a) if a == "m.onnx" else a for a in argv]
        (tmp_path / "m.onnx").write_bytes(b"")
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("--opt-levle", "--opt-level"), ("--opt_level", "--opt-level"), ("--timing-cahce", "--timing-cache")],
)
def test_a_mistyped_option_is_named_with_the_closest_one(
    typo: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["build", "m.onnx", typo, "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: trt-widget build")  # the command's usage, not the top level's
    assert f"unrecognized arguments: {typo} 3 ({typo}: did you mean {meant}?)" in err
    assert main(["build", "m.onnx", "--bogus"]) == 2
    assert "did you mean" not in capsys.readouterr().err  # nothing close: no guess
    assert main(["build", "m.onnx", "--x\x1b[31m"]) == 2
    assert "\x1b" not in capsys.readouterr().err  # what was typed is echoed escaped


def test_bad_option_values_exit_2(onnx_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(onnx_path), "--workspace", "lots"]) == 2
    assert "workspace must be a byte count" in capsys.readouterr().err


class FakeTerminal:
    """A text stream that claims to be a terminal."""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def test_without_rich_a_terminal_gets_plain_lines(monkeypatch: pytest.MonkeyPatch, small_model: Any) -> None:
    from trt_widget._build import Build
    from trt_widget._terminal import TerminalView

    monkeypatch.setenv("TERM", "xterm-256color")
    assert TerminalView(Build(small_model, history=False), FakeTerminal()).rich  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "rich", None)  # as if rich were not installed
    assert not TerminalView(Build(small_model, history=False), FakeTerminal()).rich  # type: ignore[arg-type]


def test_tensorrts_line_for_a_stop_is_said_calmly_in_the_terminal() -> None:
    """Stopped at a step boundary, TensorRT logs "Error Code 7: BuildCanceled" as an ERROR: expected, not red."""
    import io

    from trt_widget import Build, models
    from trt_widget._terminal import TerminalView

    build = Build(models.deep_residual(20), history=False, isolation="thread")

    def stop_when_deep(event: str, phase: Any) -> None:
        if event == "phase_start" and phase.depth >= 2:
            build.stop()

    build.model.subscribe(stop_when_deep)
    out = io.StringIO()
    terminal = TerminalView(build, out, style="plain")
    build.start()
    assert build.wait(120) == "cancelled"
    terminal.join(10)
    said = [line for line in out.getvalue().splitlines() if "BuildCanceled" in line]
    assert said, out.getvalue()
    assert all("] expected: " in line and "ERROR" not in line and "cancelled, as asked" in line for line in said)


def test_ctrl_c_before_the_build_starts_is_one_line_and_exit_130(onnx_path: Path) -> None:
    """A Ctrl-C landing while the command line still imports (here: raised by the import of the options module,
    as SIGINT's KeyboardInterrupt would be) ends it with one line, no traceback."""
    script = (
        "import sys\n"
        "class Interrupting:\n"
        "    @staticmethod\n"
        "    def find_spec(name, path=None, target=None):\n"
        "        if name == 'trt_widget._options':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupting)\n"
        "from trt_widget.__main__ import main\n"
        f"sys.argv = ['trt-widget', 'build', {str(onnx_path)!r}]\n"
        "sys.exit(main())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_env(), timeout=60)
    assert result.returncode == 130, result.stderr
    assert result.stderr == "trt-widget: interrupted\n" and result.stdout == ""


@pytest.mark.parametrize("style", ["--json", "--plain"])
def test_a_closed_stdout_is_said_once_and_the_engine_is_built(onnx_path: Path, tmp_path: Path, style: str) -> None:
    """Started with stdout closed (``>&-``), ``build --json`` ended in a TypeError traceback before building (exit 1)
    and ``--plain`` warned that its terminal view could not write."""
    engine = tmp_path / "out.engine"
    command = [sys.executable, "-m", "trt_widget", "build", style, str(onnx_path), "-o", str(engine)]
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    done = subprocess.run(
        ["sh", "-c", 'exec 1>&- "$@"', "sh", *command], stderr=subprocess.PIPE, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    assert engine.is_file()
    assert done.stderr.count("stdout is closed") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "failed writing" not in done.stderr, done.stderr


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_stdout_that_is_not_utf8_gets_every_event_and_no_traceback(tmp_path: Path, encoding: str) -> None:
    """Eighth re-run: on a stdout whose encoding is the locale's and not UTF-8 (``PYTHONIOENCODING``, a Latin-1
    ``LANG``), a model named ``modèle日.onnx`` or with node names such as ``nœud_日本`` made ``build --json`` and
    ``matrix --json`` drop every later event (one warning, exit 0: a recording without its ``build_end``), and
    ``inspect`` and ``check`` end in a UnicodeEncodeError traceback. JSON gets ``\\u`` escapes (the same value),
    text gets backslash escapes."""
    from trt_widget.models import deep_residual, to_bytes

    model = deep_residual(2)
    for index, node in enumerate(model.graph.node):
        node.name = f"nœud_é_{index}_日本"
    path = tmp_path / "modèle日.onnx"
    path.write_bytes(to_bytes(model))
    env = _env(PYTHONIOENCODING=encoding)
    engine = tmp_path / "modèle日.engine"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "trt_widget", *args],
            capture_output=True,
            text=True,
            encoding=encoding,
            env=env,
            timeout=TIMEOUT_S,
        )

    built = run("build", "--json", str(path), "-o", str(engine))
    assert built.returncode == 0 and "failed writing" not in built.stderr, built.stderr
    events = [json.loads(line) for line in built.stdout.splitlines()]
    assert events[0]["model"] == str(path) and events[-1]["event"] == "build_end", built.stdout[-500:]
    assert any("nœud_é_0_日本" in json.dumps(e, ensure_ascii=False) for e in events)
    recording = tmp_path / "rec.jsonl"
    recording.write_text(built.stdout, encoding="utf-8")
    matrix = run("matrix", "--json", str(path), "--output-dir", str(tmp_path / "m"))
    assert matrix.returncode == 0 and "failed writing" not in matrix.stderr, matrix.stderr
    assert [json.loads(line) for line in matrix.stdout.splitlines()][-1]["event"] == "build_end", matrix.stdout[-500:]
    for args in (("inspect", str(recording)), ("check", str(engine)), ("view", "--plain", str(recording))):
        done = run(*args)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr[-2000:])
