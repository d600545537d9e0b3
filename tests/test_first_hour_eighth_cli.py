"""Issue 39, what the eighth newcomer trial left in the terminal views: ``inspect``'s layer table wider than the
terminal, the matrix comparison's missing twins note and ASCII minus, a cross-model comparison, the live table's
variant column at 60 columns, and a comparison of builds none of which succeeded."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest
from cli_recordings import record_build
from pty_output import before, cli_in_pty
from test_first_hour_sixth_cli import _broken_words

from trt_widget.models import deep_residual, to_bytes

LONG_NAME = "encoder_block_0_convolution_with_a_rather_descriptive_name"


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``trt-widget build deep.onnx --json > build.jsonl``: a recording with an engine report whose layer table
    is wider than 120 columns (a long node name, three fused nodes a layer)."""
    folder = tmp_path_factory.mktemp("inspect")
    return record_build(folder, deep_residual(30, node_name=LONG_NAME), "build.jsonl", timeout=300)


@pytest.mark.parametrize("width", [120, 60])
def test_inspect_s_layer_table_fits_the_terminal(recording: Path, width: int) -> None:
    """Item 1: the summary wrapped, but the LAYER table's lines were wider than the terminal, which broke them
    mid-word ("a|dd_8", "relu_1|03"). Every line fits; every layer's row is there, its nodes whole."""
    child = cli_in_pty("inspect", recording.name, cwd=recording.parent, width=width, timeout=120)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, before(child)
    text = before(child).replace("\r\n", "\n")
    piped = subprocess.run(  # through a pipe: one line a layer, nothing shortened
        [sys.executable, "-m", "trt_widget", "inspect", recording.name],
        cwd=recording.parent,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert max(map(len, piped.splitlines())) > 120, piped  # the table does not fit unless fitted
    words = {w.strip("(),") for w in piped.split() if len(w) <= width}
    assert not _broken_words(text, width, words), text
    table = text[text.index("TYPE ") :].splitlines()
    rows = [line for line in table[1:] if not line.startswith(" ")]
    assert len(rows) == len(piped[piped.index("TYPE ") :].splitlines()) - 1, text  # a row per layer
    nodes = set(re.findall(r"\b(?:relu|add|conv)_\d+\b", piped))
    assert nodes and nodes <= set(re.findall(r"\b(?:relu|add|conv)_\d+\b", text)), text  # names whole


@pytest.fixture(scope="module")
def two_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("models")
    big, small = folder / "big.onnx", folder / "small.onnx"
    big.write_bytes(to_bytes(deep_residual(6)))
    small.write_bytes(to_bytes(deep_residual(2)))
    return big, small


def test_the_terminal_comparison_notes_twins_and_compares_each_model_with_itself(
    two_models: tuple[Path, Path],
) -> None:
    """Items 2 and 3: the terminal comparison lacked the widget's note on what identical builds differed by, wrote
    "(-5)" with an ASCII minus, and compared small.onnx's engine with big.onnx's ("layers 5 (-8)"). Now it says
    the twins' spread, and each build is compared with a build of its own model."""
    from trt_widget import BuildMatrix
    from trt_widget.matrix._table import comparison_paragraphs

    big, small = two_models
    matrix = BuildMatrix(
        [str(big), str(small)],
        variants=[{"optimization_level": 0}, {"optimization_level": 0}],
        history=False,
    ).start()
    assert matrix.wait(300)
    assert [b.status for b in matrix.builds] == ["succeeded"] * 4, [b.status_detail for b in matrix.builds]
    said = comparison_paragraphs(matrix.cells)
    text = "\n".join(said)
    assert "Builds of the same model with the same options (" in said[-1], text
    assert "differed by up to" in said[-1] and "run-to-run variation" in said[-1], text
    assert not re.search(r"\(-\d|\s-\d", text), text  # a change is written with "−" (U+2212), as elsewhere
    for line in said[1:-1]:  # each build against its own model's: the same layers, never big's 9 against 5
        assert "baseline;" in line or "layers 9 (same)" in line or "layers 5 (same)" in line, line
    assert sum("baseline;" in line for line in said) == 2, text  # one per model
    head = said[0]
    assert head.startswith("Comparison, each build against a build of its own model: #"), text
    assert " big.onnx [" in head and " small.onnx [" in head, text


def test_nothing_to_compare_is_said_when_no_build_succeeded(
    two_models: tuple[Path, Path], long_model_bytes: bytes, tmp_path: Path
) -> None:
    """Item 5: with every build cancelled or stopped before it built, the comparison picked a cancelled build as
    its "baseline" and said the never-started ones had "no differences"; it says there is nothing to compare."""
    from trt_widget import BuildMatrix
    from trt_widget.matrix._table import comparison_paragraphs

    long = tmp_path / "long.onnx"
    long.write_bytes(long_model_bytes)
    matrix = BuildMatrix([str(long), *map(str, two_models)], history=False).start()
    matrix.stop()  # the first is cancelled (a build of seconds), the others never start
    assert matrix.wait(120)
    assert all(b.status == "cancelled" for b in matrix.builds), [b.status for b in matrix.builds]
    assert comparison_paragraphs(matrix.cells) == ["Nothing to compare: no build succeeded."]


def test_a_cancelled_build_has_one_time_in_its_line_and_the_comparison(
    two_models: tuple[Path, Path], long_model_bytes: bytes, tmp_path: Path
) -> None:
    """Item 5: the status line said "cancelled after 6.62 s" and the comparison "cancelled after 6.54 s" (its
    time without the builder's start-up) for the same build: both say the one elapsed time."""
    from trt_widget import BuildMatrix
    from trt_widget.matrix._cli import MatrixView
    from trt_widget.matrix._table import comparison_paragraphs

    long = tmp_path / "long.onnx"
    long.write_bytes(long_model_bytes)
    _, small = two_models
    matrix = BuildMatrix([str(long), str(small)], variants=[{}, {"optimization_level": 0}], history=False)
    matrix.start()  # one at a time: long.onnx first, on a fresh builder process (it pays the start-up)
    first = matrix.builds[0]
    deadline = time.monotonic() + 120
    while not (first.status == "running" and first.started_building) and time.monotonic() < deadline:
        time.sleep(0.05)
    first.stop()
    assert matrix.wait(300)
    statuses = [b.status for b in matrix.builds]
    assert statuses[0] == "cancelled" and statuses[2:] == ["succeeded", "succeeded"], statuses
    view = MatrixView(matrix, io.StringIO(), plain=True)
    outcome = view._outcome(matrix.cells[0])
    line = next(p for p in comparison_paragraphs(matrix.cells) if p.startswith("#0 "))
    said = re.search(r"cancelled after ([<\d.]+ (?:ms|s)|\d+ min [\d.]+ s)", outcome)
    assert said is not None, outcome
    assert f"cancelled after {said.group(1)}" in line.replace("\xa0", " "), (outcome, line)


def test_the_matrix_table_at_60_columns_tells_the_variants_apart(two_models: tuple[Path, Path]) -> None:
    """Item 4: at 60 columns the variant column was "optimi…" in every row; it shows what differs ("opt=3")."""
    from rich.console import Console

    from trt_widget import BuildMatrix
    from trt_widget.matrix._cli import MatrixView

    big, _ = two_models
    bad = big.with_name("bad.onnx")
    bad.write_text("not a model")
    matrix = BuildMatrix(
        [str(big), str(bad)], variants=[{"optimization_level": 0}, {"optimization_level": 3}], history=False
    ).start()
    assert matrix.wait(300)
    out = io.StringIO()
    Console(file=out, width=60).print(MatrixView(matrix, io.StringIO())._table())
    rows = out.getvalue().splitlines()[1:]
    assert all(len(line) <= 60 for line in rows), out.getvalue()
    for cell in matrix.cells:
        level = cell.options.get("optimization_level")
        assert re.match(rf"\s*{cell.id} .* opt={level} ", rows[cell.id]), out.getvalue()
