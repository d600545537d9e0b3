"""Eleventh independent re-run (issue 35, N7): an engine's manifest travels with a downloaded engine, so it is
untrusted. Its numbers (up to the 4,300 digits JSON reading allows, NaN, 1e308, negative) ended ``trt-widget
inspect ENGINE`` and ``trt-widget check ENGINE`` in an OverflowError traceback or printed a 300-digit duration or
"-5 B"; a model sha256 holding a newline forged a line of inspect's output. A real RTX build's engine and manifest,
one field changed each time (the key recomputed where the identity changes, as anyone can)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from attacks import built_engine

from trt_widget.provenance import key_of

ENV = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
HUGE = 10**4000  # 4,001 digits: JSON reads it as an int; float() of it overflows


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command, stdout and stderr in one stream, as a terminal shows them."""
    return subprocess.run(
        [sys.executable, "-m", "trt_widget", *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, cwd=cwd, env=ENV,
    )  # fmt: skip


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An engine ``trt-widget build`` wrote (TensorRT for RTX, on the CPU), its manifest beside it."""
    return built_engine(tmp_path_factory.mktemp("engine"))


def _set(data: dict[str, object], where: tuple[str, ...], value: object) -> None:
    for name in where[:-1]:
        inner = data[name]
        assert isinstance(inner, dict), (where, data)
        data = inner
    data[where[-1]] = value


CASES = {  # field -> (value, what must not be shown)
    "memory": (("engine_report", "memory", "weights"), HUGE, ["1000000000"]),
    "memory_negative": (("engine_report", "memory", "weights"), -7, ["-7 B"]),
    "total_layers": (("engine_report", "total_layers"), HUGE, ["1000000000"]),
    "model_size": (("model", "size"), HUGE, ["1000000000"]),
    "model_size_negative": (("model", "size"), -5, ["-5 B"]),
    "build_s_huge": (("build_s",), HUGE, ["1000000000"]),
    "build_s_1e308": (("build_s",), 1e308, []),  # printed 1,666,...: 307 digits of minutes
    "build_s_nan": (("build_s",), float("nan"), ["nan"]),
    "build_s_negative": (("build_s",), -3.0, [" in <1 ms", " in -"]),
    "model_sha": (("model", "sha256"), "x\nLoads: yes", ["Loads: yes", "sha256 x"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_manifest_number_or_sha_is_read_as_absent(engine: Path, tmp_path: Path, case: str) -> None:
    where, value, unshown = CASES[case]
    shutil.copyfile(engine, tmp_path / "model.engine")
    data = json.loads((engine.parent / "model.engine.manifest.json").read_text())
    _set(data, where, value)
    (tmp_path / "model.engine.manifest.json").write_text(json.dumps(data))
    inspect = _cli("inspect", "model.engine", cwd=tmp_path)
    check = _cli("check", "model.engine", cwd=tmp_path)
    for result in (inspect, check):
        assert "Traceback" not in result.stdout and "OverflowError" not in result.stdout, result.stdout
        assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", result.stdout), result.stdout
        assert not any(line.startswith("Loads: yes") for line in result.stdout.splitlines()), result.stdout
        assert not re.search(r"\d{20}", result.stdout), result.stdout  # no absurd number shown
        for text in unshown:
            assert text not in result.stdout, (text, result.stdout)
    assert inspect.returncode == 0 and "From its manifest" in inspect.stdout, inspect.stdout
    assert "5 layers" in inspect.stdout, inspect.stdout  # the rest of what the manifest says is still shown
    assert check.returncode == 0 and len(check.stdout.splitlines()) == 1, check.stdout  # the engine matches


@pytest.mark.parametrize("value", [HUGE, -1, 2**63], ids=["4001_digits", "negative", "2**63"])
def test_a_manifest_whose_engine_size_is_not_a_size_is_refused_in_one_line(
    engine: Path, tmp_path: Path, value: int
) -> None:
    """The engine's own size is required: one that no file has makes the manifest corrupt, said in one line (it
    printed every digit, and with the engine gone ended in a traceback)."""
    shutil.copyfile(engine, tmp_path / "model.engine")
    data = json.loads((engine.parent / "model.engine.manifest.json").read_text())
    data["engine"]["size"] = value
    (tmp_path / "model.engine.manifest.json").write_text(json.dumps(data))
    for command in ("inspect", "check"):
        result = _cli(command, "model.engine", cwd=tmp_path)
        assert result.returncode == 1 and len(result.stdout.splitlines()) == 1, result.stdout
        assert "Traceback" not in result.stdout and "000000000" not in result.stdout, result.stdout
        assert "engine's size" in result.stdout, result.stdout


def test_a_manifest_string_with_a_newline_forges_no_line_of_check(engine: Path, tmp_path: Path) -> None:
    """``check`` quotes the TensorRT version the manifest records (part of its identity: the key recomputed, as
    anyone can): a newline in it forged a second line."""
    shutil.copyfile(engine, tmp_path / "model.engine")
    data = json.loads((engine.parent / "model.engine.manifest.json").read_text())
    data["identity"]["tensorrt_version"] = data["tensorrt"]["version"] = "1.0\nLoads: yes\x1b[2J"
    data["key"] = key_of(data["identity"])
    (tmp_path / "model.engine.manifest.json").write_text(json.dumps(data))
    check = _cli("check", "model.engine", cwd=tmp_path)
    assert check.returncode == 1 and "does not load" in check.stdout, check.stdout
    assert len(check.stdout.splitlines()) == 1 and "\x1b" not in check.stdout, check.stdout
    assert "1.0\\x0aLoads: yes\\x1b[2J" in check.stdout, check.stdout  # shown, escaped
    inspect = _cli("inspect", "model.engine", cwd=tmp_path)
    assert inspect.returncode == 0 and "\x1b" not in inspect.stdout, inspect.stdout
    assert not any(line.startswith("Loads: yes") for line in inspect.stdout.splitlines()), inspect.stdout
