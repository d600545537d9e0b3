"""trtexec's shape flags on ``trt-widget build`` and ``matrix``: real RTX builds of a model with a dynamic batch
dimension, in every form (``--shapes``, ``--min-shapes/--opt-shapes/--max-shapes``, trtexec's ``--minShapes=``),
and the message for a dynamic model built without them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from trt_widget.__main__ import main
from trt_widget._shapes import parse_shapes, profiles_from_shapes
from trt_widget.models import to_bytes


@pytest.fixture
def dynamic_onnx(tmp_path: Path, dynamic_model: Any) -> Path:
    path = tmp_path / "dyn.onnx"
    path.write_bytes(to_bytes(dynamic_model))
    return path


def _events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(
    "flags, profile",
    [
        (["--shapes", "input:4x8x8x8"], [[4, 8, 8, 8]] * 3),
        (
            ["--min-shapes", "input:1x8x8x8", "--opt-shapes", "input:4x8x8x8", "--max-shapes", "input:8x8x8x8"],
            [[1, 8, 8, 8], [4, 8, 8, 8], [8, 8, 8, 8]],
        ),
        (  # trtexec's spelling, as pasted from a trtexec command line
            ["--minShapes=input:2x8x8x8", "--optShapes=input:3x8x8x8", "--maxShapes=input:6x8x8x8"],
            [[2, 8, 8, 8], [3, 8, 8, 8], [6, 8, 8, 8]],
        ),
        (
            ["--min-shapes", "input:1x8x8x8", "--max-shapes", "input:5x8x8x8"],
            [[1, 8, 8, 8], [5, 8, 8, 8], [5, 8, 8, 8]],
        ),
    ],
    ids=["shapes", "min-opt-max", "trtexec-spelling", "opt-defaults-to-max"],
)
@pytest.mark.slow
def test_a_dynamic_model_builds_from_the_cli_with_each_shape_flag_form(
    dynamic_onnx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], profile: Any
) -> None:
    engine = tmp_path / "dyn.engine"
    code = main(["build", str(dynamic_onnx), "-o", str(engine), "--json", "--isolation", "thread", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    events = _events(out)
    assert events[0]["options"]["profiles"] == {"input": profile}
    assert events[-1]["status"] == "succeeded" and engine.stat().st_size > 0


@pytest.mark.slow
def test_a_dynamic_model_without_shapes_names_the_cli_flags_and_profiles(
    dynamic_onnx: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["build", str(dynamic_onnx), "--json", "--isolation", "thread"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "--shapes input:Nx8x8x8" in err and "--min-shapes/--opt-shapes/--max-shapes" in err
    assert "profiles={'input': (min_shape, opt_shape, max_shape)}" in err


def test_build_help_shows_shape_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--shapes input:1x3x224x224" in out and "--minShapes" in out and "profiles=" in out
    assert main(["matrix", "--help"]) == 0
    assert "--min-shapes input:1x3x224x224" in capsys.readouterr().out


@pytest.mark.slow
def test_matrix_builds_a_dynamic_model_with_shapes(dynamic_onnx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["matrix", str(dynamic_onnx), "--opt-level", "0", "1", "--shapes", "input:2x8x8x8", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    ends = [e for e in _events(out) if e["event"] == "build_end"]
    assert [e["status"] for e in ends] == ["succeeded", "succeeded"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"shapes": "input"}, "write NAME:DIMS"),
        ({"shapes": "input:1x-1"}, "must have no -1"),
        ({"shapes": "input:1xa"}, "dimensions are integers"),
        ({"shapes": "input:1x2", "min_shapes": "input:1x2"}, "either --shapes or"),
    ],
)
def test_bad_shape_flags_say_how_to_write_them(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        profiles_from_shapes(**kwargs)


def test_missing_ends_of_a_range_are_filled_as_trtexec_does() -> None:
    a, b, c = (1, 3), (4, 3), (8, 3)
    assert profiles_from_shapes(opt_shapes="x:4x3") == {"x": (b, b, b)}
    assert profiles_from_shapes(min_shapes="x:1x3", opt_shapes="x:4x3") == {"x": (a, b, b)}
    assert profiles_from_shapes(opt_shapes="x:4x3", max_shapes="x:8x3") == {"x": (b, b, c)}
    assert profiles_from_shapes(min_shapes="x:1x3", max_shapes="x:8x3") == {"x": (a, c, c)}
    assert profiles_from_shapes(max_shapes="x:8x3") == {"x": (c, c, c)}


def test_shapes_parse_as_trtexec_writes_them() -> None:
    assert parse_shapes("input:1x3x224x224,'mask:0':1x128") == {"input": (1, 3, 224, 224), "mask:0": (1, 128)}
    assert parse_shapes("scalar:") == {"scalar": ()}


def test_a_bad_shape_flag_is_a_usage_error(dynamic_onnx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(dynamic_onnx), "--shapes", "input:1xq"]) == 2
    assert "dimensions are integers" in capsys.readouterr().err


def test_a_negative_flag_reaches_the_options(dynamic_onnx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["build", str(dynamic_onnx), "--shapes", "input:1x8x8x8", "--no-tf32", "--json", "--isolation", "thread"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert _events(out)[0]["options"]["tf32"] is False


@pytest.mark.slow
def test_build_takes_several_profiles_after_profile_flags(
    dynamic_onnx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = tmp_path / "two.engine"
    first = ["--profile", "0", "--min-shapes", "input:1x8x8x8", "--max-shapes", "input:4x8x8x8"]
    second = ["--profile=1", "--minShapes=input:4x8x8x8", "--optShapes=input:6x8x8x8", "--maxShapes=input:8x8x8x8"]
    code = main(["build", str(dynamic_onnx), "-o", str(engine), "--json", "--isolation", "thread", *first, *second])
    out, err = capsys.readouterr()
    assert code == 0, err
    events = _events(out)
    assert events[0]["options"]["profiles"] == [
        {"input": [[1, 8, 8, 8], [4, 8, 8, 8], [4, 8, 8, 8]]},
        {"input": [[4, 8, 8, 8], [6, 8, 8, 8], [8, 8, 8, 8]]},
    ]
    assert events[-1]["status"] == "succeeded" and engine.stat().st_size > 0


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--profile", "1", "--shapes", "input:1x8x8x8"], "numbers the profiles 0, 1, 2"),
        (["--shapes", "input:1x8x8x8", "--profile", "0", "--shapes", "input:2x8x8x8"], "follows the --profile"),
        (["--profile", "0", "--shapes", "input:1x8x8x8", "--profile", "1"], "--profile 1 has no shapes"),
    ],
)
def test_profile_flags_out_of_order_are_a_usage_error(
    dynamic_onnx: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert main(["build", str(dynamic_onnx), *flags]) == 2
    assert message in capsys.readouterr().err


# -- issue 35, defect 19: a dimension TensorRT cannot hold is refused before the build --------------------------

HUGE = 2**63


@pytest.mark.parametrize(
    "text, message",
    [
        (f"input:1x{HUGE}", f"dimension {HUGE:,} is too large (at most 2**31-1 = 2,147,483,647 per dimension)"),
        ("input:2147483648x8", "dimension 2,147,483,648 is too large"),
        ("input:1x" + "9" * 5000, "a dimension of more than 30 digits is too large"),
        ("input:" + "x".join(["1"] * 9), "9 dimensions; TensorRT takes at most 8"),
    ],
)
def test_a_dimension_tensorrt_cannot_hold_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_shapes(text)


def test_the_largest_dimension_allowed_parses() -> None:
    assert parse_shapes("input:2147483647x1") == {"input": (2**31 - 1, 1)}


@pytest.mark.parametrize(
    "argv",
    [
        ["build", "{model}", "--shapes", f"input:{HUGE}x8x8x8"],
        ["build", "{model}", "--max-shapes", f"input:{HUGE}x8x8x8"],
        ["trtexec", "--onnx={model}", f"--shapes=input:{HUGE}x8x8x8"],
        ["trtexec", "--onnx={model}", "--minShapes=input:1x8x8x8", f"--maxShapes=input:{HUGE}x8x8x8"],
    ],
)
def test_a_huge_dimension_on_the_command_line_is_a_usage_error_and_nothing_is_built(
    argv: list[str], dynamic_onnx: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([a.format(model=dynamic_onnx) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "is too large (at most 2**31-1" in err and "Traceback" not in err
    assert not dynamic_onnx.with_suffix(".engine").exists()


def test_a_huge_dimension_in_python_profiles_is_refused() -> None:
    from trt_widget import Build
    from trt_widget.models import deep_residual

    with pytest.raises(ValueError, match=re.escape("profile for input 'input': dimension")):
        Build(deep_residual(2, batch="N"), profiles={"input": ((1, 8, 8, 8), (1, 8, 8, 8), (HUGE, 8, 8, 8))})
