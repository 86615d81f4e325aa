"""Anthropic Messages API with tools.

Structured output uses a *forced tool*: the schema becomes the ``input_schema`` of one extra tool
and ``tool_choice`` forces it, so the reply's tool input is the object. This works on every
tool-capable Claude model (the native ``output_format`` is a beta limited to some models). The
forced call is taken out of ``tool_calls`` and its input becomes the reply text (as JSON), so
callers see the same shape as from OpenAI.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from reverie.llm.http import HttpModelClient
from reverie.llm.stream import AnthropicStreamAssembler, StreamAssembler
from reverie.llm.structured import schema_for, schema_name
from reverie.llm.types import ChatMessage, ModelReply, StopReason, ToolCallRequest, ToolSpec
from reverie.types import Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-sonnet-4-5"
API_VERSION = "2023-06-01"

_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
}


class AnthropicClient(HttpModelClient):
    """Messages API over httpx. ``base_url`` may end in ``/v1`` or not."""

    provider = "anthropic"
    key_env_hint = "REVERIE_API_KEY (or ANTHROPIC_API_KEY)"
    completion_path = "/messages"

    def __init__(self, *, model: str = DEFAULT_MODEL, base_url: str | None = None,
                 api_key: str | None = None, **kwargs: Any) -> None:
        base = (base_url or DEFAULT_BASE_URL).rstrip("/")
        if not base.endswith("/v1"):
            base += "/v1"
        super().__init__(model=model, base_url=base, api_key=api_key, **kwargs)

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    # ---- request -----------------------------------------------------------------------------
    @staticmethod
    def wire_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
        """Provider-neutral turns as Anthropic content blocks; same-role turns are merged
        (tool results travel in one user turn)."""
        out: list[dict[str, Any]] = []
        for message in messages:
            blocks: list[dict[str, Any]] = []
            if message.role == "tool":
                role = "user"
                block: dict[str, Any] = {"type": "tool_result",
                                         "tool_use_id": message.tool_call_id or "",
                                         "content": message.content}
                if message.is_error:
                    block["is_error"] = True
                blocks.append(block)
            elif message.role == "assistant":
                role = "assistant"
                if message.content:
                    blocks.append({"type": "text", "text": message.content})
                for call in message.tool_calls:
                    blocks.append({"type": "tool_use", "id": call.id, "name": call.name,
                                   "input": call.arguments})
                if not blocks:
                    blocks.append({"type": "text", "text": "(no reply)"})
            else:
                role = "user"
                blocks.append({"type": "text", "text": message.content or "(empty)"})
            if out and out[-1]["role"] == role:
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": role, "content": blocks})
        return out

    def build_body(
        self,
        messages: Sequence[ChatMessage],
        *,
        system: str | None,
        tools: Sequence[ToolSpec],
        output_schema: type[BaseModel] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens or self.max_output_tokens,
            "messages": self.wire_messages(messages),
        }
        if system:
            body["system"] = system
        wire_tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                      for t in tools]
        if output_schema is not None:
            name = schema_name(output_schema)
            wire_tools.append({
                "name": name,
                "description": "Return the final answer as this JSON object.",
                "input_schema": schema_for(output_schema),
            })
            body["tool_choice"] = {"type": "tool", "name": name}
        if wire_tools:
            body["tools"] = wire_tools
        return body

    def new_assembler(self) -> StreamAssembler:
        return AnthropicStreamAssembler(self.model, _usage)

    def reply_from_stream(self, assembler: StreamAssembler,
                          output_schema: type[BaseModel] | None) -> ModelReply:
        """The assembled reply; a forced structured-output tool's input becomes the text."""
        if output_schema is not None and isinstance(assembler, AnthropicStreamAssembler):
            structured = assembler.forced_tool_text(schema_name(output_schema))
            if structured is not None:
                reply = assembler.reply()
                stop = reply.stop_reason if reply.tool_calls else "end_turn"
                return reply.model_copy(update={"text": structured, "stop_reason": stop})
        return assembler.reply()

    # ---- reply -------------------------------------------------------------------------------
    def parse_reply(self, data: Any, *, output_schema: type[BaseModel] | None) -> ModelReply:
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            raise self.bad_response("no content list")
        texts: list[str] = []
        calls: list[ToolCallRequest] = []
        output_name = schema_name(output_schema) if output_schema is not None else None
        structured: str | None = None
        for block in data["content"]:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                raw_input = block.get("input")
                name = str(block.get("name") or "")
                if output_name is not None and name == output_name:
                    structured = raw_input if isinstance(raw_input, str) else json.dumps(raw_input)
                    continue
                call_id = str(block.get("id") or f"toolu_{len(calls)}")
                if isinstance(raw_input, dict):
                    calls.append(ToolCallRequest(id=call_id, name=name, arguments=raw_input))
                else:
                    raw = raw_input if isinstance(raw_input, str) else json.dumps(raw_input)
                    calls.append(ToolCallRequest(id=call_id, name=name, raw_arguments=raw))
        text = structured if structured is not None else "".join(texts)
        stop: StopReason = _STOP.get(str(data.get("stop_reason")), "other")
        if structured is not None and not calls:
            stop = "end_turn"
        return ModelReply(text=text, tool_calls=calls, usage=_usage(data.get("usage")),
                          stop_reason=stop, model=str(data.get("model") or self.model))


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(raw.get("cache_creation_input_tokens") or 0),
    )
