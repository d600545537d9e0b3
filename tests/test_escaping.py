"""Untrusted text (a model's node names, a recording, a log) never reaches a terminal raw: the separators, bidi
controls and invisible characters are escaped like C0/C1 controls, in the terminal, ``--plain`` and ``--json``
(as JSON ``\\u`` escapes), and the widget's formatter (js/src/shared/format.js) escapes the same list. Real RTX
builds of a model whose node names hold them (issue 35, defect 21)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget._format import UNSAFE_CHARACTERS, escape_controls, escape_json, escape_lines
from trt_widget.models import to_bytes

# what the attack used, and what the list lacked then
NEW = ["\u2028", "\u2029", "\u200b", "\ufeff", "\u2060", "\ufff9", "\U000e0041"]
BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]
BIDI += ["\u200e", "\u200f", "\u061c"]
# the re-run's: characters drawn as nothing (look-alike names), which --json and the errors printed raw
INVISIBLE = ["\u00ad", "\u034f", "\u115f", "\u180e", "\u2061", "\u206a", "\u3164", "\uffa0"]
EVIL_NODE = "conv\u202eevil\u009b31m\u2028forged"


@pytest.mark.parametrize("char", NEW + BIDI + INVISIBLE + ["\x1b", "\x9b", "\x7f", "\udcff"], ids=ascii)
def test_separators_bidi_controls_and_invisible_characters_are_escaped(char: str) -> None:
    shown = escape_controls(f"a{char}b")
    assert char not in shown and shown.isascii() and shown.startswith("a\\") and shown.endswith("b"), ascii(shown)
    assert escape_lines(f"x{char}\ny") == escape_controls(f"x{char}") + "\ny"  # only "\n" breaks a line


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15.1): what a renderer draws as nothing
DEFAULT_IGNORABLE = [(0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5)]
DEFAULT_IGNORABLE += [(0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164)]
DEFAULT_IGNORABLE += [(0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3)]
DEFAULT_IGNORABLE += [(0x1D173, 0x1D17A), (0xE0000, 0xE0FFF)]
# kept on purpose: the joiners and variation selectors of emoji and scripts
KEPT = {0x200C, 0x200D, *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)}


def test_every_character_unicode_draws_as_nothing_is_escaped_but_the_joiners_and_selectors() -> None:
    """The second re-run found the musical and shorthand format controls (U+1D173-1D17A, U+1BCA0-1BCA3) and the
    unassigned ignorables (U+2065, U+FFF0-FFF8, U+E0080-E0FFF) printed raw by ``--json``: an invisible name."""
    raw = [
        f"U+{code:04X}"
        for first, last in DEFAULT_IGNORABLE
        for code in range(first, last + 1)
        if code not in KEPT
        and chr(code) in escape_controls(chr(code)) + escape_json(json.dumps(chr(code), ensure_ascii=False))
    ]
    assert not raw, raw


def test_ordinary_text_of_any_script_is_left_alone() -> None:
    for text in ("conv1/Relu ×3", "Реле 层 طبقة", "a\u200db", "\U0001f600 é"):  # ZWJ joins emoji and scripts
        assert escape_controls(text) == text


def test_json_escapes_mean_the_same_value_and_leave_other_text_as_utf8() -> None:
    value = {"name": "a\u202eb\x9bc\u2028d\U000e0041 Größe ×3", "lone": "\udcff", "nl": "x\ny"}
    text = escape_json(json.dumps(value, ensure_ascii=False))
    assert json.loads(text) == value
    assert "Größe ×3" in text and "\\u202e" in text and "\\udb40\\udc41" in text  # a tag: a surrogate pair
    assert not any(c in text for c in "\u202e\x9b\u2028\U000e0041\udcff")


def _js_class() -> str:
    source = (Path(__file__).parents[1] / "js" / "src" / "shared" / "format.js").read_text()
    match = re.search(r"export const UNSAFE =\s*(?://[^\n]*\n\s*)*/\[(.*?)\]/gu;", source, re.S)
    assert match, "js/src/shared/format.js has no UNSAFE = /[...]/gu"
    return match.group(1)


def _codepoints(char_class: str) -> set[int]:
    pattern = re.compile(f"[{char_class}]")
    return {c for c in range(0x110000) if pattern.match(chr(c))}


def test_the_widgets_escape_list_is_the_terminals() -> None:
    """format.js's UNSAFE, read as a regular expression (its \\u{...} escapes in Python's spelling), matches the
    same code points as _format.py's."""
    js = re.sub(r"\\u\{([0-9a-fA-F]+)\}", lambda m: f"\\U{int(m.group(1), 16):08x}", _js_class())
    assert _codepoints(js) == _codepoints(UNSAFE_CHARACTERS)


@pytest.fixture(scope="module")
def evil_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model whose node with that name has an op the parser lacks: its name is in TensorRT's error lines, the
    failure detail and the error."""
    from onnx import TensorProto, helper

    node = helper.make_node("Frobnicate", ["x"], ["y"], name=EVIL_NODE)
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("x", "y")]
    graph = helper.make_graph([node], "evil", [io[0]], [io[1]])
    path = tmp_path_factory.mktemp("evil") / "evil.onnx"
    path.write_bytes(to_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])))
    return path


def _build(model: Path, *flags: str) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", str(model), *flags],
        capture_output=True,
        timeout=300,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    assert done.returncode == 1 and b"(Frobnicate)" in done.stderr, done.stderr.decode(errors="replace")
    assert not model.with_suffix(".engine").exists()
    return done


def _raw(out: bytes) -> list[str]:
    return [c for c in ("\u202e", "\u009b", "\u2028") if c.encode() in out]


def test_build_json_writes_a_models_node_names_as_json_escapes(evil_model: Path) -> None:
    done = _build(evil_model, "--json")
    assert not _raw(done.stdout + done.stderr), _raw(done.stdout + done.stderr)
    assert b"Node name: conv\\u202eevil\\u009b31m\\u2028forged" in done.stdout
    events = [json.loads(line) for line in done.stdout.decode().split("\n") if line]
    assert events[-1]["event"] == "build_end" and events[-1]["status"] == "failed"
    assert any(f"Node name: {EVIL_NODE}" in e["message"] for e in events if e["event"] == "log")  # decoded, as named


def test_build_plain_shows_a_models_node_names_escaped(evil_model: Path) -> None:
    done = _build(evil_model, "--plain")
    out = done.stdout + done.stderr
    assert not _raw(out), _raw(out)
    assert "conv\\u202eevil\\x9b31m\\u2028forged" in out.decode()


def test_the_servers_console_formatter_escapes_what_a_client_sent() -> None:
    """MCP's and LSP's SDKs log what a client sent (a method, arguments): one line a record, no control character
    of theirs reaches the console; a traceback keeps its own line breaks."""
    import logging

    from trt_widget._format import EscapedFormatter

    formatter = EscapedFormatter(logging.BASIC_FORMAT)
    record = logging.LogRecord(
        "mcp.server", logging.WARNING, __file__, 1, "rejected on %s", ("\x1b]0;PWN\x07\nx",), None
    )
    line = formatter.format(record)
    assert "\x1b" not in line and "\x07" not in line and "\n" not in line and "PWN" in line, line
    try:
        raise ValueError("\x1b[2J")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    said = formatter.format(record)
    assert "\x1b" not in said and said.count("\n") >= 2 and "ValueError" in said, said
