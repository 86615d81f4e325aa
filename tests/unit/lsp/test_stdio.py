"""``reverie.lsp.stdio``: stdin read on the event loop when it is a pipe."""

from __future__ import annotations

import io
import os
from pathlib import Path

from reverie.lsp.stdio import LoopPipeReader, can_read_on_loop


def test_only_pipes_and_sockets_are_read_on_the_loop(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as pipe, os.fdopen(write_fd, "wb"):
        assert can_read_on_loop(pipe)
    with (tmp_path / "input").open("wb+") as regular:
        assert not can_read_on_loop(regular)
    assert not can_read_on_loop(io.BytesIO(b"Content-Length: 2\r\n\r\n{}"))


async def test_reads_lsp_frames_then_end_of_input() -> None:
    body = b'{"jsonrpc": "2.0", "method": "exit"}'
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as pipe:
        os.write(write_fd, b"Content-Length: %d\r\n\r\n" % len(body) + body + b"Content-Le")
        reader = LoopPipeReader(pipe)
        assert await reader.readline() == b"Content-Length: %d\r\n" % len(body)
        assert await reader.readline() == b"\r\n"
        assert await reader.readexactly(len(body)) == body
        os.close(write_fd)
        # a frame cut by the end of input: what arrived, then b"" (pygls stops on it)
        assert await reader.readexactly(100) == b"Content-Le"
        assert await reader.readline() == b""
