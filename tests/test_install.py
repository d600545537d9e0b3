"""The install the README describes, done as a user would: build a wheel from this checkout, install it with its
``[rtx]`` extra into an empty virtual environment, and build a model with that environment's ``trt-widget``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from trt_widget.models import deep_residual, to_bytes

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 600


def _run(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    # nothing of this checkout or the test's own environment on the child's path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["TRT_WIDGET_HISTORY"] = "off"
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_a_built_wheel_installs_into_an_empty_venv_and_builds_a_model(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, ROOT], cwd=tmp_path)
    (wheel,) = dist.glob("trt_widget-*.whl")

    env_dir = tmp_path / "venv"
    # an empty venv, without even pip: this environment's pip (>= 22.3 for --python; scripts/test.sh upgrades it)
    # installs into it and resolves every dependency from the index. Seeding the venv with its own pip cost 6.5 CPU
    # s and its bundled older pip resolved 4 s slower: pip's work, not this package's. With no setuptools in the
    # venv, a dependency the wheel forgets to declare cannot be there by luck.
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    # --no-compile: Python compiles what it imports when it imports it (byte-compiling every file of every
    # dependency at install took a quarter of this test's CPU, and is pip's, not this package's)
    _run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-compile", f"{wheel}[rtx]"], cwd=tmp_path)

    # the package and its front-end bundle come from the venv, not from this checkout
    where = _run(
        [
            py,
            "-c",
            "import trt_widget, pathlib; p = pathlib.Path(trt_widget.__file__).parent; "
            "print(p); print((p / 'static' / 'widget.js').stat().st_size)",
        ],
        cwd=tmp_path,
    ).stdout.split()
    assert Path(where[0]).is_relative_to(env_dir)
    assert int(where[1]) > 1000

    model = tmp_path / "small.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    out = _run([env_dir / "bin" / "trt-widget", "build", model, "-o", "small.engine", "--plain"], cwd=tmp_path)
    assert "succeeded" in out.stdout.lower()
    engine = tmp_path / "small.engine"
    assert engine.stat().st_size > 1000


def test_the_nvidia_extras_bring_nvml_and_the_others_do_not() -> None:
    """trt_widget reads GPU memory through ``import pynvml`` (the nvidia-ml-py distribution): the NVIDIA extras
    install it; TensorRT for RTX (no NVML use on a CPU) and the dev tools do not."""
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

    def has_nvml(extra: str) -> bool:
        return any(re.match(r"nvidia-ml-py\b(?!3)", requirement) for requirement in extras[extra])

    assert has_nvml("tensorrt") and has_nvml("tensorrt-cu12")
    assert not has_nvml("rtx") and not has_nvml("dev")
    assert "import pynvml" in (ROOT / "trt_widget" / "_resources.py").read_text()
