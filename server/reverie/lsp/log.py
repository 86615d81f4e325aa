"""Forward Reverie's log records to the client's ``window/logMessage`` (never to stdout).

Records logged before the client is initialised are buffered and flushed once it is; records
from other threads are handed to the event loop, because the transport is not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable

from lsprotocol import types

from reverie.logsafety import RedactingFormatter

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

LogSender = Callable[[types.LogMessageParams], None]


def level_number(name: str) -> int:
    return _LEVELS.get(name, logging.INFO)


def _message_type(levelno: int) -> types.MessageType:
    if levelno >= logging.ERROR:
        return types.MessageType.Error
    if levelno >= logging.WARNING:
        return types.MessageType.Warning
    if levelno >= logging.INFO:
        return types.MessageType.Info
    return types.MessageType.Log


class ClientLogHandler(logging.Handler):
    """A ``logging.Handler`` whose records become ``window/logMessage`` notifications."""

    def __init__(self, level: int = logging.INFO, buffer_size: int = 500) -> None:
        super().__init__(level)
        self.setFormatter(RedactingFormatter("%(name)s: %(message)s"))
        self._buffer: deque[types.LogMessageParams] = deque(maxlen=buffer_size)
        self._send: LogSender | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._lock = threading.Lock()

    def connect(self, send: LogSender, loop: asyncio.AbstractEventLoop) -> None:
        """Start sending (from the loop thread) and flush what was buffered."""
        with self._lock:
            self._send = send
            self._loop = loop
            self._loop_thread = threading.get_ident()
            pending = list(self._buffer)
            self._buffer.clear()
        for params in pending:
            self._deliver(params)

    def disconnect(self) -> None:
        with self._lock:
            self._send = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception:  # a broken record must never take the server down
            self.handleError(record)
            return
        params = types.LogMessageParams(type=_message_type(record.levelno), message=text)
        with self._lock:
            if self._send is None:
                self._buffer.append(params)
                return
        self._deliver(params)

    def _deliver(self, params: types.LogMessageParams) -> None:
        send, loop = self._send, self._loop
        if send is None or loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            try:
                send(params)
            except Exception:  # the transport may be closing
                pass
        elif not loop.is_closed():
            try:
                loop.call_soon_threadsafe(send, params)
            except RuntimeError:  # loop closed between the check and the call
                pass


class OneLineRefusals(logging.Filter):
    """pygls logs every refused request (``RequestFailed``, invalid arguments) with a
    traceback at error level; a refusal is routine and the server already logs it as one line
    (``report_server_error``), so pygls's record is dropped. Real failures keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        from pygls.exceptions import JsonRpcException

        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, JsonRpcException)
