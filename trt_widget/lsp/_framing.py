"""The language server's input, framed: only well-formed messages reach pygls. Its reader never recovers from one
header block without a valid ``Content-Length`` (``Content-Length: abc``): the next message's body and header
merge and no later request is answered. Here such a block is skipped with a warning, and the stream resyncs at
the next ``Content-Length`` header, even one that follows the skipped body on the same line."""

from __future__ import annotations

import logging
import re
from typing import BinaryIO

log = logging.getLogger("trt_widget.lsp")
MAX_BODY = 256 << 20  # larger messages are skipped (read and dropped), never held in memory
_LENGTH = re.compile(rb"content-length:[ \t]*(\d{1,12})[ \t]*\r?\n?$", re.IGNORECASE)
_CHUNK = 1 << 20
MAX_LINE = 64 << 10  # of a header line, only the last MAX_LINE bytes are kept: a line without an end never fills memory


class FramedInput:
    """A readable byte stream (``readline``, ``read``) of the well-formed messages of ``raw``, for pygls."""

    def __init__(self, raw: BinaryIO, max_body: int = MAX_BODY) -> None:
        self.raw = raw
        self.max_body = max_body
        self._buffer = bytearray()
        self._eof = False

    def readline(self) -> bytes:
        while b"\n" not in self._buffer and self._next():
            pass
        end = self._buffer.find(b"\n") + 1 or len(self._buffer)
        return self._take(end)

    def read(self, size: int = -1) -> bytes:
        while (size < 0 or len(self._buffer) < size) and self._next():
            pass
        return self._take(len(self._buffer) if size < 0 else min(size, len(self._buffer)))

    def _take(self, count: int) -> bytes:
        piece = bytes(self._buffer[:count])
        del self._buffer[:count]
        return piece

    def _next(self) -> bool:
        """Append the next well-formed message to the buffer; False at the end of the input."""
        body = self.body()
        if body is None:
            return False
        self._buffer += b"Content-Length: %d\r\n\r\n" % len(body) + body
        return True

    def body(self) -> bytes | None:
        """The body of the next well-formed message; None at the end of the input."""
        while not self._eof:
            length: int | None = None
            headers = False
            while True:
                line = self._line()
                if not line:
                    self._eof = True
                    return None
                if not line.strip():  # the end of a header block
                    if headers:
                        break
                    continue  # blank lines between messages
                headers = True
                found = _LENGTH.search(line)
                if found:
                    length = int(found.group(1))
                elif b"content-length" in line.lower():
                    length = None  # a later valid one may still come in this block
            if length is None:
                log.warning("lsp: skipped a message without a valid Content-Length header")
                continue
            if length > self.max_body:
                log.warning("lsp: skipped a message of %d bytes (at most %d)", length, self.max_body)
                if not self._skip(length):
                    return None
                continue
            body = self.raw.read(length)
            if len(body) < length:
                self._eof = True
                return None
            return body
        return None

    def _line(self) -> bytes:
        """The next header line, or its last MAX_LINE bytes when longer (where a ``Content-Length`` after a
        skipped body still is); empty at the end of the input."""
        line = self.raw.readline(MAX_LINE)
        while len(line) >= MAX_LINE and not line.endswith(b"\n"):
            more = self.raw.readline(MAX_LINE)
            if not more:
                break
            line = (line + more)[-MAX_LINE:]
        return line

    def _skip(self, count: int) -> bool:
        while count > 0:
            piece = self.raw.read(min(count, _CHUNK))
            if not piece:
                self._eof = True
                return False
            count -= len(piece)
        return True
