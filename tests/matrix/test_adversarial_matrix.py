"""Attacks on the matrix's terminal views: hostile labels are shown escaped, never as markup or controls."""

from __future__ import annotations

from attacks import EVIL, SMALL


def test_the_matrix_table_and_lines_show_labels_escaped() -> None:
    import io

    from rich.console import Console

    from trt_widget.matrix import BuildMatrix
    from trt_widget.matrix._cli import MatrixView

    matrix = BuildMatrix({f"[bold]m[/] {EVIL}": SMALL}, variants={f"v {EVIL}": {}})
    lines = io.StringIO()
    view = MatrixView(matrix, lines, plain=True)
    view.update()
    drawn = io.StringIO()
    Console(file=drawn, force_terminal=True, width=300).print(view._table())
    for out in (lines.getvalue(), drawn.getvalue()):
        assert "PWNED-TITLE" in out
        for raw in ("\x1b]", "\x1b[2J", "\x07", "\x9b", "\u202e", "\r"):
            assert raw not in out, (raw, out)
    assert "[bold]m[/]" in drawn.getvalue()
