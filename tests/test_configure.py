"""``configure=``: a function called as configure(builder, network, config) just before the build, where the build
runs (a builder process by default: sent there with cloudpickle); its exception fails the build with its traceback."""

from __future__ import annotations

import types
from typing import Any

import pytest

from trt_widget import Build, models


def _notebook_scope(source: str) -> dict[str, Any]:
    """Run ``source`` as a notebook cell runs: in a ``__main__``-like namespace no worker can import."""
    module = types.ModuleType("__main__")
    namespace = module.__dict__
    exec(compile(source, "<ipython-input-3>", "exec"), namespace)
    return namespace


def test_a_lambda_from_a_notebook_cell_configures_the_build_in_the_builder_process() -> None:
    cell = _notebook_scope(
        "level = 0\nconfigure = lambda builder, network, config: setattr(config, 'builder_optimization_level', level)\n"
    )
    build = Build(models.deep_residual(3), configure=cell["configure"], verbose=True, history=False).start()
    assert build.wait(180) == "succeeded", build.status_detail
    assert build.child_pid is not None  # it ran in a builder process
    lines = [r["message"] for r in build.logs]
    assert any("at optimization level 0" in m for m in lines)  # TensorRT used what the lambda set


def test_configure_gets_the_builder_network_and_config_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """Called after trt_widget's own settings, so it can change them; in thread isolation, in this process."""
    calls: list[tuple[str, int, int]] = []

    def configure(builder: Any, network: Any, config: Any) -> None:
        calls.append((type(builder).__name__, network.num_inputs, config.builder_optimization_level))
        config.builder_optimization_level = 1

    build = Build(
        models.deep_residual(3), isolation="thread", history=False, optimization_level=4, configure=configure
    ).start()
    assert build.wait(180) == "succeeded", build.status_detail
    assert calls == [("Builder", 1, 4)]


def test_an_exception_in_configure_fails_the_build_with_its_traceback() -> None:
    cell = _notebook_scope("def configure(builder, network, config):\n    raise RuntimeError('no such tactic')\n")
    build = Build(models.deep_residual(3), configure=cell["configure"], history=False).start()
    assert build.wait(180) == "failed"
    assert build.status_detail.startswith("configure= configure raised RuntimeError('no such tactic')")
    text = str(build.error)  # the function's own frame (cloudpickle renames the cell's file "<dynamic-code>")
    assert "Traceback (most recent call last)" in text and ", line 2, in configure" in text
    assert text.rstrip().endswith("RuntimeError: no such tactic")


def test_a_configure_that_cannot_reach_the_builder_process_is_refused_at_construction() -> None:
    import threading

    lock = threading.Lock()
    with pytest.raises(TypeError, match=r"configure= .* cannot be sent to the builder process"):
        Build(models.deep_residual(3), configure=lambda b, n, c: lock.acquire(), history=False)
