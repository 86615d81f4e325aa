"""Server-sent events: the line framing and the two providers' streamed replies, assembled.

A streamed reply arrives as SSE events (``event:`` / ``data:`` lines, a blank line ends one).
``iter_sse`` turns lines into ``SseEvent``s; an assembler per wire protocol folds the events into
the same ``ModelReply`` the non-streaming path builds, so callers never see the difference:

- OpenAI Chat Completions: ``chat.completion.chunk`` objects whose ``choices[0].delta`` carries
  ``content`` and ``tool_calls`` fragments (keyed by ``index``; the first fragment of a call has
  its ``id`` and ``function.name``, the rest append to ``function.arguments``), a
  ``finish_reason`` on the last content chunk, with ``stream_options.include_usage`` one more
  chunk with empty ``choices`` and the ``usage``, then ``data: [DONE]``.
- Anthropic Messages: ``message_start`` (the message with its input usage),
  ``content_block_start`` / ``content_block_delta`` (``text_delta``, or ``input_json_delta``
  whose ``partial_json`` pieces form a tool call's input) / ``content_block_stop``,
  ``message_delta`` (``stop_reason`` and the output usage), ``message_stop``; ``ping`` any time;
  ``error`` mid-stream (e.g. ``overloaded_error``).

Assemblers raise ``LLMBadResponseError`` on data that is not the format (garbage) and count the
characters generated so the caller can report progress and stop a model that ignores its limit.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from reverie.llm.types import ModelReply, StopReason, ToolCallRequest
from reverie.types import Usage

#: characters per token when counting what a stream generated (usage arrives only at the end)
CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One server-sent event: its ``event`` name (``message`` when unnamed) and ``data``."""

    event: str
    data: str


async def iter_sse(lines: AsyncIterator[str]) -> AsyncIterator[SseEvent]:
    """SSE framing (the WHATWG rules Reverie needs): ``data:`` lines join with newlines, comment
    lines (``:``) are keep-alives, a blank line dispatches. A last event without its blank line
    is still dispatched (some servers close right after it)."""
    name = ""
    data: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r")
        if not line:
            if data:
                yield SseEvent(name or "message", "\n".join(data))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if key == "data":
            data.append(value)
        elif key == "event":
            name = value
        elif key not in ("id", "retry"):
            raise ValueError(f"not a server-sent event line: {line[:80]!r}")
    if data:
        yield SseEvent(name or "message", "\n".join(data))


def _json(data: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except json.JSONDecodeError:
        raise ValueError(f"a streamed event is not JSON: {data[:80]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"a streamed event is not a JSON object: {data[:80]!r}")
    return value


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def tool_call_from_text(call_id: str, name: str, text: str) -> ToolCallRequest:
    """Arguments assembled from fragments; anything but a JSON object is kept raw for the loop
    (a stream cut off inside a tool call leaves exactly that)."""
    if text.strip() == "":
        return ToolCallRequest(id=call_id, name=name, arguments={})
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return ToolCallRequest(id=call_id, name=name, raw_arguments=text)
    if isinstance(parsed, dict):
        return ToolCallRequest(id=call_id, name=name, arguments=parsed)
    return ToolCallRequest(id=call_id, name=name, raw_arguments=text)


class StreamAssembler:
    """What both assemblers share: text, tool-call fragments, generated size, completion."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.text: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.usage = Usage()
        self.stop_reason: StopReason = "other"
        self.done = False
        #: the reply said how it ended (a finish / stop reason), even if no terminator followed
        self.finished = False
        self.generated_chars = 0
        self.events = 0

    @property
    def tokens_so_far(self) -> int:
        """Tokens generated so far, estimated from the characters received."""
        return self.generated_chars // CHARS_PER_TOKEN

    def feed(self, event: SseEvent) -> None:
        raise NotImplementedError

    def _add_text(self, piece: Any) -> None:
        if isinstance(piece, str) and piece:
            self.text.append(piece)
            self.generated_chars += len(piece)

    def _add_arguments(self, index: int, piece: Any) -> None:
        if isinstance(piece, str) and piece:
            self.calls.setdefault(index, _PartialCall()).arguments.append(piece)
            self.generated_chars += len(piece)

    def reply(self) -> ModelReply:
        calls = [
            tool_call_from_text(c.id or f"call_{i}", c.name, "".join(c.arguments))
            for i, c in sorted(self.calls.items())
        ]
        stop = self.stop_reason
        if calls and stop == "other":
            stop = "tool_use"
        if not self.done and stop == "other":
            stop = "max_tokens"
        return ModelReply(text="".join(self.text), tool_calls=calls, usage=self.usage,
                          stop_reason=stop, model=self.model)


_OPENAI_FINISH: dict[str, StopReason] = {
    "stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
    "length": "max_tokens",
}


class OpenAIStreamAssembler(StreamAssembler):
    """Chat Completions chunks. The stream is complete at ``[DONE]``."""

    def __init__(self, model: str, usage_parser: Any) -> None:
        super().__init__(model)
        self._usage_parser = usage_parser

    def feed(self, event: SseEvent) -> None:
        self.events += 1
        if event.data.strip() == "[DONE]":
            self.done = True
            return
        chunk = _json(event.data)
        if "error" in chunk and "choices" not in chunk:
            error = chunk.get("error")
            detail = error.get("message") if isinstance(error, dict) else error
            raise StreamErrorEvent(str(detail or "error event in the stream"))
        if chunk.get("model"):
            self.model = str(chunk["model"])
        if isinstance(chunk.get("usage"), dict):
            self.usage = self._usage_parser(chunk["usage"])
        choices = chunk.get("choices")
        if choices is None:
            if "usage" not in chunk:
                raise ValueError("a streamed chunk has no choices")
            return
        if not isinstance(choices, list):
            raise ValueError("a streamed chunk's choices is not a list")
        for choice in choices:
            if not isinstance(choice, dict):
                raise ValueError("a streamed choice is not an object")
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise ValueError("a streamed delta is not an object")
            self._add_text(delta.get("content"))
            for raw in delta.get("tool_calls") or []:
                if not isinstance(raw, dict):
                    raise ValueError("a streamed tool call is not an object")
                index = int(raw.get("index") or 0)
                partial = self.calls.setdefault(index, _PartialCall())
                if raw.get("id"):
                    partial.id = str(raw["id"])
                function = raw.get("function") or {}
                if function.get("name"):
                    partial.name += str(function["name"])
                self._add_arguments(index, function.get("arguments"))
            finish = choice.get("finish_reason")
            if finish:
                self.stop_reason = _OPENAI_FINISH.get(str(finish), "other")
                self.finished = True


_ANTHROPIC_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn", "stop_sequence": "end_turn", "tool_use": "tool_use",
    "max_tokens": "max_tokens",
}


class StreamErrorEvent(Exception):
    """The server sent an error event inside the stream (e.g. ``overloaded_error``)."""


class AnthropicStreamAssembler(StreamAssembler):
    """Messages API events. The stream is complete at ``message_stop``."""

    def __init__(self, model: str, usage_parser: Any) -> None:
        super().__init__(model)
        self._usage_parser = usage_parser
        self._raw_usage: dict[str, Any] = {}
        self.block_names: dict[int, str] = {}

    def feed(self, event: SseEvent) -> None:
        self.events += 1
        data = _json(event.data)
        kind = str(data.get("type") or event.event)
        if kind == "ping":
            return
        if kind == "error":
            error = data.get("error")
            detail = error.get("message") if isinstance(error, dict) else error
            raise StreamErrorEvent(str(detail or "error event in the stream"))
        if kind == "message_start":
            message = data.get("message")
            if not isinstance(message, dict):
                raise ValueError("message_start without a message")
            if message.get("model"):
                self.model = str(message["model"])
            self._merge_usage(message.get("usage"))
        elif kind == "content_block_start":
            index = int(data.get("index") or 0)
            block = data.get("content_block")
            if not isinstance(block, dict):
                raise ValueError("content_block_start without a content block")
            if block.get("type") == "tool_use":
                self.calls[index] = _PartialCall(id=str(block.get("id") or ""),
                                                 name=str(block.get("name") or ""))
                initial = block.get("input")
                if isinstance(initial, dict) and initial:
                    self._add_arguments(index, json.dumps(initial))
            elif block.get("type") == "text":
                self._add_text(block.get("text"))
        elif kind == "content_block_delta":
            index = int(data.get("index") or 0)
            delta = data.get("delta")
            if not isinstance(delta, dict):
                raise ValueError("content_block_delta without a delta")
            if delta.get("type") == "text_delta":
                self._add_text(delta.get("text"))
            elif delta.get("type") == "input_json_delta":
                self._add_arguments(index, delta.get("partial_json"))
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self.stop_reason = _ANTHROPIC_STOP.get(str(delta["stop_reason"]), "other")
                self.finished = True
            self._merge_usage(data.get("usage"))
        elif kind == "message_stop":
            self.done = True
        elif kind not in ("content_block_stop",):
            return  # new event types may be added (the API's versioning policy)

    def _merge_usage(self, raw: Any) -> None:
        if isinstance(raw, dict):
            self._raw_usage.update({k: v for k, v in raw.items() if v is not None})
            self.usage = self._usage_parser(self._raw_usage)

    def forced_tool_text(self, name: str) -> str | None:
        """The input of the forced structured-output tool, as JSON text (then removed)."""
        for index, call in list(self.calls.items()):
            if call.name == name:
                del self.calls[index]
                return "".join(call.arguments) or "{}"
        return None
