"""Splitting a byte stream into complete lines, bounded in memory.

Every append-only format is read through ``LineSplitter``: it keeps a trailing partial line until
its newline arrives, and refuses to buffer a line beyond ``max_line_bytes`` (the rest of that line
is dropped and reported once it ends), so one runaway record cannot exhaust memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

#: Lines longer than this are skipped (counted), never buffered whole.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: Read size for streaming a file.
CHUNK_BYTES = 1024 * 1024
#: a UTF-8 byte-order mark, which some editors and Windows tools put at the start of a file
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Line:
    """One complete line: its bytes (without the newline) and where it starts in the file."""

    data: bytes
    offset: int
    #: the line was longer than the limit; ``data`` is empty and the line must be counted skipped.
    oversized: bool = False


class LineSplitter:
    """Turns chunks of bytes into complete ``Line``s.

    ``consumed`` is the file offset just after the last complete line handed out. A UTF-8
    byte-order mark at the very start of the file is dropped from the first line (its bytes
    still count in the offsets), so that line's record parses like any other.
    """

    def __init__(self, start_offset: int = 0, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.consumed = start_offset
        self.max_line_bytes = max_line_bytes
        self._partial = bytearray()
        self._dropping = False  # inside an oversized line: discard until its newline
        self._first = start_offset == 0  # the next line is the file's first: may carry a BOM

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete last line held back (or skipped) so far."""
        return len(self._partial)

    def feed(self, chunk: bytes) -> Iterator[Line]:
        for line in self._lines(chunk):
            yield self._without_bom(line)

    def _without_bom(self, line: Line) -> Line:
        if not self._first:
            return line
        self._first = False
        if line.data.startswith(BOM):
            return Line(line.data[len(BOM):], line.offset, line.oversized)
        return line

    def _lines(self, chunk: bytes) -> Iterator[Line]:
        start = 0
        size = len(chunk)
        while start < size:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                self._hold(chunk, start, size)
                return
            if self._dropping:
                line_start = self.consumed
                self.consumed += len(self._partial) + (nl - start) + 1
                self._partial.clear()
                self._dropping = False
                yield Line(b"", line_start, oversized=True)
            elif self._partial:
                self._partial += chunk[start:nl]
                data = bytes(self._partial)
                self._partial.clear()
                line_start = self.consumed
                self.consumed += len(data) + 1
                if len(data) > self.max_line_bytes:
                    yield Line(b"", line_start, oversized=True)
                else:
                    yield Line(data, line_start)
            else:
                line_start = self.consumed
                self.consumed += nl - start + 1
                if nl - start > self.max_line_bytes:
                    yield Line(b"", line_start, oversized=True)
                else:
                    yield Line(chunk[start:nl], line_start)
            start = nl + 1

    def _hold(self, chunk: bytes, start: int, end: int) -> None:
        if self._dropping:
            # keep only a count of the dropped bytes (as zero bytes would cost memory)
            self.consumed += end - start
            return
        self._partial += chunk[start:end]
        if len(self._partial) > self.max_line_bytes:
            self.consumed += len(self._partial)
            self._partial.clear()
            self._dropping = True

    def flush(self) -> Line | None:
        """The unterminated last line, for whole-file reads (a tail keeps it buffered instead)."""
        if self._dropping:
            self._dropping = False
            return Line(b"", self.consumed, oversized=True)
        if not self._partial:
            return None
        data = bytes(self._partial)
        self._partial.clear()
        line = Line(data, self.consumed)
        self.consumed += len(data)
        return self._without_bom(line)
