"""Bad input: each gives a clear message naming the problem, the build ends "failed", and the next one works."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

import trt_widget
from trt_widget import Build, BuildCancelled, BuildError
from trt_widget._build import FINAL
from trt_widget._phases import RUNNING
from trt_widget.models import deep_residual, to_bytes

DEADLINE = 180.0
DYNAMIC_PROFILE = ((1, 8, 8, 8), (2, 8, 8, 8), (4, 8, 8, 8))


def run(model: Any, **options: Any) -> Build:
    build = Build(model, **options).start()
    assert build.wait(DEADLINE) in FINAL, f"build still {build.status} after {DEADLINE} s"
    return build


def next_build_succeeds() -> None:
    build = run(deep_residual(2))
    assert build.status == "succeeded", build.status_detail
    assert build.engine


def one_node(node: Any, input_shape: list[Any] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node],
        "one_node",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape or [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def no_outputs(network: Any) -> None:
    trt = trt_widget.trt
    x = network.add_input("x", trt.float32, (1, 4))
    network.add_activation(x, trt.ActivationType.RELU)  # never marked as an output


def raises(network: Any) -> None:
    raise ValueError("boom in the user's network code")


def exits(network: Any) -> None:
    sys.exit(3)


def make_cases(tmp: Path) -> dict[str, tuple[Any, dict[str, Any], list[str]]]:
    """name -> (model, options, substrings the error message must contain)."""
    corrupt_file = tmp / "corrupt.onnx"
    if tmp.is_dir():
        corrupt_file.write_bytes(b"\x08\x07garbage that is not protobuf \xff\xfe" * 10)
    dynamic = deep_residual(2, batch="N")
    return {
        "missing path": (tmp / "nope.onnx", {}, ["ONNX file not found", "nope.onnx"]),
        "directory": (tmp, {}, ["not an ONNX file", "directory", str(tmp)]),
        "corrupt file": (corrupt_file, {}, ["could not parse", "corrupt.onnx", "ONNX"]),
        "corrupt bytes": (b"\x08\x07garbage \xff\xfe" * 10, {}, ["could not parse", "ONNX bytes"]),
        "text bytes": (b"hello, I am not a model", {}, ["could not parse", "ONNX"]),
        "empty bytes": (b"", {}, ["ONNX bytes are empty"]),
        "unknown op": (
            one_node(helper.make_node("FooBarOp", ["x"], ["y"], name="mystery")),
            {},
            ["could not parse", "'mystery'", "FooBarOp"],
        ),
        "bad attribute": (
            one_node(helper.make_node("Softmax", ["x"], ["y"], name="soft", axis=7)),
            {},
            ["could not parse", "'soft'", "Softmax", "axis"],
        ),
        "dangling input": (
            one_node(helper.make_node("Add", ["x", "ghost"], ["y"], name="add")),
            {},
            ["could not parse", "'add'", "input"],
        ),
        "no outputs": (no_outputs, {}, ["no outputs", "mark_output"]),
        "callable raises": (
            raises,
            {},
            ["network definition function", "raises", "ValueError", "boom in the user's network code"],
        ),
        "callable exits": (exits, {}, ["SystemExit"]),
        "dynamic without profile": (dynamic, {}, ["'input'", "dynamic shape", "profiles="]),
        "profile for unknown input": (
            dynamic,
            {"profiles": {"inptu": DYNAMIC_PROFILE, "input": DYNAMIC_PROFILE}},
            ["unknown input", "inptu", "'input'"],
        ),
        "profile of wrong rank": (
            dynamic,
            {"profiles": {"input": ((1, 8), (2, 8), (4, 8))}},
            ["'input'", "2 dimension(s)", "--shapes"],
        ),
        "profile changes a fixed dim": (
            dynamic,
            {"profiles": {"input": ((1, 8, 8, 8), (2, 8, 8, 8), (4, 8, 8, 16))}},
            ["'input'", "dimension 3 to 8/16 where the model fixes it at 8", "give input:2x8x8x8"],
        ),
    }


CASE_NAMES = list(make_cases(Path("/nonexistent")))


@pytest.mark.parametrize("case", CASE_NAMES)
def test_bad_input_fails_clearly_and_the_next_build_works(case: str, tmp_path: Path) -> None:
    model, options, expected = make_cases(tmp_path)[case]
    build = run(model, **options)
    assert build.status == "failed"
    assert isinstance(build.error, BuildError) and not isinstance(build.error, BuildCancelled)
    message = str(build.error)
    for text in expected:
        assert text in message, f"{text!r} not in {message!r}"
    assert build.status_detail and build.status_detail == message.splitlines()[0]
    if case != "callable exits":
        assert "unexpected" not in message  # every expected problem has its own message
    assert build.engine is None
    with pytest.raises(BuildError) as raised:
        build.result()
    assert raised.value is build.error
    assert all(row["status"] != RUNNING for row in build.timings())
    next_build_succeeds()


def test_tensorrt_build_failure_is_reported_with_its_reason() -> None:
    build = run(deep_residual(4), workspace=1)  # a real builder failure, after the phases began
    assert build.status == "failed", "a 1-byte workspace must fail: did the workspace reach TensorRT?"
    assert "TensorRT could not build an engine" in str(build.error)
    assert "workspace" in str(build.error)
    assert any(p["severity"] in ("ERROR", "INTERNAL_ERROR") for p in build.problems)
    assert all(row["status"] != RUNNING for row in build.timings())
    next_build_succeeds()


@pytest.mark.parametrize(
    "options, error, expected",
    [
        (
            {"optimizaton_level": 3},
            TypeError,
            ["unknown build option 'optimizaton_level'", "did you mean 'optimization_level'"],
        ),
        ({"timing_cach": "x"}, TypeError, ["did you mean 'timing_cache'"]),
        ({"optimization_level": 9}, ValueError, ["optimization_level", "0..5", "9"]),
        ({"workspace": "lots"}, ValueError, ["workspace", "'lots'"]),
        ({"budget": -1}, ValueError, ["budget", "positive", "-1"]),
        ({"isolation": "fork"}, ValueError, ["isolation", "'fork'"]),
        ({"profiles": {"input": (1, 2)}}, ValueError, ["profile for input 'input'"]),
        ({"output": "/no/such/dir/x.engine"}, FileNotFoundError, ["output directory does not exist", "/no/such/dir"]),
    ],
)
def test_bad_options_fail_at_once_and_the_next_build_works(
    options: dict[str, Any], error: type, expected: list[str]
) -> None:
    with pytest.raises(error) as raised:
        Build(deep_residual(2), **options)
    for text in expected:
        assert text in str(raised.value), f"{text!r} not in {str(raised.value)!r}"
    next_build_succeeds()


def test_wrong_model_type_fails_at_once() -> None:
    with pytest.raises(TypeError, match="got list"):
        Build([1, 2, 3])  # type: ignore[arg-type]  # the wrong type on purpose: the runtime check is under test
    next_build_succeeds()


def test_failed_output_write_is_a_build_error_with_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_replace = os.replace

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if str(dst).endswith("model.engine"):
            raise OSError("disk full (simulated)")
        real_replace(src, dst)

    monkeypatch.setattr("trt_widget._files.os.replace", failing_replace)
    output = tmp_path / "model.engine"
    build = run(deep_residual(2), output=output)
    assert build.status == "failed"
    assert "built but could not be written" in str(build.error) and "disk full" in str(build.error)
    assert [r["status"] for r in build.timings() if r["depth"] == 0][-1] == "failed"  # it failed in the last row
    assert not output.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]


def test_many_failures_in_a_row_do_not_poison_the_process(tmp_path: Path) -> None:
    for _ in range(5):
        assert run(b"").status == "failed"
        assert run(tmp_path / "missing.onnx").status == "failed"
        assert run(raises).status == "failed"
    next_build_succeeds()


def test_parse_failure_via_a_path_reads_the_file(tmp_path: Path, small_model: Any) -> None:
    """A valid model behind a path builds (the control for the corrupt-file case above)."""
    path = tmp_path / "ok.onnx"
    path.write_bytes(to_bytes(small_model))
    assert run(path).status == "succeeded"


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_an_empty_model_file_is_refused_without_the_parser(
    tmp_path: Path, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty file was handed to TensorRT's parser by name to say what is wrong with it (opened again: its folder
    could be swapped meanwhile); it is refused as empty, the parser never asked."""
    import trt_widget._engine as engine_module

    def never(*args: Any) -> bool:
        raise AssertionError("the parser was asked")

    monkeypatch.setattr(engine_module, "_parse_at", never)  # (in this process: the thread build)
    empty = tmp_path / "m.onnx"
    empty.write_bytes(b"")
    build = run(str(empty), isolation=isolation, history=False)
    assert (
        build.status == "failed" and str(build.error) == f"could not parse {empty} as ONNX: the file is empty (0 bytes)"
    )
