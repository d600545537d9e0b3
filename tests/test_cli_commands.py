"""``trt-widget``'s one command table: no command lists every command, a mistyped one gets the closest, every
command's ``--help`` runs and names only files that exist, and the module's usage lines cover every command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import trt_widget.__main__ as cli
from trt_widget.__main__ import COMMAND_NAMES, main

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = {"build", "demo", "view", "serve", "matrix", "inspect", "check", "bundle", "trtexec", "mcp", "lsp", "run"}


def test_the_table_has_every_command_and_the_parser_is_made_from_it() -> None:
    assert set(COMMAND_NAMES) == EXPECTED
    parser = cli._parser()
    assert isinstance(parser, cli._Parser) and set(parser.commands) == EXPECTED


def test_no_command_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    listed = re.search(r"choose a command: (.*)", err)
    assert listed is not None
    assert set(re.split(r", | or ", listed.group(1).strip())) == EXPECTED  # run included


def test_a_mistyped_command_gets_the_closest_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["biuld", "m.onnx"]) == 2
    assert "did you mean build?" in capsys.readouterr().err
    assert main(["\x1b[31mxyz"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "choose a command" in err  # echoed escaped


@pytest.mark.parametrize("command", sorted(EXPECTED))
def test_every_help_names_only_files_that_exist(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    named = set(re.findall(r"\b(?:docs|trt_widget|tests|bench|scripts|js)/[\w/.-]*\w", text))
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert not missing, f"trt-widget {command} --help names files that do not exist: {missing}"


def test_the_usage_lines_cover_every_command() -> None:
    doc = cli.__doc__ or ""
    assert set(re.findall(r"^  trt-widget (\w+)", doc, flags=re.M)) == EXPECTED
    named = set(re.findall(r"# see ([\w/]+\.py)", doc))
    assert named and all((ROOT / "trt_widget" / path).exists() for path in named), named
