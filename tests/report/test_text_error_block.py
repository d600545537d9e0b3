"""Twenty-second adversarial re-run (issue 35, W22-6): a build's error (a replayed recording's ``build_end.error``:
outside text) holding a newline printed its second line as a row of ``report.to_text``, as a phase row reads
("  name   1.00 s"). The error block stays multi-line (tracebacks), each line marked so none passes for a row."""

from __future__ import annotations

from trt_widget.report import to_text
from trt_widget.report._inline import ERROR_MARK, Facts

FORGED = "  Forged error row                 1.00 s"


def _failed(error: str) -> Facts:
    return {
        "status": "failed", "status_word": "Failed", "elapsed_s": 2.0, "engine": None, "final": True,
        "label": "model.onnx", "detail": "", "problems": [], "rows": [], "error": error, "nodes": [],
        "output": None, "engine_report": None,
    }  # fmt: skip


def test_no_line_of_an_error_passes_for_a_row() -> None:
    text = to_text(_failed(f"boom\n{FORGED}\r\n\x1b[31mred\u202eX\n"))
    lines = text.split("\n")
    block = lines[lines.index("") + 1 :]
    assert block == [f"{ERROR_MARK}boom", f"{ERROR_MARK}{FORGED}", f"{ERROR_MARK}\\x1b[31mred\\u202eX"], text
    assert not any(line.startswith(" ") and "Forged" in line for line in lines), text


def test_a_detail_with_a_newline_is_one_line() -> None:
    facts = _failed("")
    facts["detail"] = f"stopped\n{FORGED}"
    lines = to_text(facts).split("\n")
    assert lines[1] == "  stopped\\x0a" + FORGED, lines
    assert len(lines) == 2, lines
