"""Issue 39, what the sixth newcomer trial left on the command line: bundle's words for a recording, ``inspect`` of
an engine, the matrix's comparison in a terminal, status lines wrapped between words, each failure said once, and
what the README's blocks leave in a clone."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from attacks import built_engine

from trt_widget.matrix._table import FIRST_BUILD
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


CAUSE = "is it really an ONNX model?"


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    """A model cut short: every command fails on it with CAUSE."""
    path = tmp_path / "bad.onnx"
    path.write_bytes(to_bytes(deep_residual(2))[:1000])
    return path


@pytest.mark.parametrize(
    "argv, code",
    [
        (["build", "{bad}"], 1),
        (["build", "{bad}", "--plain"], 1),
        (["build", "{bad}", "--json"], 1),
        (["view", "{recording}"], 1),
        (["matrix", "{bad}", "--opt-level", "0", "3"], 1),
        (["matrix", "{bad}", "--opt-level", "0", "--plain"], 1),
        (["bundle", "{bad}", "-o", "{tmp}/b.zip"], 0),
        (["bundle", "{recording}", "-o", "{tmp}/c.zip"], 0),
    ],
)
def test_a_failure_is_said_once_where_the_output_goes(damaged: Path, argv: list[str], code: int) -> None:
    """Item 5: with stdout and stderr in one place (a terminal's scrollback, ``2>&1 | tee``), the view's last line
    and then "trt-widget: build failed: ..." said the same cause twice; ``matrix --plain`` said it in its status
    line and again in its table; ``bundle`` of a failed build never said it. The exit code is as before."""
    tmp = damaged.parent
    recording = tmp / "bad.jsonl"
    if not recording.exists():
        recorded = subprocess.run(
            [sys.executable, "-m", "trt_widget", "build", str(damaged), "--json"], capture_output=True, text=True
        )
        recording.write_text(recorded.stdout)
    args = [a.format(bad=damaged, recording=recording, tmp=tmp) for a in argv]
    result = _cli(*args, cwd=tmp)
    assert result.returncode == code, result.stdout
    said = result.stdout
    if "--json" in argv:  # the events go to stdout: the one line for a person is on stderr
        said = "\n".join(line for line in said.splitlines() if not line.startswith("{"))
    builds = 2 if "3" in argv else 1
    assert said.count(CAUSE) == builds, said


def test_a_failure_still_reaches_stderr_when_stdout_goes_elsewhere(damaged: Path) -> None:
    """The other half of item 5: ``trt-widget build bad.onnx > log`` still says why on stderr (a script reads it)."""
    result = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", str(damaged)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 1
    assert result.stdout.count(CAUSE) == 1 and result.stderr.count(CAUSE) == 1, (result.stdout, result.stderr)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An engine ``trt-widget build`` wrote, its manifest beside it."""
    return built_engine(tmp_path_factory.mktemp("engine"))


@pytest.mark.parametrize("name", ["model.engine", "model.engine.manifest.json"])
def test_inspect_of_an_engine_shows_what_its_manifest_knows(engine: Path, name: str) -> None:
    """Item 2: ``inspect model.engine`` refused the engine a new user had just built. It now shows where it came
    from (model, options, TensorRT, when), the engine report the build saved, and where the layer table is; the
    engine is not deserialized (TensorRT for RTX cannot here)."""
    import json

    from trt_widget._backend import backend_info

    result = _cli("inspect", name, cwd=engine.parent)
    assert result.returncode == 0, result.stdout
    text = result.stdout
    version = backend_info()["version"]
    for said in ("model.engine.manifest.json", "model.onnx", version, "optimization_level", "5 layers", "FP32"):
        assert said in text, (said, text)
    assert "trt-widget check model.engine" in text and "trt-widget inspect build.jsonl" in text, text
    as_json = _cli("inspect", name, "--json", cwd=engine.parent)
    assert as_json.returncode == 0, as_json.stdout
    data = json.loads(as_json.stdout)
    assert data["manifest"]["tensorrt"]["version"] == version and data["engine_report"]["layers"] == 5, data


def test_inspect_of_an_engine_with_a_hostile_or_missing_manifest_says_so_plainly(engine: Path, tmp_path: Path) -> None:
    """Item 2, untrusted input: a manifest whose text holds escape codes, one for another engine, a huge one, and
    an engine with none each get a clear line; nothing raw reaches the terminal."""
    import json
    import shutil

    folder = tmp_path / "copy"
    folder.mkdir()
    shutil.copyfile(engine, folder / "model.engine")
    manifest = json.loads((engine.parent / "model.engine.manifest.json").read_text())
    manifest["model"]["label"] = "\x1b]0;pwned\x07\x1b[31mred.onnx"
    (folder / "model.engine.manifest.json").write_text(json.dumps(manifest))
    hostile = _cli("inspect", "model.engine", cwd=folder)
    assert hostile.returncode == 0 and "\x1b" not in hostile.stdout and "\\x1b" in hostile.stdout, hostile.stdout
    manifest["engine"]["file"] = "other.engine"
    (folder / "model.engine.manifest.json").write_text(json.dumps(manifest))
    other = _cli("inspect", "model.engine", cwd=folder)
    assert other.returncode == 1 and "other.engine" in other.stdout and len(other.stdout.splitlines()) == 1, other
    (folder / "model.engine.manifest.json").write_text(" " * (5 << 20))
    huge = _cli("inspect", "model.engine", cwd=folder)
    assert huge.returncode == 1 and "not a trt_widget manifest" in huge.stdout, huge.stdout
    assert len(huge.stdout.splitlines()) == 1, huge.stdout
    (folder / "model.engine.manifest.json").unlink()
    bare = _cli("inspect", "model.engine", cwd=folder)
    assert bare.returncode == 1 and len(bare.stdout.splitlines()) == 1, bare.stdout
    assert "trt-widget check model.engine" in bare.stdout and "Traceback" not in bare.stdout, bare.stdout


def _broken_words(text: str, width: int, words: set[str]) -> list[str]:
    """Lines longer than ``width``, and lines that end or begin inside one of ``words``."""
    import re

    lines = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line).rstrip() for line in text.splitlines()]
    found = [line for line in lines if len(line) > width]
    for upper, lower in itertools.pairwise(lines):
        last = upper.split(" ")[-1] if upper else ""
        first = lower.split(" ")[0] if lower else ""
        if last and first and last not in words and last + first in words:
            found.append(f"{upper!r} / {lower!r}")
    return found


@pytest.mark.rtx_long_step  # names RTX's own phase
def test_a_long_notice_wraps_between_words_in_a_narrow_terminal(tmp_path: Path) -> None:
    """Item 4: a notice (what Stop and Ctrl-C answer) was printed as one soft-wrapped line, which the terminal
    broke at its last column, mid-word; rich now wraps it between words, and a path longer than a line folds."""
    import io

    from rich.console import Console

    from trt_widget import Build
    from trt_widget._terminal import TerminalView

    said = (
        "Cancelling — waiting for TensorRT to reach the end of its step in Determining refit engines (thread "
        "isolation cannot be terminated: a second Ctrl-C exits without waiting) " + "/very" * 12 + "/model.onnx"
    )
    out = io.StringIO()
    build = Build(tmp_path / "nope.onnx", history=False)
    console = Console(file=out, force_terminal=True, width=40, color_system=None)
    view = TerminalView(build, out, style="rich", console=console)
    view.notice(said)
    assert build.start().wait(120) == "failed"
    assert view.join(60)
    text = out.getvalue()
    assert not _broken_words(text, 40, {w for w in said.split(" ") if len(w) <= 40}), text  # longer ones fold
    assert "Determining refit" in text.replace("\n", " "), text


def test_the_terminal_matrix_ends_with_the_comparison(model: Path, damaged: Path) -> None:
    """Item 3: the widget's matrix has a Comparison (what differs between variants); the terminal printed only
    the table. Plain: each build against the first that succeeded, "build time (no start-up)" beside "start-up",
    and a failed build with no differences."""
    result = _cli("matrix", model.name, damaged.name, "--opt-level", "0", "3", "--plain", cwd=model.parent)
    assert result.returncode == 1, result.stdout
    text = result.stdout[result.stdout.index("Comparison against") :]
    # the baseline: the first build that succeeded on a warm builder process (#0 paid the fresh process's costs)
    cold = "#0 model.onnx [optimization_level=0]: build time" in text and FIRST_BUILD in text
    base, other = (
        ("#1 model.onnx [optimization_level=3]", "#0 ") if cold else ("#0 model.onnx [optimization_level=0]", "#1 ")
    )
    assert text.startswith(f"Comparison against {base}:"), text
    assert f"{base}: baseline; build time (no start-up) " in text, text
    first = next(line for line in text.splitlines() if line.startswith(other))
    assert "start-up " in first and "engine " in first and "layers " in first and "precisions FP32" in first, first
    for failed in ("#2 bad.onnx [optimization_level=0]", "#3 bad.onnx [optimization_level=3]"):
        line = next(line for line in text.splitlines() if line.startswith(failed))
        assert line.startswith(f"{failed}: failed after ") and line.endswith(" (not compared)"), line


def test_the_matrix_comparison_fits_60_columns_without_cutting_a_number(model: Path) -> None:
    """Item 3 in a 60-column terminal (a pty, the live table's rich path): every line fits, and no line break
    falls between a number and its unit."""
    import re

    import pexpect
    from pty_output import before, cli_in_pty

    child = cli_in_pty("matrix", model.name, "--opt-level", "0", "3", "5", cwd=model.parent)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, before(child)
    text = before(child)
    lines = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line).rstrip() for line in text.split("\r\n")]
    shown = lines[next(i for i, line in enumerate(lines) if line.startswith("Comparison against")) :]
    assert sum(line.startswith("#") for line in shown) == 3 and "(no start-up)" in " ".join(shown), shown
    assert all(len(line) <= 60 for line in shown), shown
    unit = r"(ms|s|min|B|KiB|MiB|GiB)\b"
    for upper, lower in itertools.pairwise(shown):
        assert not (re.search(r"[+−]?[\d.<]+$", upper) and re.match(rf"\s*{unit}", lower)), (upper, lower)


def test_inspect_of_an_onnx_model_says_to_build_it_not_that_it_is_an_engine(model: Path) -> None:
    """Item 2's neighbour: ``inspect model.onnx`` (the file a new user has) said "a serialized engine (binary)";
    it is the model: the line says so and how to get what inspect reads."""
    renamed = model.with_name("weights.bin")  # the name does not decide: the bytes begin as an ONNX model does
    renamed.write_bytes(model.read_bytes())
    for path in (model, renamed):
        result = _cli("inspect", path.name, cwd=model.parent)
        assert result.returncode == 1 and len(result.stdout.splitlines()) == 1, result.stdout
        assert "serialized engine" not in result.stdout and "an ONNX model" in result.stdout, result.stdout
        assert f"trt-widget build {path.name} --json > build.jsonl" in result.stdout, result.stdout
