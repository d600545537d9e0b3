"""A Ray that cannot start fails the Ray tests only, with the reason, and leaves no test beside them failing."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def test_a_ray_that_cannot_start_fails_only_the_ray_tests(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    report = tmp_path / "report.xml"
    # untraced under coverage: the suite runs these tests itself, so tracing them again measured nothing new
    env = {k: v for k, v in os.environ.items() if k not in ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")}
    env["RAY_TMPDIR"] = str(tmp_path / "no-such-directory")  # Ray's start fails at once
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={report}",
         "tests/matrix/test_matrix_ray.py", "tests/ray/test_relay.py", "tests/test_phases.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        problem = case.find("error") if case.find("error") is not None else case.find("failure")
        outcome = "skipped" if case.find("skipped") is not None else "passed"
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = (
            outcome if problem is None else problem.get("message", "failed")
        )
    ray_tests = {name: outcome for name, outcome in outcomes.items() if "test_matrix_ray" in name}
    others = {name: outcome for name, outcome in outcomes.items() if "test_matrix_ray" not in name}
    assert ray_tests and others
    assert all("Ray did not start" in outcome for outcome in ray_tests.values()), ray_tests
    assert set(others.values()) == {"passed"}, others
