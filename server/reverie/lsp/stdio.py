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
import contextlib
import os
import stat
import sys
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

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

    async def read(self) -> bytes:
        """Whatever arrived (up to 64 KiB, at least one byte); ``b""`` at end of input."""
        return await (await self._stream()).read(_HEADER_LIMIT)

    async def readexactly(self, n: int) -> bytes:
        """A body of ``n`` bytes; at end of input whatever arrived (``b""`` stops pygls)."""
        try:
            return await (await self._stream()).readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


class ThreadReader:
    """``read`` for a stdin the loop cannot watch (a terminal, a regular file): one executor
    round trip per read, as pygls' own reader does."""

    def __init__(self, stdin: BinaryIO) -> None:
        self._stdin = stdin

    async def read(self) -> bytes:
        read1 = getattr(self._stdin, "read1", None) or self._stdin.read
        return await asyncio.get_running_loop().run_in_executor(None, read1, _HEADER_LIMIT)


class BatchingWriter:
    """pygls' stdout writer that sends notifications in batches.

    Every write to the client's pipe wakes the client up, and on a busy machine the client then
    often runs on the server's CPU before the write returns (pipe wake-ups favour the writer's
    CPU): about half a millisecond of the event loop per message. Responses and the server's
    own requests go out at once. Notifications (``deferring()``) are held for at most ``delay``
    seconds and go out in one write, or with the next response; what was held always goes
    first, so the order of messages is kept.
    """

    def __init__(self, stdout: BinaryIO, delay: float = 0.02) -> None:
        self._stdout = stdout
        self._delay = delay
        self._held: list[bytes] = []
        self._timer: asyncio.TimerHandle | None = None
        self._defer = False

    @contextlib.contextmanager
    def deferring(self) -> Iterator[None]:
        """Writes made inside may be held back a little (notifications)."""
        self._defer = True
        try:
            yield
        finally:
            self._defer = False

    def write(self, data: bytes) -> None:
        if self._defer:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # off the loop nothing would flush later: send it now
                loop = None
            if loop is not None:
                self._held.append(bytes(data))
                if self._timer is None:
                    self._timer = loop.call_later(self._delay, self.flush)
                return
        self._send(bytes(data))

    def flush(self) -> None:
        """Send what is held now."""
        self._send(b"")

    def _send(self, data: bytes) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._held:
            data = b"".join(self._held) + data
            self._held.clear()
        if data:
            self._stdout.write(data)
            self._stdout.flush()

    def close(self) -> None:
        self.flush()
        self._stdout.close()


def quiet_after_exit(stop: threading.Event, loop: asyncio.AbstractEventLoop,
                      context: dict[str, Any]) -> None:
    """Once ``exit`` arrived, handlers still running are cancelled as the loop ends; pygls then
    reports each cancellation as an error in a callback. Those are expected: drop them."""
    if stop.is_set() and isinstance(context.get("exception"), asyncio.CancelledError):
        return
    loop.default_exception_handler(context)
