"""Issue 39, what the seventh newcomer trial left on the command line: prose wrapped between words in a terminal
(build's last line, ``inspect`` of an engine, ``serve``'s banner), a matrix stopped by Ctrl-C, the comparison's
words for a failed build, what ``--reuse`` reused, the build tree's Δ column, ``serve``'s log of a bad upload and
``check`` of an engine whose manifest is stale."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from pty_output import before, cli_in_pty
from test_first_hour_sixth_cli import _broken_words

from trt_widget.models import deep_residual, to_bytes

WIDTH = 60


def _pty(*args: str, cwd: Path, width: int = WIDTH) -> pexpect.spawn[str]:
    """``trt-widget ARGS`` in a pseudo-terminal ``width`` columns wide."""
    return cli_in_pty(*args, cwd=cwd, width=width)


def _words(text: str) -> set[str]:
    """The words of what a command printed, unwrapped (a word broken at a line's end is whole here too)."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    return {w for w in re.split(r"\s+", plain) if w and len(w) <= WIDTH}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A folder where ``trt-widget build model.onnx -o model.engine`` ran in a 60-column terminal; what it printed."""
    folder = tmp_path_factory.mktemp("built")
    (folder / "model.onnx").write_bytes(to_bytes(deep_residual(2)))
    child = _pty("build", "model.onnx", "-o", "model.engine", cwd=folder)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, before(child)
    return folder, before(child)


def _unbroken(text: str, said: str) -> None:
    """No line of ``text`` is wider than the terminal or ends inside a word of ``said``."""
    lines = text.replace("\r\n", "\n")
    assert not _broken_words(lines, WIDTH, _words(said)), lines


def test_the_last_line_of_build_wraps_between_words(built: tuple[Path, str]) -> None:
    """Item 1: "model.engine is a TensorRT for RTX engine (finished on the GPU when loaded): ..." broke "G|PU"."""
    from trt_widget.__main__ import engine_note

    _, text = built
    note = "model.engine " + engine_note("rtx")
    assert note in " ".join(text.replace("\r\n", " ").split()), text
    _unbroken(text, note)


def test_inspect_of_an_engine_wraps_between_words(built: tuple[Path, str]) -> None:
    """Item 1: ``inspect model.engine`` in a terminal broke "peak CP|U 97.0 MiB" and "inspect build|.jsonl"."""
    folder, _ = built
    child = _pty("inspect", "model.engine", cwd=folder)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, before(child)
    text = before(child)
    plain = subprocess.run(
        [sys.executable, "-m", "trt_widget", "inspect", "model.engine"], cwd=folder, capture_output=True, text=True
    )
    assert "trt-widget inspect build.jsonl" in plain.stdout and max(map(len, plain.stdout.splitlines())) > WIDTH
    _unbroken(text, plain.stdout)
    unit = r"(ms|s|min|B|KiB|MiB|GiB)\b"
    lines = text.split("\r\n")
    for upper, lower in itertools.pairwise(lines):
        assert not (re.search(r"\d$", upper.rstrip()) and re.match(rf"\s*{unit}", lower)), (upper, lower)


def test_the_serve_banner_wraps_between_words(tmp_path: Path) -> None:
    """Item 1: ``serve``'s first line broke "at most 1 concurren|t" in a terminal."""
    child = _pty("serve", "--port", "0", "--data", str(tmp_path / "data"), cwd=tmp_path)
    child.expect("page: ")
    text = before(child)
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    banner = text[text.index("trt-widget serve: http") :]
    assert "concurrent" in " ".join(banner.split()), text
    _unbroken(text, banner)


def test_check_of_an_engine_another_tool_overwrote_says_the_manifest_is_stale(tmp_path: Path) -> None:
    """Item 7: after Polygraphy wrote another engine over model.engine, ``check`` said "does not load: model.engine
    is not the engine model.engine.manifest.json describes": the manifest is stale, the file may well load."""
    for name, depth in (("model", 2), ("other", 3)):
        (tmp_path / f"{name}.onnx").write_bytes(to_bytes(deep_residual(depth)))
        built = subprocess.run(
            [sys.executable, "-m", "trt_widget", "build", f"{name}.onnx", "-o", f"{name}.engine", "--plain"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert built.returncode == 0, built.stdout + built.stderr
    (tmp_path / "model.engine").write_bytes((tmp_path / "other.engine").read_bytes())  # another tool's engine
    said = subprocess.run(
        [sys.executable, "-m", "trt_widget", "check", "model.engine"], cwd=tmp_path, capture_output=True, text=True
    )
    assert said.returncode == 1, said.stdout  # nothing says it loads
    assert "does not load" not in said.stdout, said.stdout
    for words in ("describes another engine", "replaced after the build", "the manifest is stale"):
        assert words in said.stdout, said.stdout


@pytest.mark.rtx_long_step
def test_a_matrix_stopped_by_ctrl_c_at_60_columns_leaves_no_stale_frame_and_no_empty_comparison(
    tmp_path: Path,
) -> None:
    """Item 2: Ctrl-C of a matrix in a 60-column terminal left the live frame's header ("... curren…") above
    "Stopping every build", printed twice; then a comparison of builds that all were cancelled or never started
    ("cancelled after 6.45 s: no differences"). The table is drawn once, and no comparison follows."""
    from watch._tmux import tmux_screen

    for name in ("deep.onnx", "deeper.onnx"):
        (tmp_path / name).write_bytes(to_bytes(deep_residual(1000)))
    environ = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    models = [str(tmp_path / "deep.onnx"), str(tmp_path / "deeper.onnx")]
    command = [sys.executable, "-m", "trt_widget", "matrix", *models, "--opt-level", "0", "3"]
    screen = tmux_screen(tmp_path, command, environ, keys=[("running", "C-c", 1.0)], width=WIDTH)
    text = "\n".join(screen)
    assert (tmp_path / "exited").read_text().strip() == "130", text
    stop = next(i for i, line in enumerate(screen) if line.startswith("Stopping every build"))
    heads = [i for i, line in enumerate(screen) if re.match(r"\s*# +model +variant +status", line)]
    assert len(heads) == 1 and heads[0] > stop, text  # the final table only: no frame left above the notice
    assert "Comparison against" not in text, text


def test_the_build_tree_labels_its_delta_column_and_shows_slower_in_amber_not_red(tmp_path: Path) -> None:
    """Item 5: the tree's "Δ last build" values were red ("+208 ms": slower than last time, not a failure) and had
    no label. The column has the widget's header, and a slower phase is amber (yellow). Two real builds share a
    history; the second's deltas are then set to +1 s a phase (what a loaded machine makes of it cannot be chosen)."""
    import io

    from rich.console import Console

    from trt_widget import Build
    from trt_widget._terminal import TerminalView

    history = str(tmp_path / "history.sqlite")
    for _ in range(2):
        build = Build(deep_residual(3), isolation="thread", history=history)
        assert build.history is not None and build.history.ready.wait(60)
        assert build.start().wait(300) == "succeeded" and build.history.recorded.wait(60)
    link = build.history
    assert link is not None and link.match is not None
    slower = {str(row["id"]): 1.0 for row in build.timings()}
    link.deltas = lambda: slower  # type: ignore[method-assign]
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system="standard")
    console.print(TerminalView(build, io.StringIO(), style="plain", summary=False)._tree())
    text = out.getvalue()
    assert "Δ last build" in text, text
    assert "+1.00 s" in text and "\x1b[31m" not in text, text  # ANSI red: none


def test_a_reused_engine_says_where_it_came_from(tmp_path: Path) -> None:
    """Item 4: ``--reuse`` said "✓ Reused engine 203 ms", not from where. The last line names the cached engine
    (plain and terminal share it); the JSON events' build_end detail names it too."""
    import json

    (tmp_path / "model.onnx").write_bytes(to_bytes(deep_residual(2)))
    cache = tmp_path / "cache"

    def build(output: str, *mode: str) -> subprocess.CompletedProcess[str]:
        argv = ["build", "model.onnx", "-o", output, "--reuse", "--reuse-dir", str(cache), *mode]
        return subprocess.run(
            [sys.executable, "-m", "trt_widget", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )

    first = build("a.engine", "--plain")
    assert first.returncode == 0 and "reused" not in first.stdout, first.stdout
    again = build("b.engine", "--plain")
    assert again.returncode == 0, again.stdout + again.stderr
    entries = list(cache.glob("*.engine"))
    assert len(entries) == 1, entries
    assert f"written to b.engine, reused from {entries[0]}" in again.stdout, again.stdout
    events = [json.loads(line) for line in build("c.engine", "--json").stdout.splitlines()]
    end = next(e for e in events if e["event"] == "build_end")
    assert f"reused the engine in {entries[0]}" in end["detail"], end


@pytest.mark.parametrize("mode", [[], ["--plain"]], ids=["rich", "plain"])
def test_a_failed_build_s_last_line_wraps_between_words(mode: list[str], tmp_path: Path) -> None:
    """Item 1, the other outputs: the failure line of ``--plain`` (one long line the terminal broke mid-word)."""
    (tmp_path / "bad.onnx").write_bytes(to_bytes(deep_residual(2))[:1000])
    child = _pty("build", "bad.onnx", *mode, cwd=tmp_path)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1, before(child)
    text = before(child)
    plain = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", "bad.onnx", "--plain"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    failed = next(line for line in plain.stdout.splitlines() if line.startswith("Failed after"))
    assert len(failed) > WIDTH and "is it really an ONNX model?" in " ".join(text.split()), text
    _unbroken(text, failed)


@pytest.mark.parametrize("command", ["mcp", "lsp"])
def test_a_stdio_server_s_banner_wraps_between_words(command: str, tmp_path: Path) -> None:
    """Item 1, seen again at 16:30: ``trt-widget mcp`` started by hand broke its banner mid-word ("Ctr|l-C")."""
    child = _pty(command, cwd=tmp_path)
    child.expect("ends it")
    text = before(child) + "ends it"
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    banner = text[text.index(f"trt-widget {command}: ") :]
    assert "Ctrl-C (or Ctrl-D)" in " ".join(banner.split()), text
    _unbroken(text, banner)


@pytest.mark.rtx_long_step
def test_the_live_tree_at_60_columns_has_a_blue_bar_and_room_for_names(tmp_path: Path) -> None:
    """Seen again at 16:30: the live tree's progress bar was rich's pink-red (colour 197: red is only for what
    failed), and at 60 columns the bar's 20 columns cut the names to ~10 characters ("Deter…")."""
    import io
    import time

    from rich.console import Console

    from trt_widget import Build
    from trt_widget._terminal import TerminalView

    build = Build(deep_residual(1000), isolation="thread", history=False)
    view = TerminalView(build, io.StringIO(), style="plain", summary=False)
    view._console = Console(file=io.StringIO(), width=WIDTH)  # the tree as a 60-column terminal's view draws it
    build.start()
    try:
        deadline = time.monotonic() + 240
        # drawn until a running bar is partly done (at 1/3002 it is all background; the row may end in between)
        while True:
            assert time.monotonic() < deadline and not build.done(), build.status
            out = io.StringIO()
            Console(file=out, width=WIDTH, force_terminal=True, color_system="256").print(view._tree())
            text = out.getvalue()
            assert "\x1b[38;5;197m" not in text, text  # rich's pink-red: red is only for what failed
            if "━" in text and "\x1b[34m" in text:  # a bar, its done part blue
                break
            time.sleep(0.05)
    finally:
        build.stop()
        build.wait(120)
    assert "Building engine" in text, text  # the root's name whole beside its bar


@pytest.mark.rtx_long_step
def test_a_build_stopped_in_a_phase_that_then_ran_to_its_end_says_so() -> None:
    """Seen again at 16:30: the final tree showed "✓ Determining refit engines 20.51 s" while the last line said
    "Cancelled ... (during Determining refit engines)": a thread build hears the stop when that step ends, so the
    phase is done; the line now says the build stopped at its end."""
    import time

    from trt_widget import Build
    from trt_widget._terminal import outcome

    phase = "Determining refit engines"
    build = Build(deep_residual(1000), isolation="thread", history=False)
    build.start()
    deadline = time.monotonic() + 240
    while not any(r["name"] == phase and r["end_s"] is None for r in build.model.rows()):
        assert time.monotonic() < deadline and not build.done(), build.status
        time.sleep(0.02)
    build.stop("interrupted (Ctrl-C)")
    assert build.wait(300) == "cancelled"
    rows = [r for r in build.model.rows() if r and r["name"] == phase]
    said = outcome(build)
    assert f"(at the end of {phase})" in said if rows[-1]["status"] == "done" else f"(during {phase})" in said, said
    assert rows[-1]["status"] == "done", rows  # what the trial saw: a thread build's step runs to its end
