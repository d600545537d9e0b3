"""A user's script in a subprocess, as the tests of ``trt-widget run``, a process's ``watch_call``, a killed
build's leftovers and the working directory start one: a script that builds with TensorRT itself, and a TMPDIR of
the test's own (what a run leaves behind shows there). A plain module, as tests/attacks.py says why."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from fixture_types import WaitUntil

# the stress script of the same scenario has it (the repository root, where conftest.py is, is on sys.path)
from scripts.stress_grandchild import alive as alive

# defines build(path): the serialized engine of the ONNX model at ``path``, built with TensorRT for RTX alone
BUILD_FUNCTION = textwrap.dedent(
    """
    import tensorrt_rtx_bindings as trt


    def build(path):
        logger = trt.Logger(trt.Logger.ERROR)
        builder = trt.Builder(logger)
        network = builder.create_network(0)
        parser = trt.OnnxParser(network, logger)
        assert parser.parse(open(path, "rb").read())
        return builder.build_serialized_network(network, builder.create_builder_config())
    """
)

# builds the ONNX model named by its first argument with TensorRT for RTX, no trt_widget in sight
DIRECT_BUILD = BUILD_FUNCTION + textwrap.dedent(
    """
    import sys

    print("ENGINE", build(sys.argv[1]).nbytes)
    """
)


def tensorrt_builds() -> Callable[[list[bytes]], list[int]]:
    """A user's function for ``watch_call(fn, isolation="process")``: it builds each ONNX model it is given with
    TensorRT (``trt_widget.trt``) and returns the engines' sizes. Made in here, local: cloudpickle sends it by
    value (the function's process cannot import this module)."""

    def fn(datas: list[bytes]) -> list[int]:
        import trt_widget

        trt = trt_widget.trt
        sizes = []
        for data in datas:
            logger = trt.Logger(trt.Logger.ERROR)
            builder = trt.Builder(logger)
            network = builder.create_network(0)
            parser = trt.OnnxParser(network, logger)
            assert parser.parse(data)
            sizes.append(builder.build_serialized_network(network, builder.create_builder_config()).nbytes)
        return sizes

    return fn


# First lines of a child script that starts Ray: Ray's own processes (its node's Python agents, its workers) start
# untraced under coverage, as the ray_session fixture starts them (tests/conftest.py). The child itself stays traced
# (coverage started with it); what Ray's processes run is Ray's code, and tracing them cost a Ray start's CPU again.
RAY_UNTRACED = (
    "import os\nfor _name in ('COVERAGE_PROCESS_CONFIG', 'COVERAGE_PROCESS_START'):\n    os.environ.pop(_name, None)\n"
)
# ``python -c CLI_MAIN args...`` is ``python -m trt_widget args...`` (what ``trt-widget`` runs) after RAY_UNTRACED
CLI_MAIN = (
    RAY_UNTRACED
    + "import runpy, sys\nsys.argv[0] = 'trt-widget'\n"
    + "runpy.run_module('trt_widget', run_name='__main__', alter_sys=True)\n"
)


def default_sigint() -> None:
    """``preexec_fn`` for a child the test sends a Ctrl-C: it starts with SIGINT's default even when the suite runs
    with SIGINT ignored (``cmd &`` in a script, nohup), which the child would otherwise inherit, and keep."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def own_tmpdir(tmpdir: Path) -> dict[str, str]:
    """Make ``tmpdir``; the environment of a subprocess whose temporary files go there, with no build history."""
    tmpdir.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmpdir), "TRT_WIDGET_HISTORY": "off"}


def script_and_model(folder: Path, script: str, model: bytes) -> tuple[Path, Path]:
    """``folder/script.py`` holding ``script`` and ``folder/model.onnx`` holding ``model``: the script's path and
    the model's, its argument."""
    (folder / "script.py").write_text(script)
    (folder / "model.onnx").write_bytes(model)
    return folder / "script.py", folder / "model.onnx"


def sigkill_ends_the_grandchild(argv: list[str], pid_file: Path, env: dict[str, str], wait_until: WaitUntil) -> None:
    """Start ``argv``; once the grandchild it starts has written its pid to ``pid_file``, SIGKILL ``argv``'s process
    and wait for the grandchild to end too (killed at the end whatever happened)."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(pid_file.exists, timeout=120, what="the grandchild to start")
        grandchild = int(pid_file.read_text())
        assert alive(grandchild)
        proc.kill()
        proc.wait(30)
        wait_until(lambda: not alive(grandchild), timeout=30, what="the grandchild to end")
    finally:
        if pid_file.exists() and alive(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def run_with_tmpdir(tmpdir: Path, ran: Path) -> subprocess.CompletedProcess[str]:
    """``trt-widget run`` of a command that makes the file ``ran``, with ``TMPDIR`` set to ``tmpdir`` (history off):
    for the temp-folder checks, which must refuse before the command runs."""
    return subprocess.run(
        [sys.executable, "-m", "trt_widget", "run", "--", sys.executable, "-c", f"open({str(ran)!r}, 'w')"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmpdir), "TRT_WIDGET_HISTORY": "off"},
    )
