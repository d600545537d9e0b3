"""``trt-widget trtexec``: trtexec command lines from NVIDIA's docs and samples (tests/data/trtexec_commands.json,
each with its source), translated as expected; those that fit this machine built for real (the model path swapped
for a small model), the rest refused naming each argument."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from trt_widget.__main__ import main
from trt_widget._backend import select_backend
from trt_widget._trtexec import split_arguments, translate
from trt_widget.models import to_bytes

COMMANDS = json.loads((Path(__file__).parent / "data" / "trtexec_commands.json").read_text())["commands"]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("entry", COMMANDS, ids=[c["source"] for c in COMMANDS])
def test_nvidias_command_lines_translate_as_written(entry: dict[str, Any]) -> None:
    translation = translate([entry["command"]])
    assert translation.model == re.search(r"--onnx=(\S+)", entry["command"]).group(1)  # type: ignore[union-attr]
    assert _jsonable(translation.options) == entry["options"]
    assert translation.ignored == entry["ignored"]
    assert [arg for arg, _why in translation.refused] == entry["refused"]
    assert all(why for _arg, why in translation.refused)


def test_at_least_ten_real_command_lines_with_their_source() -> None:
    assert len([c for c in COMMANDS if c.get("verbatim", True)]) >= 10
    assert all(re.match(r"NVIDIA/[\w.-]+@[\w.-]+ \S+:\d+ ", c["source"] + " ") for c in COMMANDS)
    assert all("constructed from prose" in c["source"] for c in COMMANDS if not c.get("verbatim", True))


MULTI_PROFILE = next(c for c in COMMANDS if "--profile=1" in c["command"])


def test_trtexecs_profile_groups_the_shapes_that_follow_it_into_two_profiles() -> None:
    """sampleOptions.cpp (v10.16 ~l.714-770, help ~l.2796): --profile=N takes the min/opt/max shapes right behind
    it; NVIDIA's cookbook line builds two profiles (its trtexec log says so)."""
    translation = translate([MULTI_PROFILE["command"]])
    assert not translation.refused
    assert translation.options["profiles"] == [
        {"x": ((1, 1, 28, 28), (4, 1, 28, 28), (16, 1, 28, 28))},
        {"x": ((8, 1, 28, 28), (32, 1, 28, 28), (64, 1, 28, 28))},
    ]
    assert "--profile=0" not in translation.ignored and "--profile=1" not in translation.ignored


@pytest.mark.parametrize(
    "args, refused, message",
    [
        (["--profile=0", "--minShapes=x:1", "--fp16", "--maxShapes=x:2"], "--maxShapes=x:2", "follows its --profile"),
        (["--profile=1", "--minShapes=x:1"], "--profile=0", "without gaps: no --profile=0"),
        (["--profile=0", "--minShapes=x:1", "--profile=0", "--minShapes=x:2"], "--profile=0", "given twice"),
        (["--profile=0", "--profile=1", "--minShapes=x:2"], "--profile=0", "no --minShapes/--optShapes/--maxShapes"),
        (["--profile=a", "--minShapes=x:2"], "--profile=a", "numbers an optimization profile"),
    ],
)
def test_profile_groups_trtexec_would_reject_are_refused(args: list[str], refused: str, message: str) -> None:
    translation = translate(["--onnx=m.onnx", *args])
    assert any(arg == refused and message in why for arg, why in translation.refused), translation.refused


def test_nvidias_two_profile_line_builds_two_profiles_on_rtx(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cookbook's command as written, the model swapped for one with its input (x: Nx1x28x28) and --fp16
    dropped where the backend has no FP16 flag (TensorRT for RTX)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "mnist_input",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1, 28, 28])],
    )
    model = tmp_path / "model-trained.onnx"
    model.write_bytes(to_bytes(helper.make_model(graph)))
    command = _swap(MULTI_PROFILE["command"], model, tmp_path / "model-trained.trt")
    if select_backend()[0] == "rtx":
        command = command.replace(" --fp16", "")
    code = main(["trtexec", command, "--json", "--isolation=thread"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "--profile=0 --min-shapes=x:1x1x28x28 --opt-shapes=x:4x1x28x28 --max-shapes=x:16x1x28x28 --profile=1" in err
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert events[0]["options"]["profiles"] == MULTI_PROFILE["options"]["profiles"]
    assert events[-1]["status"] == "succeeded" and (tmp_path / "model-trained.trt").stat().st_size > 0


@pytest.fixture
def small_onnx(tmp_path: Path, small_model: Any) -> Path:
    path = tmp_path / "small.onnx"
    path.write_bytes(to_bytes(small_model))
    return path


def _swap(command: str, model: Path, engine: Path) -> str:
    command = re.sub(r"--onnx=\S+", f"--onnx={model}", command)
    return re.sub(r"--saveEngine=\S+", f"--saveEngine={engine}", command)


@pytest.mark.parametrize("entry", [c for c in COMMANDS if c.get("build")], ids=lambda c: c["source"])
def test_the_command_lines_that_fit_this_machine_build(
    entry: dict[str, Any], small_onnx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = tmp_path / "out.engine"
    command = _swap(entry["command"], small_onnx, engine)
    code = main(["trtexec", command, "--json", "--isolation=thread"])
    out, err = capsys.readouterr()
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert events[-1]["event"] == "build_end" and events[-1]["status"] == "succeeded"
    written = engine if "--saveEngine" in entry["command"] else small_onnx.with_suffix(".engine")
    assert written.stat().st_size > 0
    assert "building as: trt-widget build" in err
    if entry["ignored"]:
        assert "ignored (trt-widget builds the engine and runs no inference): " + " ".join(entry["ignored"]) in err
    else:
        assert "ignored" not in err


@pytest.mark.parametrize("entry", [c for c in COMMANDS if c["refused"]], ids=lambda c: c["source"])
def test_refused_arguments_are_named_and_nothing_is_built(
    entry: dict[str, Any], small_onnx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = tmp_path / "out.engine"
    assert main(["trtexec", _swap(entry["command"], small_onnx, engine)]) == 2
    err = capsys.readouterr().err
    for arg in entry["refused"]:
        assert f"cannot honour {arg}: " in err
    assert "nothing built" in err and not engine.exists()


def test_a_dynamic_model_builds_from_trtexecs_build_arguments(
    tmp_path: Path, dynamic_model: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    model, engine, cache = tmp_path / "dyn.onnx", tmp_path / "dyn.plan", tmp_path / "t.cache"
    model.write_bytes(to_bytes(dynamic_model))
    code = main(
        [
            "trtexec",
            f"--onnx={model}",
            f"--saveEngine={engine}",
            "--minShapes=input:1x8x8x8",
            "--optShapes=input:2x8x8x8",
            "--maxShapes=input:4x8x8x8",
            "--memPoolSize=workspace:64M",
            "--builderOptimizationLevel=1",
            f"--timingCacheFile={cache}",
            "--noTF32",
            "--iterations=50",
            "--json",
            "--isolation=thread",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    start = json.loads(out.splitlines()[0])
    assert start["options"]["workspace"] == 64 << 20 and start["options"]["optimization_level"] == 1
    assert start["options"]["profiles"] == {"input": [[1, 8, 8, 8], [2, 8, 8, 8], [4, 8, 8, 8]]}
    assert start["options"]["tf32"] is False and start["options"]["timing_cache"] == str(cache)
    assert (
        engine.stat().st_size > 0
        and "ignored (trt-widget builds the engine and runs no inference): --iterations=50" in err
    )


def test_what_the_backend_lacks_is_refused_naming_the_option(
    small_onnx: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if select_backend()[0] != "rtx":
        pytest.skip("TensorRT for RTX's API")
    assert main(["trtexec", f"--onnx={small_onnx}", "--fp16", "--memPoolSize=workspace:4096"]) == 2
    assert "--fp16 is not available with TensorRT for RTX" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--onnx=m.onnx", "--memPoolSize=dlaSRAM:1M"],
            "memory pool 'dlaSRAM': not a trt-widget option: set it with configure=",
        ),
        (["--onnx=m.onnx", "--layerPrecisions=*:fp16"], "set it with configure= in Python"),
        (
            ["--onnx=m.onnx", "--saveEngin=m.plan"],
            "did you mean --saveEngine? If not: not a trtexec option trt-widget knows",
        ),
        (["--onnx=m.onnx", "--fp61"], "did you mean --fp16?"),
        (["--onnx=m.onnx", "--builderOptimizationLevel=high"], "needs a int"),
        (["--onnx=m.onnx", "--fp16=yes"], "--fp16 takes no value"),
        (["--onnx=m.onnx", "-o", "x"], "written --name or --name=value"),
        (["--saveEngine=x.plan"], "no model: give --onnx=model.onnx"),
        (["--onnx=m.onnx", "--shapes=input"], "write NAME:DIMS"),
        (["--onnx=m.onnx", "--sparsity=force"], "rewrites the weights"),
    ],
)
def test_bad_or_unsupported_arguments_say_why(args: list[str], message: str) -> None:
    reasons = " | ".join(why for _arg, why in translate(args).refused)
    assert message in reasons


def test_a_pasted_line_with_the_program_name_and_line_breaks_splits_like_a_shell() -> None:
    assert split_arguments(["/usr/src/tensorrt/bin/trtexec --onnx=a.onnx \\\n  --fp16"]) == ["--onnx=a.onnx", "--fp16"]
    assert split_arguments(["trtexec", "--onnx=a b.onnx"]) == ["--onnx=a b.onnx"]


def test_trtexec_sizes_are_mib_unless_a_unit_says_otherwise() -> None:
    sizes = {"1024": 1 << 30, "512M": 512 << 20, "2G": 2 << 30, "4096K": 4 << 20, "1.5G": 3 << 29}
    for text, size in sizes.items():
        assert translate(["--onnx=m", f"--memPoolSize=workspace:{text}"]).options["workspace"] == size


def test_plugin_libraries_load_as_the_plugins_option(
    small_onnx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    translation = translate(["--onnx=m.onnx", "--staticPlugins=a.so", "--dynamicPlugins=b.so", "--plugins=c.so"])
    assert translation.options == {"plugins": ["a.so", "b.so", "c.so"]} and not translation.refused
    missing = tmp_path / "libnothere.so"
    assert main(["trtexec", f"--onnx={small_onnx}", f"--staticPlugins={missing}"]) == 1
    err = capsys.readouterr().err
    assert f"--plugin={missing}" in err and "plugins: no plugin library at" in err


# -- issue 35: what a hostile or mistyped command line does ---------------------------------------------------


@pytest.mark.parametrize("number", ["99999999", "1024", "1" * 5000, "\u0661"])
def test_a_huge_or_odd_profile_number_is_refused_at_once(number: str) -> None:
    """Defect 5: --profile=99999999 looped over every number below it (one refusal each, memory growing)."""
    translation = translate(["--onnx=m.onnx", f"--profile={number}", "--minShapes=x:1"])
    assert len(translation.refused) == 1 and "options" not in translation.options
    assert "numbers" in translation.refused[0][1]


def test_profile_numbers_with_a_wide_gap_are_one_refusal() -> None:
    translation = translate(["--onnx=m.onnx", "--profile=0", "--minShapes=x:1", "--profile=1000", "--minShapes=x:2"])
    assert len(translation.refused) == 1, translation.refused  # not 999 of them
    arg, why = translation.refused[0]
    assert arg == "--profile=1" and "no --profile=1, 2, 3, 4, 5 and 994 more (given: 0, 1000)" in why


def test_the_cli_refuses_a_huge_profile_number_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trtexec", "--onnx=m.onnx", "--profile=99999999", "--minShapes=x:1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("trt-widget trtexec: cannot honour --profile=99999999: ") and len(err) == 2


def test_an_onnx_value_that_looks_like_a_flag_is_a_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defect 17: --onnx=--help printed build's help and exited 0, having built nothing."""
    monkeypatch.chdir(tmp_path)
    assert main(["trtexec", "--onnx=--help"]) == 1
    out, err = capsys.readouterr()
    assert "usage:" not in out + err and "ONNX file not found: --help" in err
    assert "building as: trt-widget build -- --help" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["trtexec", "--onnx=-model.onnx", "--saveEngine=-model.engine", "--isolation=thread"],
        ["trtexec", "trtexec --onnx=-model.onnx --saveEngine=-model.engine --isolation=thread"],
        ["build", "--isolation=thread", "-o", "./-model.engine", "--", "-model.onnx"],
        ["build", "./-model.onnx", "--isolation=thread"],
    ],
    ids=["trtexec", "trtexec-pasted", "build --", "build ./"],
)
def test_a_model_whose_name_begins_with_a_dash_builds(
    argv: list[str],
    tmp_path: Path,
    small_model: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-model.onnx").write_bytes(to_bytes(small_model))
    assert main(argv) == 0, capsys.readouterr().err
    assert (tmp_path / "-model.engine").stat().st_size > 0


@pytest.mark.parametrize(
    "line", ["trtexec --onnx='model.onnx --fp16", 'trtexec --onnx="a.onnx --saveEngine=b', "trtexec --onnx=a.onnx \\"]
)
def test_a_pasted_line_with_an_unbalanced_quote_is_one_clear_error(
    line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 18: shlex's ValueError ended in a traceback."""
    assert main(["trtexec", line]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trt-widget trtexec: error: the pasted command line does not split")


@pytest.mark.parametrize(
    "args, refused",
    [
        (["--onnx=a.onnx", "--onnx=b.onnx"], "--onnx=a.onnx --onnx=b.onnx"),
        (["--onnx=a.onnx", "--saveEngine=a.plan", "--saveEngine=b.plan"], "--saveEngine=a.plan --saveEngine=b.plan"),
        (["--onnx=a.onnx", "--builderOptimizationLevel=3", "--builderOptimizationLevel=5"], None),
    ],
)
def test_a_file_option_given_twice_is_refused_not_the_last_taken(args: list[str], refused: str | None) -> None:
    """Weakness: trtexec takes the last --onnx / --saveEngine silently; naming two files is refused."""
    translation = translate(args)
    whys = [why for arg, why in translation.refused if refused is None or arg == refused]
    assert len(whys) == 1 and "given 2 times: give it once" in whys[0], translation.refused


def test_a_file_option_repeated_with_the_same_value_is_fine() -> None:
    translation = translate(["--onnx=a.onnx", "--onnx=a.onnx", "--saveEngine=a.plan", "--saveEngine=a.plan"])
    assert not translation.refused and translation.model == "a.onnx" and translation.options["output"] == "a.plan"


def test_an_option_after_the_double_dash_is_said_to_belong_before_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--", "-model.onnx", "--plain"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --plain (--plain: options go before --)" in err and "did you mean" not in err
