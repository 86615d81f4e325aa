"""One guard per pygls internal that ``reverie.lsp.jsonrpc`` (and the frame reader) relies on.

``pygls>=2.1,<3`` allows minor releases that change private API. Each test here names one
private method or attribute, checks the shape Reverie's override assumes, and fails with what to
look at when a pygls release changes it. The behaviour of the overrides is covered end to end
(``tests/hostile/test_lsp_frames.py``, ``tests/e2e/lsp``); these fail first and say why.
"""

from __future__ import annotations

import inspect
from concurrent.futures import Future
from typing import Any

import pytest
from lsprotocol import types
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from reverie.lsp.handlers import create_server
from reverie.lsp.jsonrpc import ReverieProtocol


@pytest.fixture(scope="module")
def protocol() -> ReverieProtocol:
    server = create_server()
    assert isinstance(server.protocol, ReverieProtocol)
    return server.protocol


def _parameters(func: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in inspect.signature(func).parameters.values()]


P = inspect.Parameter


def test_send_handler_result_takes_the_future_and_a_keyword_msg_id() -> None:
    """``ReverieProtocol._send_handler_result`` replaces pygls' request-done callback, which
    pygls binds as ``partial(self._send_handler_result, msg_id=msg_id)``."""
    assert _parameters(JsonRPCProtocol._send_handler_result) == [
        ("self", P.POSITIONAL_OR_KEYWORD), ("future", P.POSITIONAL_OR_KEYWORD),
        ("msg_id", P.KEYWORD_ONLY)]
    source = inspect.getsource(JsonRPCProtocol)
    assert "partial(self._send_handler_result, msg_id=msg_id)" in source


def test_send_response_takes_msg_id_result_and_error() -> None:
    """Used to answer a refusal in one line (``_send_handler_result``)."""
    names = [name for name, _ in _parameters(JsonRPCProtocol._send_response)]
    assert names[:4] == ["self", "msg_id", "result", "error"]


def test_send_data_writes_one_message() -> None:
    """Used to refuse a request before ``initialize`` and to answer a bad frame."""
    assert [name for name, _ in _parameters(JsonRPCProtocol._send_data)] == ["self", "data"]


def test_request_futures_is_a_dict_of_pending_requests(protocol: ReverieProtocol) -> None:
    """``_send_handler_result`` pops from it; ``lsp_shutdown`` cancels a copy of it."""
    assert isinstance(protocol._request_futures, dict)
    future: Future[Any] = Future()
    protocol._request_futures["guard"] = future
    try:
        assert protocol._request_futures.pop("guard") is future
    finally:
        protocol._request_futures.pop("guard", None)


def test_result_types_is_a_dict_by_request_id(protocol: ReverieProtocol) -> None:
    """``structure_message`` pops a response's type from it, as pygls' own version does."""
    assert isinstance(protocol._result_types, dict)
    assert "self._result_types.pop(data[\"id\"], None)" in inspect.getsource(
        JsonRPCProtocol.structure_message)


def test_converter_structures_lsp_messages(protocol: ReverieProtocol) -> None:
    """``structure_message`` calls ``self._converter.structure(data, type)``."""
    message = protocol._converter.structure(
        {"jsonrpc": "2.0", "id": 1, "method": "shutdown"}, types.ShutdownRequest)
    assert isinstance(message, types.ShutdownRequest) and message.id == 1


def test_shutdown_flag_and_server_back_reference(protocol: ReverieProtocol) -> None:
    """``handle_message`` reads ``_shutdown``; ``lsp_exit`` calls ``_server.request_exit``."""
    assert protocol._shutdown is False
    assert callable(getattr(protocol._server, "request_exit", None))


def test_msg_id_is_the_current_request(protocol: ReverieProtocol) -> None:
    """``lsp_shutdown`` keeps the shutdown request itself out of the cancelled ones."""
    assert isinstance(inspect.getattr_static(JsonRPCProtocol, "msg_id"), property)
    assert protocol.msg_id is None


def test_lsp_method_marks_builtin_features(protocol: ReverieProtocol) -> None:
    """Our ``lsp_exit`` / ``lsp_shutdown`` / ``lsp_workspace__execute_command`` replace pygls'
    because ``lsp_method`` sets ``method_name`` and the builtin registry is keyed by it."""

    @lsp_method("guard/method")
    def marked() -> None: ...

    assert marked.method_name == "guard/method"  # type: ignore[attr-defined]
    for method, ours in ((types.EXIT, ReverieProtocol.lsp_exit),
                         (types.SHUTDOWN, ReverieProtocol.lsp_shutdown),
                         (types.WORKSPACE_EXECUTE_COMMAND,
                          ReverieProtocol.lsp_workspace__execute_command)):
        assert hasattr(LanguageServerProtocol, ours.__name__), ours.__name__
        assert protocol.fm.builtin_features[method].__func__ is ours


def test_feature_manager_tables(protocol: ReverieProtocol) -> None:
    """``lsp_exit`` / ``lsp_shutdown`` find user handlers in ``fm.features``;
    ``lsp_workspace__execute_command`` finds commands in ``fm.commands``."""
    assert types.SHUTDOWN in protocol.fm.features
    assert "reverie.server.status" in protocol.fm.commands


def test_get_message_type_and_structure_message_signatures() -> None:
    """Overridden by name: a renamed parameter would still bind positionally, a removed method
    would silently stop being called."""
    assert [n for n, _ in _parameters(JsonRPCProtocol.get_message_type)] == ["self", "method"]
    assert [n for n, _ in _parameters(JsonRPCProtocol.structure_message)] == ["self", "data"]
    assert [n for n, _ in _parameters(JsonRPCProtocol.handle_message)] == ["self", "message"]
    assert [n for n, _ in _parameters(JsonRPCProtocol.notify)][:3] == ["self", "method", "params"]


def test_writer_is_what_set_writer_installs(protocol: ReverieProtocol) -> None:
    """``notify`` looks at ``self.writer`` for the ``BatchingWriter``."""
    class Sink:
        def write(self, data: bytes) -> None: ...
        def close(self) -> None: ...

    sink = Sink()
    protocol.set_writer(sink)  # type: ignore[arg-type]
    assert protocol.writer is sink
