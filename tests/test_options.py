"""BuildOptions: validated before any thread starts; unknown names get a suggestion, bad values a clear message."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from trt_widget._options import BuildOptions, parse_bytes


def test_defaults_are_valid() -> None:
    options = BuildOptions.from_kwargs()
    assert options.isolation == "process" and options.budget is None and options.profiles is None


def test_unknown_option_suggests_the_close_name() -> None:
    with pytest.raises(TypeError, match=r"unknown build option 'worksapce'; did you mean 'workspace'\?"):
        BuildOptions.from_kwargs(worksapce="1GiB")


def test_unknown_option_without_a_close_match_lists_the_known_ones() -> None:
    with pytest.raises(TypeError) as info:
        BuildOptions.from_kwargs(zzz=1)
    assert "did you mean" not in str(info.value)
    assert "optimization_level" in str(info.value) and "timing_cache" in str(info.value)


def test_options_are_frozen() -> None:
    options = BuildOptions.from_kwargs(budget=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.budget = 4  # type: ignore[misc]


def test_validation_returns_new_options_and_leaves_the_given_ones_as_they_were(tmp_path: Path) -> None:
    """The checks normalise values (byte counts, enum spellings, paths, profiles) into a new BuildOptions: the
    frozen instance given is never written to."""
    given: dict[str, Any] = {  # what validation accepts and normalises, not yet the fields' types
        "workspace": "1GiB",
        "output": str(tmp_path / "m.engine"),
        "tiling_optimization_level": 2,
        "tactic_sources": "-cudnn, +cublas",
        "profiles": {"x": ([1, 3], [2, 3], [4, 3])},
    }
    raw = BuildOptions(**given)
    before = dataclasses.asdict(raw)
    checked = raw.validated()
    assert dataclasses.asdict(raw) == before and before["workspace"] == "1GiB"
    assert checked is not raw and type(checked) is BuildOptions
    assert (checked.workspace, checked.tiling_optimization_level) == (1 << 30, "moderate")
    assert checked.tactic_sources == "-CUDNN,+CUBLAS" and checked.output == str(tmp_path / "m.engine")
    assert checked.profiles == {"x": ((1, 3), (2, 3), (4, 3))}
    assert checked.validated() == checked  # normalised values pass again, unchanged


@pytest.mark.parametrize(
    "value, expected",
    [
        (1 << 20, 1 << 20),
        ("1GiB", 1 << 30),
        ("512MB", 512 * 10**6),
        ("64 mib", 64 << 20),
        ("1.5k", 1536),
        ("4096", 4096),
    ],
)
def test_workspace_accepts_counts_and_units(value: Any, expected: int) -> None:
    assert BuildOptions.from_kwargs(workspace=value).workspace == expected
    assert parse_bytes(value, "workspace") == expected


@pytest.mark.parametrize("value", [0, -5, "0", "0GiB", "0.1b", "lots", "1 parsec", "", 1.5e9, True, [1]])
def test_bad_workspace_is_rejected(value: Any) -> None:
    with pytest.raises(ValueError, match="workspace must be"):
        BuildOptions.from_kwargs(workspace=value)


@pytest.mark.parametrize("level", [0, 3, 5])
def test_optimization_level_in_range(level: int) -> None:
    assert BuildOptions.from_kwargs(optimization_level=level).optimization_level == level


def test_max_aux_streams_beyond_what_a_gpu_runs_at_once_is_refused_before_a_build() -> None:
    """Issue 35 (13th re-run, W-new-2): 10**9 auxiliary streams made TensorRT for RTX allocate gigabytes before a
    bad_alloc; a GPU runs at most 32 streams' work at once, so the option stops there."""
    assert BuildOptions.from_kwargs(max_aux_streams=32).max_aux_streams == 32
    for value in (33, 10**9, 2**31 - 1):
        with pytest.raises(ValueError, match=r"max_aux_streams must be an integer from 0 to 32 \(a GPU runs at most"):
            BuildOptions.from_kwargs(max_aux_streams=value)


@pytest.mark.parametrize("name", ["avg_timing_iterations", "max_tactics", "device"])
def test_counts_beyond_tensorrts_int32_are_refused_before_a_build(name: str) -> None:
    """Issue 35 (re-run): 2**31 reached TensorRT's bindings, whose TypeError (with a worker traceback and paths)
    was the only message; TensorRT's counts are int32_t."""
    assert getattr(BuildOptions.from_kwargs(**{name: 2**31 - 1}), name) == 2**31 - 1
    with pytest.raises(ValueError, match=rf"{name} must be an integer from \d to 2,147,483,647 \(TensorRT's int32\)"):
        BuildOptions.from_kwargs(**{name: 2**31})


@pytest.mark.parametrize("level", [-1, 6, 2.5, "3", True])
def test_optimization_level_out_of_range(level: Any) -> None:
    with pytest.raises(ValueError, match=r"optimization_level must be an integer 0\.\.5"):
        BuildOptions.from_kwargs(optimization_level=level)


@pytest.mark.parametrize("name", ["budget", "force_after"])
@pytest.mark.parametrize("value", [0, -1, "10", True, float("inf"), float("nan")])
def test_bad_durations(name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"{name} must be a positive number of seconds"):
        BuildOptions.from_kwargs(**{name: value})


@pytest.mark.parametrize("name", ["fp16", "strongly_typed", "verbose"])
def test_switches_must_be_booleans(name: str) -> None:
    with pytest.raises(TypeError, match=f"{name} must be True or False"):
        BuildOptions.from_kwargs(**{name: "no"})


def test_isolation_values() -> None:
    assert BuildOptions.from_kwargs(isolation="process").isolation == "process"
    with pytest.raises(ValueError, match="isolation must be 'process' or 'thread'"):
        BuildOptions.from_kwargs(isolation="fork")


@pytest.mark.parametrize("name", ["output", "timing_cache"])
def test_paths_need_an_existing_directory(name: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=f"{name} directory does not exist"):
        BuildOptions.from_kwargs(**{name: tmp_path / "missing" / "file"})
    with pytest.raises(IsADirectoryError, match=f"{name} must be a file path"):
        BuildOptions.from_kwargs(**{name: tmp_path})
    with pytest.raises(TypeError, match=f"{name} must be a file path"):
        BuildOptions.from_kwargs(**{name: 42})
    assert getattr(BuildOptions.from_kwargs(**{name: tmp_path / "x"}), name) == str(tmp_path / "x")


def test_profiles_are_normalised_to_int_tuples() -> None:
    options = BuildOptions.from_kwargs(profiles={"input": ([1, 3, 8, 8], (2, 3, 8, 8), ("4", 3, 8, 8))})
    assert options.profiles == {"input": ((1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))}
    assert options.summary()["profiles"] == {"input": [[1, 3, 8, 8], [2, 3, 8, 8], [4, 3, 8, 8]]}


@pytest.mark.parametrize(
    "profiles, message",
    [
        ([("input", (1,), (1,), (1,))], "profiles must be a dict"),
        ({"input": ((1, 3), (2, 3))}, r"profile for input 'input' must be \(min, opt, max\) shapes"),
        ({"input": (1, 2, 3)}, r"must be \(min, opt, max\) shapes"),
        ({"input": ((2, 3), (1, 3), (4, 3))}, "needs min <= opt <= max"),
        ({"input": ((1, 3), (1, 3, 1), (1, 3))}, "needs min <= opt <= max"),
        ({"input": ((-1, 3), (1, 3), (4, 3))}, "has a negative dimension"),
    ],
)
def test_bad_profiles(profiles: Any, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        BuildOptions.from_kwargs(profiles=profiles)


# -- found by scripts/mutate.py: limits, units and defaults that no test held ---------------------------------
def test_every_default_is_the_documented_one() -> None:
    options = dataclasses.asdict(BuildOptions())
    assert options.pop("engine_report") is True  # every build reads its engine report unless told not to
    later = {k: v for k, v in options.items() if k not in list(options)[:11]}
    assert later and all(v is None or v is False or v == () for v in later.values())  # added later: all off
    assert {k: options[k] for k in list(options)[:11]} == {
        "optimization_level": None,
        "fp16": False,
        "strongly_typed": True,
        "timing_cache": None,
        "workspace": None,
        "profiles": None,
        "output": None,
        "budget": None,
        "verbose": False,
        "isolation": "process",
        "force_after": None,
    }


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1", 1),
        ("1b", 1),
        ("1k", 1 << 10),
        ("1kb", 1000),
        ("1KiB", 1 << 10),
        ("1m", 1 << 20),
        ("1mb", 10**6),
        ("1mib", 1 << 20),
        ("1g", 1 << 30),
        ("1GB", 10**9),
        ("1gib", 1 << 30),
    ],
)
def test_every_byte_unit(text: str, expected: int) -> None:
    assert parse_bytes(text, "workspace") == expected


def test_byte_counts_have_limits_at_one_and_2_to_the_62() -> None:
    assert parse_bytes(1, "workspace") == 1
    assert parse_bytes(1 << 62, "workspace") == 1 << 62
    with pytest.raises(ValueError, match=r"workspace must be at most 4,611,686,018,427,387,904 bytes \(2\*\*62\)"):
        parse_bytes((1 << 62) + 1, "workspace")
    with pytest.raises(ValueError, match=r"workspace must be positive, got '0.4b'"):  # the text as given
        parse_bytes("0.4b", "workspace")


def test_durations_have_limits_just_above_zero_and_at_1e8_seconds() -> None:
    assert BuildOptions.from_kwargs(budget=0.001, force_after=0.5).budget == 0.001
    assert BuildOptions.from_kwargs(budget=1e8, force_after=1e8).force_after == 1e8
    for name in ("budget", "force_after"):
        with pytest.raises(ValueError, match=f"{name} must be at most 1e[+]08 s"):
            BuildOptions.from_kwargs(**{name: 1.01e8})


def test_thread_isolation_is_valid_but_not_with_force_after() -> None:
    assert BuildOptions.from_kwargs(isolation="thread").isolation == "thread"
    assert BuildOptions.from_kwargs(isolation="process", force_after=2).force_after == 2
    with pytest.raises(ValueError, match="force_after needs isolation='process'"):
        BuildOptions.from_kwargs(isolation="thread", force_after=2)


def test_profiles_may_start_at_zero() -> None:
    options = BuildOptions.from_kwargs(profiles={"input": ((0, 3), (1, 3), (4, 3))})
    assert options.profiles == {"input": ((0, 3), (1, 3), (4, 3))}


def test_paths_must_be_regular_files_and_output_and_cache_must_differ(tmp_path: Path) -> None:
    for name in ("output", "timing_cache"):
        with pytest.raises(ValueError, match=f"{name}: /dev/null is a character device"):
            BuildOptions.from_kwargs(**{name: "/dev/null"})
    (tmp_path / "link").symlink_to(tmp_path / "x")
    with pytest.raises(ValueError, match="output and timing_cache are the same file"):
        BuildOptions.from_kwargs(output=tmp_path / "link", timing_cache=tmp_path / "x")
    options = BuildOptions.from_kwargs(output=tmp_path / "a", timing_cache=tmp_path / "b")
    assert (options.output, options.timing_cache) == (str(tmp_path / "a"), str(tmp_path / "b"))
