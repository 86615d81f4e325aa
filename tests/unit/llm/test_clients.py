"""Both HTTP providers against the real fake server: round trips, retries, timeouts, cancel."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import pytest
from pydantic import BaseModel

from reverie.llm.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMBadResponseError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    StructuredOutputError,
)
from reverie.llm.http import HttpModelClient
from reverie.llm.retry import RetryPolicy
from reverie.llm.types import ChatMessage, ToolCallRequest, ToolSpec
from support.fake_llm import FakeLLMServer, Step, ToolCallSpec, estimate_input_tokens

from .conftest import API_KEY, RecordingSleep

ClientFactory = Callable[..., HttpModelClient]
READ_TOOL = ToolSpec(
    name="read_file",
    description="Read a file",
    parameters={"type": "object", "properties": {"file_path": {"type": "string"}},
                "required": ["file_path"]},
)


class Verdict(BaseModel):
    title: str
    score: int


def _user(text: str) -> list[ChatMessage]:
    return [ChatMessage(role="user", content=text)]


async def test_text_reply_and_usage_from_request_size(
    server: FakeLLMServer, make_client: ClientFactory, provider: str
) -> None:
    server.enqueue(Step.reply("hello back"))
    client = make_client()
    prompt = "x" * 4000
    reply = await client.complete(_user(prompt), system="be brief")
    assert reply.text == "hello back"
    assert reply.stop_reason == "end_turn"
    assert 1000 <= reply.usage.input_tokens <= 1100
    assert reply.usage.output_tokens >= 1
    [request] = server.model_requests()
    body = request.json
    assert body["model"] == "fake-model"
    if provider == "openai":
        assert request.path == "/v1/chat/completions"
        assert body["messages"][0] == {"role": "system", "content": "be brief"}
        assert body["max_tokens"] == 4096
    else:
        assert request.path == "/v1/messages"
        assert body["system"] == "be brief"
        assert request.headers["anthropic-version"] == "2023-06-01"
        assert body["max_tokens"] == 4096


async def test_tool_call_round_trip(
    server: FakeLLMServer, make_client: ClientFactory, provider: str
) -> None:
    server.enqueue(
        Step.tool_calls(ToolCallSpec(name="read_file", arguments={"file_path": "notes.md"}),
                        text="let me look"),
        Step.reply("the file says hi"),
    )
    client = make_client()
    messages = _user("what is in notes.md?")
    first = await client.complete(messages, tools=[READ_TOOL])
    assert first.stop_reason == "tool_use"
    [call] = first.tool_calls
    assert call.name == "read_file" and call.arguments == {"file_path": "notes.md"}
    messages += [
        ChatMessage(role="assistant", content=first.text, tool_calls=first.tool_calls),
        ChatMessage(role="tool", tool_call_id=call.id, content="hi", is_error=False),
    ]
    second = await client.complete(messages, tools=[READ_TOOL])
    assert second.text == "the file says hi"
    sent = server.model_requests()[1].json
    if provider == "openai":
        assert sent["tools"][0]["function"]["name"] == "read_file"
        assistant, tool = sent["messages"][1], sent["messages"][2]
        assert assistant["tool_calls"][0]["id"] == call.id
        assert tool == {"role": "tool", "tool_call_id": call.id, "content": "hi"}
    else:
        assert sent["tools"][0]["input_schema"]["required"] == ["file_path"]
        assistant, result = sent["messages"][1], sent["messages"][2]
        assert assistant["content"][1]["type"] == "tool_use"
        assert result["role"] == "user"
        assert result["content"][0] == {"type": "tool_result", "tool_use_id": call.id,
                                        "content": "hi"}


async def test_invalid_tool_arguments_are_kept_raw(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.enqueue(Step.invalid_tool_args("read_file", "{not json"))
    reply = await make_client().complete(_user("go"), tools=[READ_TOOL])
    [call] = reply.tool_calls
    assert call.arguments == {} and call.raw_arguments == "{not json"


async def test_structured_output_native_mode_and_one_repair(
    server: FakeLLMServer, make_client: ClientFactory, provider: str
) -> None:
    server.enqueue(Step.json_reply({"title": "x"}), Step.json_reply({"title": "ok", "score": 3}))
    reply = await make_client().complete(_user("judge"), output_schema=Verdict)
    assert reply.parsed == Verdict(title="ok", score=3)
    first, second = server.model_requests()
    if provider == "openai":
        fmt = first.json["response_format"]
        assert fmt["type"] == "json_schema"
        assert fmt["json_schema"]["schema"]["required"] == ["title", "score"]
    else:
        assert first.json["tool_choice"] == {"type": "tool", "name": "Verdict"}
    repair_text = str(second.json["messages"][-1]["content"])
    assert "score" in repair_text and "did not match" in repair_text
    # usage of both calls is counted
    expected = estimate_input_tokens(first.json) + estimate_input_tokens(second.json)
    assert reply.usage.input_tokens == expected


async def test_structured_output_fails_cleanly_after_one_repair(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.enqueue(Step.reply("not json at all"), Step.json_reply({"title": 1}))
    with pytest.raises(StructuredOutputError) as info:
        await make_client().complete(_user("judge"), output_schema=Verdict)
    assert "Verdict" in str(info.value)
    assert len(server.model_requests()) == 2


async def test_retries_then_success_with_backoff(
    server: FakeLLMServer, make_client: ClientFactory, sleeps: RecordingSleep
) -> None:
    server.enqueue(Step.error(500), Step.error(503), Step.reply("finally"))
    reply = await make_client(max_retries=3).complete(_user("hi"))
    assert reply.text == "finally"
    assert len(server.model_requests()) == 3
    assert len(sleeps.delays) == 2
    # exponential with jitter in the upper half: 0.25..0.5, then 0.5..1.0
    assert 0.25 <= sleeps.delays[0] <= 0.5 and 0.5 <= sleeps.delays[1] <= 1.0


async def test_gives_up_after_max_retries(
    server: FakeLLMServer, make_client: ClientFactory, sleeps: RecordingSleep, provider: str
) -> None:
    server.set_default(Step.error(502, "upstream broke"))
    with pytest.raises(LLMServerError) as info:
        await make_client(max_retries=2).complete(_user("hi"))
    assert len(server.model_requests()) == 3
    assert len(sleeps.delays) == 2
    message = str(info.value)
    assert message.startswith("502") and provider in message and "upstream broke" in message


async def test_retry_after_is_honoured(
    server: FakeLLMServer, make_client: ClientFactory, sleeps: RecordingSleep
) -> None:
    server.enqueue(Step.error(429, retry_after=7), Step.reply("ok"))
    reply = await make_client().complete(_user("hi"))
    assert reply.text == "ok"
    assert sleeps.delays == [7.0]


async def test_retry_after_with_real_sleep(server: FakeLLMServer, provider: str) -> None:
    from reverie.llm.anthropic import AnthropicClient
    from reverie.llm.openai import OpenAIClient

    server.enqueue(Step.error(429, retry_after=0.3), Step.reply("ok"))
    cls = OpenAIClient if provider == "openai" else AnthropicClient
    client = cls(model="m", base_url=server.base_url, api_key=API_KEY, max_retries=1)
    try:
        started = time.monotonic()
        assert (await client.complete(_user("hi"))).text == "ok"
        elapsed = time.monotonic() - started
    finally:
        await client.aclose()
    first, second = server.model_requests()
    assert second.at - first.at >= 0.29
    assert elapsed >= 0.3


async def test_rate_limit_gives_up_with_typed_error(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.set_default(Step.error(429, retry_after=1))
    with pytest.raises(LLMRateLimitError) as info:
        await make_client(max_retries=1).complete(_user("hi"))
    assert info.value.retry_after == 1.0
    assert len(server.model_requests()) == 2


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_name_the_fix_and_do_not_retry(
    server: FakeLLMServer, make_client: ClientFactory, provider: str, status: int
) -> None:
    server.set_default(Step.error(status, f"bad key {API_KEY}"))
    with pytest.raises(LLMAuthError) as info:
        await make_client().complete(_user("hi"))
    message = str(info.value)
    assert message.startswith(str(status)) and f"from the {provider} endpoint" in message
    assert "REVERIE_API_KEY" in message
    assert API_KEY not in message and API_KEY not in repr(info.value)
    assert len(server.model_requests()) == 1


async def test_bad_request_is_not_retried(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    with pytest.raises(LLMBadRequestError) as info:
        await make_client().complete(_user("hi"))  # empty script: the fake answers 400
    assert "scenario exhausted" in str(info.value)
    assert len(server.model_requests()) == 1


async def test_malformed_body_is_a_bad_response(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.enqueue(Step.malformed())
    with pytest.raises(LLMBadResponseError) as info:
        await make_client().complete(_user("hi"))
    assert "not JSON" in str(info.value)


async def test_read_timeout_retries_then_fails(
    server: FakeLLMServer, make_client: ClientFactory, sleeps: RecordingSleep
) -> None:
    server.set_default(Step.hang(5))
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError) as info:
        await make_client(request_timeout=0.2, max_retries=1).complete(_user("hi"))
    assert time.monotonic() - started < 4.0  # two 0.2 s timeouts, never the 5 s reply
    assert "REVERIE_REQUEST_TIMEOUT_SECONDS" in str(info.value)
    assert len(server.model_requests()) == 2
    assert len(sleeps.delays) == 1


async def test_timeout_then_recovery(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.enqueue(Step.hang(5), Step.reply("second try"))
    reply = await make_client(request_timeout=0.2).complete(_user("hi"))
    assert reply.text == "second try"


async def test_connection_refused_is_typed(provider: str, sleeps: RecordingSleep) -> None:
    from reverie.llm.anthropic import AnthropicClient
    from reverie.llm.openai import OpenAIClient

    with FakeLLMServer() as dead:
        url = dead.base_url
    cls = OpenAIClient if provider == "openai" else AnthropicClient
    client = cls(model="m", base_url=url, api_key=API_KEY,
                 retry_policy=RetryPolicy(max_retries=2, sleep=sleeps))
    try:
        with pytest.raises(LLMConnectionError) as info:
            await client.complete(_user("hi"))
    finally:
        await client.aclose()
    assert "REVERIE_BASE_URL" in str(info.value)
    assert len(sleeps.delays) == 2


async def test_cancellation_mid_request_returns_promptly(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.set_default(Step.hang(30))
    client = make_client()
    task = asyncio.create_task(client.complete(_user("hi")))
    for _ in range(200):
        if server.model_requests():
            break
        await asyncio.sleep(0.01)
    assert len(server.model_requests()) == 1
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 5  # at once, not after the 30 s reply (a loaded machine)
    assert len(server.model_requests()) == 1  # no retry after a cancel


async def test_key_never_in_logs_reprs_or_errors(
    server: FakeLLMServer, make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.enqueue(Step.error(500, f"echo {API_KEY}"), Step.error(401, f"key {API_KEY} bad"))
    client = make_client(max_retries=1)
    with pytest.raises(LLMError) as info:
        await client.complete(_user("hi"))
    texts = [caplog.text, repr(client), str(client), str(info.value), repr(info.value),
             str(info.value.__cause__), str(info.value.__context__)]
    for text in texts:
        assert API_KEY not in text
        assert API_KEY[-8:] not in text
    # the key did go out on the wire, but the recording keeps only a placeholder
    headers = server.model_requests()[0].headers
    assert API_KEY not in str(headers)
    assert "<redacted>" in str(headers)


def test_tool_call_request_keeps_contract_names() -> None:
    call = ToolCallRequest(id="1", name="read_file", arguments={"file_path": "a"})
    assert call.raw_arguments is None
