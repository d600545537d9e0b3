"""Where a build's JSON events go: a file path (appended to), a writable text file, or a callable."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, Union, cast

from ._files import expand_user, refuse_nameless, resolve
from ._format import escape_json
from ._json import JSONObject

if TYPE_CHECKING:
    from ._events import Event

# a callable may be typed for the event TypedDicts (``_events.Event``) or for any JSON object
Sink = Union[str, "os.PathLike[str]", TextIO, Callable[["Event"], object], Callable[[JSONObject], object]]


def open_sink(sink: Sink) -> tuple[Callable[[Mapping[str, object]], None], Callable[[], None] | None]:
    """(write(event), close or None) for a path, a text file object or a callable."""
    if isinstance(sink, (str, os.PathLike)):
        path = resolve(sink)  # a symlink another user planted in a shared folder: UntrustedLink
        if path.is_dir():
            raise IsADirectoryError(f"events= must be a file path, but {path} is a directory")
        if not path.parent.is_dir():
            raise FileNotFoundError(f"events= file's directory does not exist: {path.parent}")
        try:  # /dev/stdout into a pipe: no name to open (O_NOFOLLOW) or create there
            refuse_nameless(sink, path)
        except OSError as exc:
            raise type(exc)(f"events=: {exc}") from None
        handle = _open_append(path)
        return _line_writer(handle), handle.close
    if hasattr(sink, "write"):
        return _line_writer(cast(TextIO, sink)), None  # a file-like object: mypy cannot narrow on hasattr
    if callable(sink):
        # it gets the dicts as they are: events (or a matrix's events with its own keys), each a JSON object
        function = cast("Callable[[Mapping[str, object]], object]", sink)

        def call(event: Mapping[str, object]) -> None:
            function(event)

        return call, None
    raise TypeError(f"events= must be a file path, a writable text file or a callable, got {type(sink).__name__}")


def _open_append(path: Path) -> TextIO:
    """``open(path, "a")`` that never blocks: a FIFO with no reader is refused instead of waiting for one."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)  # resolved: a link planted since is not followed (ELOOP)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise ValueError(
                f"events={str(path)!r} is a FIFO (or socket) that no process is reading: start its reader first, "
                "or pass a regular file"
            ) from None
        raise
    try:
        _refuse_planted(fd, path)
    except OSError:
        os.close(fd)
        raise
    os.set_blocking(fd, True)  # a reader exists: from now on writes wait for it, on the event writer thread
    return open(fd, "a", encoding="utf-8", errors="backslashreplace")


def _refuse_planted(fd: int, path: Path) -> None:
    """Refuse a file or FIFO that another user put in a sticky folder others may write (``/tmp``): appended to in
    place, it would hand them every event (model path, options, log lines). The kernel's protected_regular and
    protected_fifos rule, whatever the sysctl says; one's own files, root's and the folder owner's are written."""
    if os.name != "posix":
        return
    info = os.fstat(fd)
    if info.st_uid in (os.geteuid(), 0):
        return
    try:
        folder = os.stat(path.parent)
    except OSError:
        return
    shared = folder.st_mode & stat.S_ISVTX and folder.st_mode & (stat.S_IWOTH | stat.S_IWGRP)
    if shared and info.st_uid != folder.st_uid:
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a file"
        raise PermissionError(
            f"events={str(path)!r} is {kind} that another user (uid {info.st_uid}) put in the shared folder "
            f"{path.parent}: trt_widget does not write the events to them; remove it or choose another path"
        )


def describe(sink: Sink) -> str:
    """A short name for the sink in failure messages."""
    if isinstance(sink, (str, os.PathLike)):
        return str(expand_user(sink))
    name = getattr(sink, "name", None) if hasattr(sink, "write") else getattr(sink, "__qualname__", None)
    return repr(name if isinstance(name, str) else sink)[:120]


def _line_writer(handle: TextIO) -> Callable[[Mapping[str, object]], None]:
    """One JSON line per event, UTF-8 as it is, but a name holding a bidi override, U+2028 or a C1 control written
    as an escape (``\\u202e``): a terminal showing ``--json`` output or a ``cat`` of a recording gets none raw."""

    def write(event: Mapping[str, object]) -> None:
        handle.write(escape_json(json.dumps(event, ensure_ascii=False, default=str)) + "\n")
        flush = getattr(handle, "flush", None)
        if flush is not None:
            flush()

    return write


def quiet_stdout() -> None:
    """Point stdout's file descriptor at /dev/null, so that later writes and the interpreter's flush at exit find no
    closed pipe (the Python docs' recipe for SIGPIPE): for a command line whose reader went away (``| head``)."""
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (replaced): nothing left to flush into the pipe
        pass
    finally:
        os.close(devnull)


class PipeStdout:
    """The command line's stdout as an events sink: once its reader went away (``--json | head``), later events go
    nowhere, quietly (no warning: the reader has what it wanted); the build goes on and ends as it would. On a
    stdout whose encoding is not UTF-8 (``PYTHONIOENCODING``, a Latin-1 locale), a character it cannot hold is
    written as its JSON escape (the same value): one it refused dropped every later event."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.closed_early = False
        self._encoding = _codec(getattr(stream, "encoding", None))

    def write(self, text: str) -> int:
        if not self.closed_early:
            try:
                return self.stream.write(_encodable(text, self._encoding))
            except BrokenPipeError:
                self._closed()
        return len(text)

    def flush(self) -> None:
        if not self.closed_early:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._closed()

    def _closed(self) -> None:
        self.closed_early = True
        quiet_stdout()


def _codec(encoding: object) -> str:
    """The codec's canonical name ("utf-8" when unknown)."""
    import codecs

    try:
        return codecs.lookup(encoding).name if isinstance(encoding, str) else "utf-8"
    except LookupError:
        return "utf-8"


def _encodable(line: str, encoding: str) -> str:
    """A JSON line as ``encoding`` can write it: each character it cannot hold as a JSON ``\\u`` escape (outside
    JSON strings a line is ASCII, so every such character is inside one and the escape keeps its value)."""
    if encoding == "utf-8" or line.isascii():
        return line
    try:
        line.encode(encoding)
        return line
    except UnicodeEncodeError:
        pass
    out: list[str] = []
    for char in line:
        try:
            char.encode(encoding)
            out.append(char)
        except UnicodeEncodeError:
            code = ord(char)
            if code > 0xFFFF:  # a surrogate pair, as JSON writes one
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
            else:
                out.append(f"\\u{code:04x}")
    return "".join(out)
