"""The benchmarks cannot rot: ``bench/run_all.py --quick`` runs every script with small sizes, and a script that
crashes makes it exit 1 (the figures themselves never fail it: machines are noisy)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


# Under coverage (scripts/test.sh) the benchmark scripts run untraced: they time what they run (tracing slows it
# and skews their figures), and tracing them cost the suite's longest test a third more CPU (100 s against 73 s).
# The code they run is measured through the tests written for it.
UNTRACED = ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")


def _run_all(bench: Path, out: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in UNTRACED}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, str(bench / "run_all.py"), "--quick", "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_every_benchmark_script_runs_and_prints_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    done = _run_all(BENCH, out, "--jobs", "2")  # side by side: the smoke run checks that scripts run, not figures
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    results = json.loads(out.read_text())
    sys.path.insert(0, str(BENCH))
    try:
        from run_all import SCRIPTS
    finally:
        sys.path.remove(str(BENCH))
    assert sorted(results["runs"]) == sorted(key for key, _, _ in SCRIPTS)
    assert [key for key, run in results["runs"].items() if run["error"]] == []
    assert results["figures"] and all(f["value"] is not None for f in results["figures"].values())
    assert out.with_suffix(".md").read_text().count("\n| P") == len(results["figures"])


def test_a_crashing_script_fails_the_run(tmp_path: Path) -> None:
    copy = tmp_path / "bench"
    shutil.copytree(BENCH, copy, ignore=shutil.ignore_patterns("results*", "__pycache__"))
    intact = _run_all(copy, tmp_path / "intact.json", "--only", "p6", timeout=300)
    assert intact.returncode == 0, intact.stdout[-3000:]

    script = copy / "p6_memory.py"
    text = script.read_text()
    assert "def main() -> None:\n" in text
    crash = "    raise AttributeError(\"'Build' object has no attribute 'monitor' (broken on purpose)\")\n"
    script.write_text(text.replace("def main() -> None:\n", "def main() -> None:\n" + crash))
    broken = _run_all(copy, tmp_path / "broken.json", "--only", "p6", timeout=300)
    assert broken.returncode == 1, broken.stdout[-3000:]
    assert "broken on purpose" in broken.stdout
    assert json.loads((tmp_path / "broken.json").read_text())["runs"]["p6"]["error"]
