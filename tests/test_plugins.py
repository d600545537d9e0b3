"""TensorRT plugins: the standard ones registered once per builder process, ``plugins=[paths]`` loaded where the
build runs. The plugin library is real: tests/native/tiny_plugin.cpp, compiled here, one IPluginCreatorV3One that
TensorRT for RTX's registry accepts (its constructor notes each loading process's id next to the library)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trt_widget import Build, _engine, models, trt

Lib = Callable[[str, str], Path]


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return models.to_bytes(models.deep_residual(1))


def _plugin_copy(native_lib: Lib, tmp_path: Path) -> Path:
    """A fresh copy of the tiny plugin library (a new path: its loads are counted from zero)."""
    path = tmp_path / "libtrt_widget_tiny.so"
    shutil.copy(native_lib("tiny_plugin.cpp", "libtiny_plugin.so"), path)
    return path


def _pids(lib: Path) -> list[int]:
    marks = Path(f"{lib}.pids")
    return [int(x) for x in marks.read_text().split()] if marks.exists() else []


def test_a_missing_plugin_library_is_refused_at_creation(tmp_path: Path, model_bytes: bytes) -> None:
    with pytest.raises(FileNotFoundError, match=r"plugins: no plugin library at .*nope\.so"):
        Build(model_bytes, plugins=[tmp_path / "nope.so"], history=False)
    with pytest.raises(TypeError, match="plugins must be a list of plugin library paths"):
        Build(model_bytes, plugins=str(tmp_path / "x.so"), history=False)
    with pytest.raises(ValueError, match="is not a file"):
        Build(model_bytes, plugins=[tmp_path], history=False)


def test_plugins_load_in_the_builder_process_once(native_lib: Lib, tmp_path: Path, model_bytes: bytes) -> None:
    lib = _plugin_copy(native_lib, tmp_path)
    first = Build(model_bytes, plugins=[lib], history=False).start()
    assert first.wait(180) == "succeeded", first.error
    assert _pids(lib) == [first.child_pid] and first.child_pid != os.getpid()  # the worker loaded it, not we
    said = [r["message"] for r in first.logs if r["message"].startswith("plugins: ")]
    assert said == [f"plugins: TensorRT's standard plugins registered; loaded {lib} (builder pid {first.child_pid})"]
    assert first.options.summary()["plugins"] == (str(lib),)  # a plugin build is not compared with a plain one
    second = Build(model_bytes, plugins=[lib], history=False).start()  # the warm worker: TensorRT would refuse a
    assert second.wait(180) == "succeeded", second.error  # second load_library of the same creators
    assert _pids(lib) == [first.child_pid] or second.child_pid != first.child_pid


def test_a_library_that_is_not_a_plugin_library_fails_the_build_with_tensorrts_reason(
    native_lib: Lib, tmp_path: Path, model_bytes: bytes
) -> None:
    not_plugins = tmp_path / "libnot_plugins.so"
    shutil.copy(native_lib("fake_libcuda.c", "libfake.so"), not_plugins)
    build = Build(model_bytes, plugins=[not_plugins], history=False).start()
    assert build.wait(180) == "failed"
    assert f"TensorRT could not load the plugin library {not_plugins}" in str(build.error)
    assert "getCreators" in str(build.error)  # TensorRT's own reason: the library exports no plugin creators


def test_standard_plugins_are_registered_once_per_process(
    native_lib: Lib, tmp_path: Path, model_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    real = trt.init_libnvinfer_plugins

    def counting(logger: Any, namespace: str) -> bool:
        calls.append(namespace)
        return bool(real(logger, namespace))

    monkeypatch.setattr(trt, "init_libnvinfer_plugins", counting)
    monkeypatch.setattr(_engine, "_standard_plugins", None)
    lib = _plugin_copy(native_lib, tmp_path)
    for _ in range(2):
        build = Build(model_bytes, plugins=[lib], isolation="thread", history=False).start()
        assert build.wait(180) == "succeeded", build.error
    assert calls == [""]  # NVIDIA's samples: init_libnvinfer_plugins(logger, "")
    assert _pids(lib) == [os.getpid()]  # a thread build loads it here
    assert trt.get_plugin_registry().get_creator("TrtWidgetTiny", "1", "") is not None
