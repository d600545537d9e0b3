"""Formatting for people, in one place (mirrors js/src/shared/format.js): durations, sizes, terminals, and the
escaping that keeps untrusted text (names from a model, a recording, a log or a server) from driving a terminal."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from types import TracebackType
from typing import IO

# What never reaches a terminal raw (js/src/shared/format.js UNSAFE is the same list; a test compares them):
# C0 and C1 control characters and DEL (ESC starts terminal sequences, CR/BS rewrite a line, NL forges lines);
# the line and paragraph separators U+2028/2029 (lines again, for editors and str.splitlines); the bidirectional
# marks, embeddings, overrides and isolates that reorder what a reader sees (U+061C, U+200E/200F, U+202A-202E,
# U+2066-2069); the invisible U+200B, U+2060, U+FEFF, the interlinear annotations U+FFF9-FFFB and the tag
# characters U+E0000-E007F (text a reader cannot see); the characters Unicode says to draw as nothing (soft hyphen,
# grapheme joiner, invisible operators, fillers, musical and shorthand format controls, unassigned ignorables:
# look-alike names; the joiners and variation selectors of emoji and scripts stay); lone surrogates
UNSAFE_CHARACTERS = (
    "\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069"
    "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f"
    "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2061-\u2065\u206a-\u206f\u3164"
    "\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0080-\U000e00ff\U000e01f0-\U000e0fff"
)
_UNSAFE = re.compile(f"[{UNSAFE_CHARACTERS}]")


def _escape_one(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_controls(text: object) -> str:
    """``text`` as one printable line: every control character shown as an escape (ESC -> ``\\x1b``)."""
    value = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escape_one, value) if _UNSAFE.search(value) else value


def _json_escape_one(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON spells a character beyond the BMP as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escape_json(text: str) -> str:
    """A JSON text (from ``json.dumps(..., ensure_ascii=False)``) with every unsafe character written as a ``\\u``
    escape: the same JSON value, still readable UTF-8, but nothing that drives a terminal or forges a line when
    it is shown (they occur only inside JSON strings, where an escape means the same character)."""
    return _UNSAFE.sub(_json_escape_one, text) if _UNSAFE.search(text) else text


_TERMINAL_SEQUENCE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])"
)  # colours, titles


def plain_output_line(line: bytes) -> str:
    """One line of a command's output as a view of ours shows it: colours and other terminal sequences dropped,
    a line rewritten with ``\r`` (a progress bar) at its last state, tabs expanded, every other control escaped."""
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    return escape_controls(_TERMINAL_SEQUENCE.sub("", text).rsplit("\r", 1)[-1].expandtabs())


def escape_lines(text: str) -> str:
    """``escape_controls`` for each line of ``text``, keeping its line breaks (for multi-line output we made)."""
    return "\n".join(escape_controls(line) for line in text.split("\n"))


ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]


class EscapedFormatter(logging.Formatter):
    """Log lines on a console with outside text (a client's method, an editor's arguments) escaped: one line a
    record (a traceback keeps its lines), no control character from a message."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escape_controls(super().formatMessage(record))

    def formatException(self, ei: ExcInfo) -> str:
        return escape_lines(super().formatException(ei))


def log_escaped_to_stderr(level: int = logging.WARNING) -> None:
    """Every logger's records at ``level`` and up on stderr through :class:`EscapedFormatter` (the servers' console:
    their SDKs log what clients sent)."""
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(EscapedFormatter(logging.BASIC_FORMAT))
    logging.basicConfig(level=level, handlers=[console])


def fmt_s(seconds: float | None) -> str:
    """A duration for people: "<1 ms", "340 ms", "2.50 s", "3 min 04.2 s"."""
    if seconds is None:
        return ""
    if seconds < 1e-3:
        return "<1 ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)} min {rest:04.1f} s"


def fmt_bytes(size: int) -> str:
    """A size in binary units (B, KiB, MiB, GiB), as the widget shows it."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


NBSP = "\u00a0"  # a no-break space: what joins a number to its unit in HTML (js/src/shared/format.js NBSP)
_NUMBER_UNIT = re.compile(r"(?<=\d) (?=(?:ms|s|min|B|KiB|MiB|GiB|TiB|%)(?!\w))|(?<=\d min) (?=\d)")


def keep_units(text: str) -> str:
    """``text`` with each number joined to its unit by a no-break space ("669.8 KiB", "3 min 04.2 s"), for HTML:
    a line never wraps between them. Terminal text keeps plain spaces (:func:`fit_lines` glues them itself)."""
    return _NUMBER_UNIT.sub(NBSP, text)


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is an interactive terminal (not a pipe, a file, or a dumb TERM)."""
    if os.environ.get("TERM", "") in ("dumb", "unknown"):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


_GLUE = "\x00"  # joins a number to its unit while wrapping (escaped text holds no raw NUL)
_UNIT = re.compile(r"(?<=\d) (?=(?:ms|s|min|B|KiB|MiB|GiB|TiB|%|steps?|layers?)\b)")


def terminal_width(stream: IO[str]) -> int | None:
    """The width of the terminal ``stream`` shows on, in columns; None where it is no terminal (a pipe, a file)."""
    if not is_terminal(stream):
        return None
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return None


def fit_lines(text: str, stream: IO[str]) -> str:
    """``text`` wrapped between words to the width of ``stream`` where it is a terminal (the terminal's own wrap
    breaks words), unchanged elsewhere: a number keeps its unit, a word longer than a line (a path) folds, and a
    wrapped line's continuation keeps its indent."""
    import textwrap

    width = terminal_width(stream)
    if width is None or width < 20:
        return text
    lines: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            lines.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))][: min(8, width // 4)]  # outside text may lead with many
        wrapped = textwrap.wrap(
            _UNIT.sub(_GLUE, line), width=width, subsequent_indent=indent, break_on_hyphens=False, tabsize=1
        )
        lines += [part.replace(_GLUE, " ") for part in wrapped] or [""]
    return "\n".join(lines)


def say(text: str, stream: IO[str] | None = None) -> None:
    """Print ``text`` (prose we made, quoting untrusted text) on ``stream`` (default stdout): escaped, and wrapped
    between words in a terminal (:func:`fit_lines`)."""
    import sys

    out = stream if stream is not None else sys.stdout
    print(fit_lines(escape_lines(text), out), file=out, flush=True)


_PIECE = re.compile(r"[^\s,|]*[,|]|[^\s,|]+|\s+")  # a word (a choice ending in its comma, an option in its |), or space


def _fold(line: str, width: int) -> list[str]:
    """``line`` in lines of at most ``width`` columns, broken between words or after a choice's comma ("{build,
    demo,...}"), never inside one (the terminal would: "chec|k"); a piece longer than a line folds."""
    if len(line) <= width:
        return [line]
    lead = line[: len(line) - len(line.lstrip(" "))][: width // 2]
    indent = lead + "  "
    out: list[str] = []
    current, space = lead, ""
    for piece in _PIECE.findall(line.strip()):
        if piece.isspace():
            space = piece  # kept where the line goes on (a table's columns), dropped where it breaks
            continue
        if current.strip() and len(current) + len(space) + len(piece) > width:
            out.append(current)
            current, space = indent, ""
        current += space + piece
        space = ""
        while len(current) > width:  # a word longer than the line: folded
            out.append(current[:width])
            current = indent + current[width:]
    out.append(current)
    return out


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, wrapped between words at any width: argparse breaks a flag at its hyphen ("--opt-|level")
    and leaves a line it cannot break (the choices "{build,...,run}") for the terminal to break mid-word."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(self._whitespace_matcher.sub(" ", text).strip(), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        text = self._whitespace_matcher.sub(" ", text).strip()
        return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)

    def format_help(self) -> str:
        width = self._width + 2  # argparse keeps 2 columns spare; a line may use them
        return "\n".join(folded for line in super().format_help().split("\n") for folded in _fold(line, width))


class RawHelpFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """:class:`HelpFormatter` whose description and epilog keep their lines (a table of examples), folded where
    longer than the terminal."""
