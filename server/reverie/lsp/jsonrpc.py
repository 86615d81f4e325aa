"""The JSON-RPC side of pygls that Reverie overrides: ``ReverieProtocol``.

Each override is a real fix, and each reaches into pygls beyond its documented API, so each
has a guard test (``tests/unit/lsp/test_jsonrpc_guards.py``) that fails when the pygls
signature or attribute it relies on changes (``pygls>=2.1,<3`` allows minor releases that
could). What to propose upstream, so these can go:

- lifecycle enforcement (``handle_message``): a request before ``initialize`` answered
  ``ServerNotInitialized``, a second ``initialize`` refused, requests after ``shutdown``
  answered ``InvalidRequest`` (the LSP spec's rules; pygls lets them through);
- ``structure_message``: a message that does not fit its type refused as ``InvalidParams`` in
  one log line (pygls logs a traceback and keeps the payload alive in it); uses the private
  ``_converter`` and ``_result_types``;
- ``_send_handler_result`` (private): a ``JsonRpcException`` raised by a handler is a refusal,
  logged in one line, and its traceback dropped (pygls logs it as a server error); uses the
  private ``_request_futures`` and ``_send_response``;
- ``lsp_shutdown``: iterate over a copy of ``_request_futures`` (pygls cancels while iterating
  the dict the cancel callbacks shrink);
- ``lsp_exit``: ask the server to stop reading instead of raising ``SystemExit`` inside a loop
  callback;
- ``lsp_workspace__execute_command``: hand the arguments through without resolving the
  handler's type hints on every call (``typing.get_type_hints``);
- ``get_message_type``: keep our own notification's params as plain JSON;
- ``notify``: notifications may share a write (``BatchingWriter``).
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

import attrs
from lsprotocol import types
from lsprotocol.types import ResponseErrorMessage
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)
from pygls.protocol.language_server import lsp_method

from reverie.lsp.protocol import Notifications
from reverie.lsp.stdio import BatchingWriter

logger = logging.getLogger(__name__)


def _leaf_errors(exc: BaseException) -> list[str]:
    """The innermost messages of a cattrs error group (what is actually wrong)."""
    inner = getattr(exc, "exceptions", None)
    if not inner:
        return [str(exc).splitlines()[0] if str(exc) else type(exc).__name__]
    out: list[str] = []
    for sub in inner:
        out.extend(_leaf_errors(sub))
    return out


@attrs.define
class RawNotification:
    """A client notification whose params we validate ourselves (pydantic), kept as plain JSON."""

    method: str
    jsonrpc: str
    params: Any = None


class ReverieProtocol(LanguageServerProtocol):
    """Keeps the params of our custom client notifications as plain dicts, not namedtuples, and
    enforces the LSP lifecycle pygls leaves open: a request before ``initialize`` is answered
    ``-32002`` at once (notifications then are dropped, ``exit`` excepted), a second
    ``initialize`` is refused, and a request after ``shutdown`` gets ``InvalidRequest``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_seen = False

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None)
        is_request = method is not None and msg_id is not None
        if method == types.INITIALIZE and is_request:
            if self._initialize_seen:
                self._refuse(msg_id, -32600, "the server is already initialized")
                return
            self._initialize_seen = True
        elif method is not None and method != types.EXIT and not self._initialize_seen:
            if is_request:
                self._refuse(msg_id, JsonRpcServerNotInitialized.CODE,
                             "the server is not initialized yet (send initialize first)")
            return
        elif is_request and self._shutdown:
            self._refuse(msg_id, -32600, "the server is shutting down")
            return
        super().handle_message(message)

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls' message structuring, but a message that does not fit its type is refused with
        one log line (``JsonRpcInvalidParams``), not a logged traceback."""
        if "jsonrpc" not in data:
            return data
        method = data.get("method", "")
        try:
            if "id" in data:
                if "error" in data:
                    return self._converter.structure(data, ResponseErrorMessage)
                if "method" in data:
                    kind = self.get_message_type(method) or JsonRPCRequestMessage
                    return self._converter.structure(data, kind)
                kind = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
                return self._converter.structure(data, kind)
            kind = self.get_message_type(method) or JsonRPCNotification
            return self._converter.structure(data, kind)
        except Exception as exc:
            detail = "; ".join(_leaf_errors(exc))[:300] or type(exc).__name__
            logger.info("refused %s: %s", method or "a message", detail)
            raise JsonRpcInvalidParams(f"Invalid params for {method or 'message'}: "
                                       f"{detail}") from None

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """pygls' version logs a traceback for every refused request (a command's invalid
        arguments are bad input, not a server error) and keeps the traceback, and with it the
        request's arguments, alive as long as anything holds the future. Refusals are logged in
        one line; the traceback is dropped once the error response is sent."""
        if future.cancelled() or future.exception() is None:
            super()._send_handler_result(future, msg_id=msg_id)
            return
        exc = future.exception()
        if not isinstance(exc, JsonRpcException):
            super()._send_handler_result(future, msg_id=msg_id)
            exc.__traceback__ = None
            return
        self._request_futures.pop(msg_id, None)
        logger.info("request %s refused: %s", msg_id, exc)
        self._send_response(msg_id, error=exc.to_response_error())
        exc.__traceback__ = None

    def _refuse(self, msg_id: Any, code: int, text: str) -> None:
        self._send_data({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": code, "message": text}})

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """Stop reading and end the process with 0 after ``shutdown``, else 1. (pygls raises
        ``SystemExit`` from inside a loop callback, which tears the loop down mid-flight.)"""
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        request_exit = getattr(self._server, "request_exit", None)
        if callable(request_exit):  # ``ReverieLanguageServer.request_exit``
            request_exit(0 if self._shutdown else 1)
            return None
        raise SystemExit(0 if self._shutdown else 1)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls' shutdown, iterating over a copy of the pending requests: cancelling one runs
        its callback at once, which removes it from the dict being iterated."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    def get_message_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        if method == Notifications.APPEND_MESSAGES:
            return RawNotification
        return super().get_message_type(method)

    def notify(self, method: str, params: Any | None = None) -> None:
        """Notifications may wait a few milliseconds to share a write (``BatchingWriter``)."""
        writer = self.writer
        if isinstance(writer, BatchingWriter):
            with writer.deferring():
                super().notify(method, params)
        else:
            super().notify(method, params)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(
        self, params: types.ExecuteCommandParams
    ) -> Generator[Any, Any, Any]:
        """Every Reverie command takes ``(ls, *args)`` and validates its one JSON object itself
        (``handlers.parse_args``): the arguments go through as they are. pygls' own version
        resolves the handler's type hints again on every call (``typing.get_type_hints``)."""
        handler = self.fm.commands.get(params.command)
        if handler is None:
            raise JsonRpcInvalidParams.of(
                ValueError(f"Command name {params.command!r} is not defined")
            )
        result = yield handler, tuple(params.arguments or ()), None
        return result
