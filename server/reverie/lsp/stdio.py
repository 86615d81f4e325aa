"""Reading the client's stdin on the event loop itself.

pygls 2 reads stdin through a thread pool: one executor round trip per header line and one per
body, each a hand-off of the GIL from a worker thread to the event loop and back. While a
transcript is parsed in another thread each hand-off can wait a switch interval plus OS
scheduling, so a request paid that wait three times before it was even handled
(``tests/bench/lsp.py``, status under load). When stdin is a pipe or a socket the loop can
watch it directly: a request that arrives in one write is read in one wake-up.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from typing import BinaryIO

#: largest header line accepted (the body has no limit: ``readexactly``)
_HEADER_LIMIT = 1 << 16


def can_read_on_loop(stdin: BinaryIO) -> bool:
    """True when the loop can watch ``stdin``: a pipe or a socket on a POSIX system.

    Never a terminal or a regular file: the loop makes the descriptor non-blocking, which a
    terminal shares with stdout, and a regular file cannot be watched.
    """
    if sys.platform == "win32":
        return False
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError):  # no descriptor (e.g. a BytesIO in tests) or a closed one
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class LoopPipeReader:
    """pygls' ``AsyncReader`` over ``stdin``, read by the running loop (no reader thread)."""

    def __init__(self, stdin: BinaryIO) -> None:
        self._stdin = stdin
        self._reader: asyncio.StreamReader | None = None

    async def _stream(self) -> asyncio.StreamReader:
        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=_HEADER_LIMIT, loop=loop)
            await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader, loop=loop), self._stdin
            )
            self._reader = reader
        return self._reader

    async def readline(self) -> bytes:
        """One header line; ``b""`` at end of input (as pygls' reader returns)."""
        return await (await self._stream()).readline()

    async def readexactly(self, n: int) -> bytes:
        """A body of ``n`` bytes; at end of input whatever arrived (``b""`` stops pygls)."""
        try:
            return await (await self._stream()).readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial
