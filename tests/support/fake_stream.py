"""The fake LLM server's streamed replies: a rendered reply as the providers' SSE events.

``sse_events(provider, payload, request)`` turns the JSON reply ``render_step`` built into the
event sequence the real API sends for the same reply (OpenAI ``chat.completion.chunk`` objects
ending in a usage chunk when ``stream_options.include_usage`` was asked, then ``[DONE]``;
Anthropic ``message_start`` ... ``message_stop`` with ``input_json_delta`` pieces for tool
input and a ``ping``). The misbehaving kinds (garbage, a stream cut off, a stream that never
ends) are built here too, so the handler only writes bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

#: characters per text / argument delta (real servers send a token or a few per event)
PIECE = 12


def _pieces(text: str, size: int = PIECE) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or []


def frame(data: Any, event: str | None = None) -> bytes:
    """One SSE event: an optional ``event:`` line, a ``data:`` line, a blank line."""
    body = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n".encode()


def sse_events(provider: Literal["openai", "anthropic"], payload: dict[str, Any],
               request: dict[str, Any]) -> list[bytes]:
    """The whole stream for one rendered reply."""
    if provider == "openai":
        return list(_openai_events(payload, request))
    return list(_anthropic_events(payload))


def _openai_chunk(payload: dict[str, Any], delta: dict[str, Any],
                  finish: str | None = None) -> dict[str, Any]:
    return {"id": payload["id"], "object": "chat.completion.chunk",
            "created": payload["created"], "model": payload["model"],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _openai_events(payload: dict[str, Any], request: dict[str, Any]) -> Iterator[bytes]:
    choice = payload["choices"][0]
    message = choice["message"]
    yield frame(_openai_chunk(payload, {"role": "assistant", "content": ""}))
    for piece in _pieces(message.get("content") or ""):
        yield frame(_openai_chunk(payload, {"content": piece}))
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        yield frame(_openai_chunk(payload, {"tool_calls": [
            {"index": index, "id": call["id"], "type": "function",
             "function": {"name": function["name"], "arguments": ""}}]}))
        for piece in _pieces(function["arguments"]):
            yield frame(_openai_chunk(payload, {"tool_calls": [
                {"index": index, "function": {"arguments": piece}}]}))
    yield frame(_openai_chunk(payload, {}, choice["finish_reason"]))
    options = request.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        yield frame({"id": payload["id"], "object": "chat.completion.chunk",
                     "created": payload["created"], "model": payload["model"],
                     "choices": [], "usage": payload["usage"]})
    yield frame("[DONE]")


def _anthropic_events(payload: dict[str, Any]) -> Iterator[bytes]:
    usage = payload["usage"]
    start = {**payload, "content": [], "stop_reason": None,
             "usage": {**usage, "output_tokens": 1}}
    yield frame({"type": "message_start", "message": start}, "message_start")
    yield frame({"type": "ping"}, "ping")
    for index, block in enumerate(payload["content"]):
        if block["type"] == "text":
            yield frame({"type": "content_block_start", "index": index,
                         "content_block": {"type": "text", "text": ""}}, "content_block_start")
            for piece in _pieces(block["text"]):
                yield frame({"type": "content_block_delta", "index": index,
                             "delta": {"type": "text_delta", "text": piece}},
                            "content_block_delta")
        else:
            raw = block["input"]
            text = raw if isinstance(raw, str) else json.dumps(raw)
            yield frame({"type": "content_block_start", "index": index,
                         "content_block": {"type": "tool_use", "id": block["id"],
                                           "name": block["name"], "input": {}}},
                        "content_block_start")
            for piece in _pieces(text):
                yield frame({"type": "content_block_delta", "index": index,
                             "delta": {"type": "input_json_delta", "partial_json": piece}},
                            "content_block_delta")
        yield frame({"type": "content_block_stop", "index": index}, "content_block_stop")
    yield frame({"type": "message_delta",
                 "delta": {"stop_reason": payload["stop_reason"], "stop_sequence": None},
                 "usage": {"output_tokens": usage["output_tokens"]}}, "message_delta")
    yield frame({"type": "message_stop"}, "message_stop")


def cut_off(events: list[bytes], keep: float = 0.5) -> list[bytes]:
    """The first part of a stream: the server stops mid-reply (no terminator)."""
    return events[: max(1, int(len(events) * keep))]


def garbage_events() -> list[bytes]:
    """A stream whose data is not the format: a start, then bytes that are not JSON."""
    return [b"data: {\"id\": \"x\", \"choices\": [\n\n", b"data: <html>502 Bad Gateway\n\n"]


def endless_events(provider: Literal["openai", "anthropic"], model: str) -> Iterator[bytes]:
    """A reply that never ends: text deltas forever (the handler paces and stops them)."""
    if provider == "openai":
        base = {"id": "chatcmpl-endless", "object": "chat.completion.chunk", "created": 0,
                "model": model}
        yield frame({**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                 "content": ""},
                                          "finish_reason": None}]})
        while True:
            yield frame({**base, "choices": [{"index": 0, "delta": {"content": "and so on, "},
                                              "finish_reason": None}]})
    yield frame({"type": "message_start", "message": {
        "id": "msg_endless", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 1}}},
        "message_start")
    yield frame({"type": "content_block_start", "index": 0,
                 "content_block": {"type": "text", "text": ""}}, "content_block_start")
    while True:
        yield frame({"type": "content_block_delta", "index": 0,
                     "delta": {"type": "text_delta", "text": "and so on, "}},
                    "content_block_delta")
