"""Thirteenth adversarial re-run (issue 35, D1): ``trt-widget demo --blocks N`` has a lower bound only. A large N
(a typo: 6000000 for 600) builds the generated model in memory until it runs out: the OOM killer without a limit;
under an address-space limit a SystemError traceback (2 GB) or SIGSEGV (3 GB) — never the clear usage error that
``--blocks 0`` gets. Past about 900,000 blocks the model cannot be an ONNX file at all (protobuf's 2 GB), so such
an N is bad input, as ``trtexec --profile=99999999`` was (issue 35, item 5)."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget import models

LIMIT = 2 << 30  # the child's address space: the defect ends here, not in the machine's OOM killer


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def test_demo_refuses_a_block_count_no_model_can_hold(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "demo", "--plain", "--blocks", "1000000000"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, preexec_fn=_capped,
    )  # fmt: skip
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "--blocks" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]


def test_the_generator_refuses_what_no_onnx_file_can_hold() -> None:
    """The Python side says the same before it spends memory: ``deep_residual(10**9)`` once ran out of it."""
    with pytest.raises(ValueError, match="blocks must be a whole number from 0 to 20,000"):
        models.deep_residual(10**9)
    with pytest.raises(ValueError, match="more than an ONNX file can"):
        models.deep_residual(1000, channels=2000)
    assert len(models.deep_residual(models.MAX_BLOCKS // 1000).graph.node) == 3 * (models.MAX_BLOCKS // 1000)
