"""Backend selection: TRT_WIDGET_BACKEND, a clear error when nothing is installed, and a lazy package import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import trt_widget
from trt_widget import _backend
from trt_widget._backend import INSTALL_HINT, BackendUnavailable, backend_info, select_backend

# Run first in the child: make every tensorrt* module unimportable, as on a machine with neither installed.
BLOCK_TENSORRT = textwrap.dedent("""
    import sys

    class BlockTensorRT:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0].startswith("tensorrt"):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
            return None

    sys.meta_path.insert(0, BlockTensorRT())
""")


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "TRT_WIDGET_BACKEND"}
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environment)


@pytest.fixture
def fresh_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the cached choice for this test (restored afterwards)."""
    monkeypatch.setattr(_backend, "_selected", None)
    monkeypatch.delenv("TRT_WIDGET_BACKEND", raising=False)


def test_the_installed_backend_is_selected_and_described() -> None:
    kind, module = select_backend()
    assert kind in ("tensorrt", "rtx")
    assert hasattr(module, "Builder") and hasattr(module, "IProgressMonitor")
    info = backend_info()
    assert info["backend"] == kind and info["module"] == module.__name__ and info["version"] != "?"
    assert trt_widget.trt is module
    assert select_backend() is select_backend()  # chosen once


def test_bogus_backend_name_is_a_clear_error(fresh_selection: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRT_WIDGET_BACKEND", "bogus")
    with pytest.raises(BackendUnavailable) as raised:
        select_backend()
    assert "TRT_WIDGET_BACKEND='bogus' is not a known backend; use 'tensorrt' or 'rtx'" in str(raised.value)


@pytest.mark.parametrize("value", ["rtx", " RTX ", "tensorrt_rtx", "tensorrt-rtx"])
def test_rtx_can_be_requested_by_its_names(fresh_selection: None, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    try:
        import tensorrt_rtx_bindings  # noqa: F401
    except ImportError:
        pytest.skip("TensorRT for RTX is not installed")
    monkeypatch.setenv("TRT_WIDGET_BACKEND", value)
    assert select_backend()[0] == "rtx"


def test_requesting_a_missing_backend_names_it_and_the_install_commands(
    fresh_selection: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_backend, "_try_import", lambda names: None)
    monkeypatch.setenv("TRT_WIDGET_BACKEND", "tensorrt")
    with pytest.raises(BackendUnavailable) as raised:
        select_backend()
    assert "TRT_WIDGET_BACKEND='tensorrt' but it cannot be imported" in str(raised.value)
    assert INSTALL_HINT in str(raised.value)


def test_neither_backend_importable_names_both_install_commands() -> None:
    result = run_python(
        BLOCK_TENSORRT
        + textwrap.dedent("""
        import trt_widget
        try:
            trt_widget.select_backend()
        except trt_widget.BackendUnavailable as exc:
            print(exc)
            print("is ImportError:", isinstance(exc, ImportError))
        else:
            print("no error")
    """)
    )
    assert result.returncode == 0, result.stderr
    assert "pip install tensorrt-rtx-cu13-libs tensorrt-rtx-cu13-bindings" in result.stdout
    assert "pip install tensorrt-cu13 " in result.stdout
    assert "is ImportError: True" in result.stdout


def test_import_works_without_a_backend_and_names_are_lazy() -> None:
    result = run_python(
        BLOCK_TENSORRT
        + textwrap.dedent("""
        import json, sys
        import trt_widget
        from trt_widget import PhaseModel, BuildCancelled, BuildError

        model = PhaseModel()
        model.phase_start("a", None, 1)
        trt_widget.BuildOptions.from_kwargs(workspace="1GiB")  # options need no backend either
        report = {"version": trt_widget.__version__, "phases": len(model),
                  "tensorrt_loaded": sorted(m for m in sys.modules if m.startswith("tensorrt"))}
        for name in ("Build", "BuildMonitor", "trt"):
            try:
                getattr(trt_widget, name)
                report[name] = "no error"
            except trt_widget.BackendUnavailable as exc:
                report[name] = str(exc)
        print(json.dumps(report))
    """)
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["phases"] == 1 and report["tensorrt_loaded"] == []
    for name in ("Build", "BuildMonitor", "trt"):
        assert "pip install tensorrt-rtx-cu13-libs tensorrt-rtx-cu13-bindings" in report[name], (name, report[name])
        assert "pip install tensorrt-cu13 " in report[name]


def test_a_broken_tensorrt_install_falls_back_to_rtx_and_says_why_when_requested(tmp_path: Any) -> None:
    """``import tensorrt`` failing with OSError (missing shared libraries) counts as not importable."""
    try:
        import tensorrt_rtx_bindings  # noqa: F401
    except ImportError:
        pytest.skip("TensorRT for RTX is not installed")
    broken = tmp_path / "tensorrt"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise OSError('libnvinfer.so.10: cannot open shared object file')\n")
    code = (
        "import trt_widget\ntry:\n    print(trt_widget.select_backend()[0])\nexcept Exception as exc:\n    print(exc)"
    )
    chosen = run_python(code, PYTHONPATH=str(tmp_path))
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.strip() == "rtx"
    requested = run_python(code, PYTHONPATH=str(tmp_path), TRT_WIDGET_BACKEND="tensorrt")
    assert "TRT_WIDGET_BACKEND='tensorrt' but it cannot be imported" in requested.stdout
    assert "OSError: libnvinfer.so.10: cannot open shared object file" in requested.stdout


def test_bogus_backend_from_the_environment_in_a_fresh_process() -> None:
    result = run_python("import trt_widget\nfrom trt_widget import Build", TRT_WIDGET_BACKEND="bogus")
    assert result.returncode != 0
    assert "BackendUnavailable" in result.stderr and "'bogus' is not a known backend" in result.stderr


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Bulid'"):
        trt_widget.Bulid  # noqa: B018


# A synthetic stand-in for NVIDIA's module (its wheels cannot be installed here): it imports, as `tensorrt` does on
# a machine without a GPU, and its Builder fails the way pybind11 reports a nullptr from the C++ factory.
FAKE_TENSORRT = textwrap.dedent("""
    __version__ = "10.12.0.36"
    class IProgressMonitor:
        def __init__(self): pass
    class ILogger:
        def __init__(self): pass
    class BuilderFlag:
        FP16 = 0
    class Builder:
        def __init__(self, logger):
            raise TypeError("pybind11::init(): factory function returned nullptr")
""")


def _fake_tensorrt(tmp_path: Any, name: str = "tensorrt") -> str:
    (tmp_path / f"{name}.py").write_text(FAKE_TENSORRT)
    return str(tmp_path)


def test_tensorrt_without_a_gpu_falls_back_to_rtx(tmp_path: Any) -> None:
    code = "import trt_widget; print(trt_widget.select_backend()[0])"
    # CUDA_VISIBLE_DEVICES hides any real GPU: otherwise the fake would be chosen on a GPU machine
    done = run_python(code, PYTHONPATH=_fake_tensorrt(tmp_path), CUDA_VISIBLE_DEVICES="-1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "rtx"  # no CUDA GPU visible here: NVIDIA's module could not build


@pytest.mark.parametrize("name", ["tensorrt", "tensorrt_bindings"])
def test_a_requested_tensorrt_without_a_gpu_fails_the_build_clearly(tmp_path: Any, name: str) -> None:
    code = textwrap.dedent("""
        from trt_widget import Build, models
        b = Build(models.deep_residual(2), history=False, isolation="thread").start()
        print(b.wait(60)); print(b.error)
    """)
    fake = _fake_tensorrt(tmp_path, name)
    done = run_python(code, PYTHONPATH=fake, TRT_WIDGET_BACKEND="tensorrt", CUDA_VISIBLE_DEVICES="-1")
    assert done.returncode == 0, done.stderr
    status, error = done.stdout.strip().splitlines()[:2]
    assert status == "failed"
    assert "NVIDIA TensorRT 10.12.0.36 could not create a builder" in error and "no CUDA GPU" in error
    assert "TRT_WIDGET_BACKEND=rtx" in error


def test_capabilities_describe_the_installed_backend() -> None:
    caps = _backend.capabilities()
    kind, module = select_backend()
    assert caps["weak_typing"] == hasattr(module.BuilderFlag, "FP16")
    assert str(caps["label"]).startswith("TensorRT for RTX" if kind == "rtx" else "NVIDIA TensorRT")
    assert _backend._older("10.12.0.36", (10, 13)) and not _backend._older("10.13.0", (10, 13))
    assert not _backend._older("11.4.0", (10, 13))


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, "rtx"), ({"TRT_WIDGET_BACKEND": "tensorrt"}, "tensorrt"), ({"TRT_WIDGET_BACKEND": "tensorrt-rtx"}, "rtx")],
)
def test_the_likely_backend_is_known_without_importing_tensorrt(env: dict[str, str], expected: str) -> None:
    """What a builder process started ahead of the build imports: the choice select_backend() makes here
    (TensorRT for RTX, no NVIDIA TensorRT) or the one asked for, found without importing either."""
    code = (
        "import sys\n"
        "from trt_widget._backend import likely_backend\n"
        "print(likely_backend(), sorted(m for m in sys.modules if m.startswith('tensorrt')))\n"
    )
    done = run_python(code, **env)
    assert done.stdout.split() == [expected, "[]"], done.stderr
    if not env:
        assert select_backend()[0] == expected
