"""The performance page is generated from the results file, never hand-copied: docs/performance.md must be
exactly what bench/report.py renders from the committed bench/results.json."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


@pytest.fixture(scope="module")
def report() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        import report

        yield report
    finally:
        sys.path.remove(str(BENCH))


def test_the_docs_page_is_what_the_results_file_renders(report: ModuleType) -> None:
    results = json.loads((BENCH / "results.json").read_text())
    page = (ROOT / "docs" / "performance.md").read_text()
    assert page == report.render(results), "regenerate it: python bench/report.py > docs/performance.md"
    assert results["commit"] in page and results["started"] in page


def test_the_command_prints_the_page(report: ModuleType) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "report.py")], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == report.render(json.loads((BENCH / "results.json").read_text()))


def test_every_figure_its_commit_date_load_and_crashes_are_shown(report: ModuleType) -> None:
    results = {
        "started": "2031-05-06T07:08:09+00:00",
        "commit": "abc1234",
        "dirty": True,
        "quick": False,
        "command": "python bench/run_all.py",
        "machine": {"cpus": 2, "python": "3.11.7"},
        "load_avg_start": [1.5, 1.0, 0.5],
        "load_avg_end": [2.5, 2.0, 1.5],
        "runs": {"p1": {"script": "p1_build_overhead.py", "error": None}, "p7": {"script": "p7.py", "error": "exit 1"}},
        "figures": {
            "P1-small": {"value": 1.2345, "unit": "ratio", "target": "<= 1.05", "pass": False, "what": "a | b"},
            "P1": {"value": 0.98, "unit": "ratio", "target": "<= 1.01", "pass": True, "what": "widget ÷ bare"},
            "P6": {"value": 12345, "unit": "bytes", "target": "< 1 MB", "pass": True, "what": "growth"},
            "P9-rate": {"value": 28000, "unit": "events/s", "target": "no target", "pass": None, "what": "rate"},
        },
    }
    page = report.render(results)
    rows = [line for line in page.splitlines() if line.startswith("| P")]
    assert [row.split(" | ")[0] for row in rows] == ["| P1", "| P1-small", "| P6", "| P9-rate"]  # the set order
    assert "| P1-small | a / b | 1.234 | <= 1.05 | FAIL |" in rows
    assert "| P6 | growth | 12,345 B | < 1 MB | PASS |" in rows
    assert "| P9-rate | rate | 28000 events/s | no target | info |" in rows
    assert "commit abc1234 (with uncommitted changes)" in page and "2031-05-06T07:08:09+00:00" in page
    assert "[1.5, 1.0, 0.5] at the start" in page and "[2.5, 2.0, 1.5] at the end" in page
    assert "missed: P1-small." in page
    assert "- p7 (p7.py): exit 1" in page
