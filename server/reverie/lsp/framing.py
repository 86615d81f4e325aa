"""Reading LSP frames (``Content-Length`` header, blank line, JSON body) that bad input cannot
wedge.

pygls' own loop trusts the header: a ``Content-Length`` that is too long waits forever for bytes
that never come (later requests are swallowed as body), one that is too short or non-numeric
leaves the stream out of step for good, a header line over the reader's limit raises out of
the loop, and a body it cannot structure gets no response at all. Here:

- the stream is resynchronised on the next ``Content-Length:`` after anything unusable
  (junk between frames, a bad header, a body that is not JSON: the search includes the body,
  so a request swallowed by a too-long length is still found and answered);
- a body that stops arriving for ``body_idle_seconds`` ends its frame (too-long length);
- a body over ``max_body`` bytes is skipped as it streams in, never held in memory;
- headers are bounded (``HEADER_LIMIT``);
- every request we could not take gets an error response with its id when the id can be
  recovered from the bytes (else id ``null``, as JSON-RPC prescribes for parse errors).

Only the reading is here; a good frame goes to the protocol exactly as pygls would hand it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

#: longest header block accepted (pygls' stdin reader limit, kept)
HEADER_LIMIT = 1 << 16
#: largest message body taken in; a bigger one is skipped as it arrives (the transcript line
#: limit, ``reverie.transcripts.lines.MAX_LINE_BYTES``, is the same)
MAX_BODY_BYTES = 16 * 1024 * 1024
#: a body that stops arriving for this long ends its frame (a ``Content-Length`` too long)
BODY_IDLE_SECONDS = 3.0
#: bytes read per call
READ_BYTES = 1 << 16

_MARKER = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_END = b"\r\n\r\n"
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class BadFrame:
    """A frame that could not be taken in: what to answer (if a request id was recovered)."""

    code: int
    message: str
    msg_id: int | str | None = None
    #: answer even without an id (JSON-RPC: a parse error is answered with id null)
    answer_without_id: bool = False


def recover_id(data: bytes) -> int | str | None:
    """The id of a request in a (possibly cut or broken) body, when it is one. Only the bytes
    before the next ``Content-Length:`` count: after it starts another message."""
    head = data[:4096]
    following = _MARKER.search(head, 1)
    if following is not None:
        head = head[: following.start()]
    match = _ID.search(head)
    if match is None or b'"method"' not in head:
        return None
    raw = match.group(1)
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


class FrameReader:
    """Frames from ``read`` (a coroutine returning the next bytes, ``b""`` at end of input)."""

    def __init__(self, read: Callable[[], Awaitable[bytes]], *, max_body: int = MAX_BODY_BYTES,
                 body_idle_seconds: float = BODY_IDLE_SECONDS) -> None:
        self._read = read
        self._buf = bytearray()
        self._eof = False
        self.max_body = max_body
        self.body_idle_seconds = body_idle_seconds
        #: frames refused so far (for logs and tests)
        self.bad_frames = 0

    async def _fill(self, timeout: float | None = None) -> bool:
        """Read more into the buffer; False at end of input (or when ``timeout`` passed)."""
        if self._eof:
            return False
        try:
            if timeout is None:
                data = await self._read()
            else:
                data = await asyncio.wait_for(self._read(), timeout)
        except TimeoutError:
            return False
        if not data:
            self._eof = True
            return False
        self._buf += data
        return True

    async def next(self) -> bytes | BadFrame | None:
        """The next body, a ``BadFrame`` to answer, or None at end of input."""
        while True:
            start = await self._find_marker()
            if start is None:
                return None
            del self._buf[:start]
            end = self._buf.find(_HEADER_END)
            while end < 0 and len(self._buf) <= HEADER_LIMIT:
                if not await self._fill():
                    return None
                end = self._buf.find(_HEADER_END)
            if end < 0 or end > HEADER_LIMIT:
                self._skip_marker()
                return self.refuse(INVALID_REQUEST, f"header longer than {HEADER_LIMIT} bytes")
            header = bytes(self._buf[:end])
            del self._buf[: end + len(_HEADER_END)]
            length = _content_length(header)
            if length is None:
                return self.refuse(INVALID_REQUEST, "Content-Length is not a non-negative number",
                                 recover_id(bytes(self._buf[:4096])))
            if length > self.max_body:
                return await self._skip_body(length)
            body = await self._body(length)
            if body is None:
                return None
            if isinstance(body, BadFrame):
                return body
            return body

    async def _find_marker(self) -> int | None:
        """Offset of the next ``Content-Length:`` in the buffer (reading as needed); junk before
        it is dropped, and a long run of junk is never kept."""
        while True:
            match = _MARKER.search(self._buf)
            if match is not None:
                if match.start() and self._buf[: match.start()].strip():
                    self.bad_frames += 1
                    logger.warning("skipped %d bytes of non-LSP input", match.start())
                return match.start()
            keep = len(b"content-length:") + 16
            if len(self._buf) > HEADER_LIMIT:
                self.bad_frames += 1
                logger.warning("skipped %d bytes of non-LSP input", len(self._buf) - keep)
                del self._buf[:-keep]
            if not await self._fill():
                return None

    def _skip_marker(self) -> None:
        """Resynchronise after the current ``Content-Length:`` (the next search moves on)."""
        del self._buf[:1]

    def refuse(self, code: int, message: str, msg_id: int | str | None = None,
             answer_without_id: bool = False) -> BadFrame:
        self.bad_frames += 1
        logger.warning("refused an LSP message: %s", message)
        return BadFrame(code, message, msg_id, answer_without_id)

    async def _body(self, length: int) -> bytes | BadFrame | None:
        while len(self._buf) < length:
            if not await self._fill(self.body_idle_seconds):
                if self._eof and not self._buf:
                    return None
                # the declared length is longer than what the client sent
                partial = bytes(self._buf)
                self._buf.clear()
                self._resync_inside(partial)
                if self._eof and not self._buf:
                    return None
                return self.refuse(INVALID_REQUEST, "Content-Length is longer than the message",
                                 recover_id(partial))
        body = bytes(self._buf[:length])
        del self._buf[:length]
        return body

    async def _skip_body(self, length: int) -> BadFrame | None:
        """Drop a body over the size limit as it arrives (never more than a read in memory)."""
        first = bytes(self._buf[:4096])
        remaining = length
        while remaining > 0:
            if not self._buf and not await self._fill(self.body_idle_seconds):
                break
            taken = min(remaining, len(self._buf))
            del self._buf[:taken]
            remaining -= taken
        msg_id = recover_id(first)
        return self.refuse(INVALID_REQUEST, f"message of {length} bytes is over the "
                                          f"{self.max_body}-byte limit", msg_id)

    def bad_body(self, body: bytes, code: int, message: str) -> BadFrame:
        """A body that came whole but cannot be used: resynchronise inside it (a request a
        too-long length swallowed is found again) and say what to answer."""
        self._resync_inside(body)
        return self.refuse(code, message, recover_id(body), answer_without_id=True)

    def _resync_inside(self, data: bytes) -> None:
        """Put everything after the first byte of an unusable body back in front of the
        buffer: the next ``Content-Length:`` may start inside it, or straddle its end."""
        self._buf[:0] = data[1:]


def _content_length(header: bytes) -> int | None:
    for line in header.split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"content-length":
            text = value.strip()
            if not text.isdigit() or len(text) > 12:
                return None
            return int(text)
    return None


def error_response(bad: BadFrame) -> dict[str, Any] | None:
    """The JSON-RPC error response for a refused frame, or None when there is no one to tell."""
    if bad.msg_id is None and not bad.answer_without_id:
        return None
    return {"jsonrpc": "2.0", "id": bad.msg_id,
            "error": {"code": bad.code, "message": bad.message}}


async def serve_frames(reader: FrameReader, protocol: Any, *, should_stop: Callable[[], bool],
                       on_error: Callable[[Exception], None] | None = None) -> None:
    """Hand every good frame to ``protocol`` (a pygls ``JsonRPCProtocol``) and answer the bad
    ones, until end of input or ``should_stop()``. Never raises for bad input."""
    while not should_stop():
        item = await reader.next()
        if item is None:
            return
        if isinstance(item, BadFrame):
            _answer(protocol, item)
            continue
        message = _structure(reader, protocol, item)
        if message is None:
            continue
        try:
            protocol.handle_message(message)
        except Exception as exc:  # a handler bug must not end the server
            logger.exception("unable to handle a message")
            if on_error is not None:
                on_error(exc)


def _structure(reader: FrameReader, protocol: Any, body: bytes) -> Any | None:
    """The message pygls would build from ``body``; None after answering what is wrong."""
    try:
        message = json.loads(body, object_hook=protocol.structure_message)
    except (ValueError, RecursionError):
        _answer(protocol, reader.bad_body(body, PARSE_ERROR, "Parse error: invalid JSON"))
        return None
    except Exception as exc:  # pygls: JsonRpcInvalidParams / JsonRpcInternalError
        try:  # the hook ran before the decoder saw the rest: is the body JSON at all?
            json.loads(body)
        except (ValueError, RecursionError):
            _answer(protocol, reader.bad_body(body, PARSE_ERROR, "Parse error: invalid JSON"))
            return None
        code = getattr(exc, "code", INVALID_PARAMS)
        text = getattr(exc, "message", None) or "Invalid params"
        _answer(protocol, reader.refuse(code if isinstance(code, int) else INVALID_PARAMS,
                                      str(text), recover_id(body)))
        return None
    if not hasattr(message, "jsonrpc"):
        _answer(protocol, reader.refuse(INVALID_REQUEST, "Invalid Request: not a JSON-RPC message",
                                      recover_id(body), answer_without_id=True))
        return None
    return message


def _answer(protocol: Any, bad: BadFrame) -> None:
    response = error_response(bad)
    if response is None:
        return
    try:
        protocol._send_data(response)
    except Exception:
        logger.exception("could not answer a refused message")
