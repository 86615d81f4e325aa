"""OpenAI Chat Completions, and any OpenAI-compatible endpoint (Ollama, vLLM, LM Studio, ...).

Tools are ``function`` tools; structured output uses ``response_format`` ``json_schema`` (not
strict: pydantic schemas allow optional fields, which strict mode rejects). The token limit is
sent as ``max_completion_tokens`` to api.openai.com (newer models refuse ``max_tokens``) and as
``max_tokens`` elsewhere (what compatible servers understand).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from reverie.llm.http import HttpModelClient
from reverie.llm.stream import OpenAIStreamAssembler, StreamAssembler, tool_call_from_text
from reverie.llm.structured import schema_for, schema_name
from reverie.llm.types import ChatMessage, ModelReply, StopReason, ToolCallRequest, ToolSpec
from reverie.types import Usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4.1-mini"

_FINISH: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


class OpenAIClient(HttpModelClient):
    """Chat Completions over httpx."""

    provider = "openai"
    key_env_hint = "REVERIE_API_KEY (or OPENAI_API_KEY)"
    completion_path = "/chat/completions"

    def __init__(self, *, model: str = DEFAULT_MODEL, base_url: str | None = None,
                 api_key: str | None = None, **kwargs: Any) -> None:
        super().__init__(model=model, base_url=base_url or DEFAULT_BASE_URL, api_key=api_key,
                         **kwargs)
        self._official = urlsplit(self.base_url).hostname == "api.openai.com"

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    # ---- request -----------------------------------------------------------------------------
    @staticmethod
    def wire_messages(messages: Sequence[ChatMessage], system: str | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if system:
            out.append({"role": "system", "content": system})
        for message in messages:
            if message.role == "tool":
                out.append({"role": "tool", "tool_call_id": message.tool_call_id or "",
                            "content": message.content})
            elif message.role == "assistant":
                entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
                if message.tool_calls:
                    entry["tool_calls"] = [
                        {"id": call.id, "type": "function",
                         "function": {"name": call.name,
                                      "arguments": call.raw_arguments
                                      if call.raw_arguments is not None
                                      else json.dumps(call.arguments)}}
                        for call in message.tool_calls
                    ]
                out.append(entry)
            else:
                out.append({"role": "user", "content": message.content})
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
            "messages": self.wire_messages(messages, system),
        }
        limit = max_tokens or self.max_output_tokens
        body["max_completion_tokens" if self._official else "max_tokens"] = limit
        if tools:
            body["tools"] = [
                {"type": "function",
                 "function": {"name": t.name, "description": t.description,
                              "parameters": t.parameters}}
                for t in tools
            ]
        if output_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name(output_schema),
                                "schema": schema_for(output_schema), "strict": False},
            }
        return body

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """Streamed, with the usage in a last chunk (``stream_options.include_usage``)."""
        return {**body, "stream": True, "stream_options": {"include_usage": True}}

    def new_assembler(self) -> StreamAssembler:
        return OpenAIStreamAssembler(self.model, _usage)

    # ---- reply -------------------------------------------------------------------------------
    def parse_reply(self, data: Any, *, output_schema: type[BaseModel] | None) -> ModelReply:
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise self.bad_response("no choices[0].message") from None
        if not isinstance(message, dict):
            raise self.bad_response("choices[0].message is not an object")
        calls: list[ToolCallRequest] = []
        for raw in message.get("tool_calls") or []:
            function = raw.get("function") or {}
            arguments = function.get("arguments")
            calls.append(_tool_call(str(raw.get("id") or f"call_{len(calls)}"),
                                    str(function.get("name") or ""), arguments))
        content = message.get("content")
        text = content if isinstance(content, str) else _join_parts(content)
        stop: StopReason = _FINISH.get(str(choice.get("finish_reason")), "other")
        if calls and stop == "other":
            stop = "tool_use"
        return ModelReply(text=text, tool_calls=calls, usage=_usage(data.get("usage")),
                          stop_reason=stop, model=str(data.get("model") or self.model))


def _join_parts(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _tool_call(call_id: str, name: str, arguments: Any) -> ToolCallRequest:
    """Arguments arrive as a JSON string; anything but a JSON object is kept raw for the loop."""
    if isinstance(arguments, dict):
        return ToolCallRequest(id=call_id, name=name, arguments=arguments)
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return tool_call_from_text(call_id, name, text)


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    prompt = int(raw.get("prompt_tokens") or 0)
    details = raw.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return Usage(input_tokens=max(0, prompt - cached),
                 output_tokens=int(raw.get("completion_tokens") or 0),
                 cache_read_tokens=cached)
