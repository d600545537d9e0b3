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
