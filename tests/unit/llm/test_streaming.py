"""Streaming against the real fake server, both wire protocols: assembly, usage, progress,
the non-streaming fallback (remembered), and every way a stream can go wrong."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from reverie.llm.capabilities import CapabilityStore
from reverie.llm.errors import (
    LLMBadResponseError,
    LLMStreamInterruptedError,
    LLMTimeoutError,
    LLMToolsUnsupportedError,
)
from reverie.llm.http import HttpModelClient
from reverie.llm.types import ChatMessage, ToolSpec
from support.fake_llm import FakeLLMServer, Step, StepUsage, ToolCallSpec

ClientFactory = Callable[..., HttpModelClient]
EDIT = ToolSpec(name="edit_file", description="edit",
                parameters={"type": "object", "properties": {"file_path": {"type": "string"}}})


class Verdict(BaseModel):
    title: str
    score: int


def _user(text: str = "hello") -> list[ChatMessage]:
    return [ChatMessage(role="user", content=text)]


async def test_text_streams_with_usage_from_the_last_chunk(
    server: FakeLLMServer, make_client: ClientFactory, provider: str
) -> None:
    long = "word " * 200
    server.enqueue(Step.reply(long, usage=StepUsage(input_tokens=77, output_tokens=250)))
    seen: list[int] = []
    reply = await make_client().complete(_user(), on_progress=seen.append)
    assert reply.text == long
    assert reply.stop_reason == "end_turn"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (77, 250)
    [request] = server.model_requests()
    assert request.json["stream"] is True
    if provider == "openai":
        assert request.json["stream_options"] == {"include_usage": True}
    # progress reported while generating, increasing, ending at the total
    assert len(seen) >= 5 and seen == sorted(seen) and seen[-1] == len(long) // 4


async def test_tool_calls_assembled_from_deltas(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    args = {"file_path": "/tmp/notes.md", "old_string": "a" * 50, "new_string": "é\n\"q\""}
    server.enqueue(Step.tool_calls(ToolCallSpec(name="edit_file", arguments=args),
                                   ToolCallSpec(name="edit_file", arguments={"file_path": "x"}),
                                   text="editing now"))
    reply = await make_client().complete(_user(), tools=[EDIT])
    assert reply.text == "editing now"
    assert [c.name for c in reply.tool_calls] == ["edit_file", "edit_file"]
    assert reply.tool_calls[0].arguments == args
    assert reply.tool_calls[1].arguments == {"file_path": "x"}
    assert reply.stop_reason == "tool_use"


async def test_invalid_tool_arguments_stay_raw(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.enqueue(Step.invalid_tool_args("edit_file", '{"file_path": "x", "old'))
    reply = await make_client().complete(_user(), tools=[EDIT])
    [call] = reply.tool_calls
    assert call.raw_arguments == '{"file_path": "x", "old' and call.arguments == {}


async def test_structured_output_streams(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.enqueue(Step.json_reply({"title": "ok", "score": 3}))
    reply = await make_client().complete(_user(), output_schema=Verdict)
    assert reply.parsed == Verdict(title="ok", score=3)


async def test_refused_streaming_falls_back_and_is_remembered(
    server: FakeLLMServer, make_client: ClientFactory, tmp_path: Path
) -> None:
    server.scenario.streaming = "refuse"
    store = CapabilityStore(tmp_path / "caps.json")
    server.enqueue(Step.reply("plain one"), Step.reply("plain two"))
    first = await make_client(capabilities=store).complete(_user())
    assert first.text == "plain one"
    assert [r.json.get("stream") for r in server.model_requests()] == [True, None]
    # a new client (a new job, a new process) reads the fact and does not try again
    again = await make_client(capabilities=CapabilityStore(tmp_path / "caps.json")).complete(
        _user())
    assert again.text == "plain two"
    assert [r.json.get("stream") for r in server.model_requests()] == [True, None, None]


async def test_server_that_ignores_stream_flag_is_remembered(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.scenario.streaming = "ignore"
    server.enqueue(Step.reply("json anyway"), Step.reply("second"))
    client = make_client()
    assert (await client.complete(_user())).text == "json anyway"
    assert (await client.complete(_user())).text == "second"
    assert [r.json.get("stream") for r in server.model_requests()] == [True, None]


async def test_garbage_stream_is_a_bad_response_not_retried(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.enqueue(Step.garbage_stream())
    with pytest.raises(LLMBadResponseError, match="garbage in the stream"):
        await make_client().complete(_user())
    assert len(server.model_requests()) == 1


async def test_stream_cut_mid_reply_is_retried_then_fails(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.enqueue(Step.cut_stream("x" * 400), Step.reply("second try"))
    assert (await make_client().complete(_user())).text == "second try"
    server.set_default(Step.cut_stream("y" * 400))
    with pytest.raises(LLMStreamInterruptedError, match="before the reply was complete"):
        await make_client(max_retries=1).complete(_user())


async def test_never_ending_stream_stops_past_the_output_limit(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.enqueue(Step.endless_stream(chunk_delay=0.0005))
    started = time.monotonic()
    with pytest.raises(LLMBadResponseError, match="kept generating past the 50-token"):
        await make_client().complete(_user(), max_tokens=50)
    assert time.monotonic() - started < 10


async def test_inactivity_timeout_not_whole_reply_timeout(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    # 40 events 0.05 s apart: 2 s in total, far longer than the 0.5 s timeout between chunks
    server.enqueue(Step.reply("z" * 480, chunk_delay=0.05))
    reply = await make_client(request_timeout=0.5).complete(_user())
    assert reply.text == "z" * 480
    # a server that goes quiet mid-stream trips the inactivity timeout
    server.enqueue(Step.reply("slow", chunk_delay=2.0))
    with pytest.raises(LLMTimeoutError, match=r"waiting 0\.5 s for data"):
        await make_client(request_timeout=0.5, max_retries=0).complete(_user())


async def test_cancel_mid_stream(server: FakeLLMServer, make_client: ClientFactory) -> None:
    server.enqueue(Step.endless_stream(chunk_delay=0.01))
    task = asyncio.ensure_future(make_client().complete(_user(), max_tokens=100_000))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_no_tools_refusal_is_typed_and_remembered(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    server.scenario.no_tools = True
    client = make_client()
    assert client.supports_tools is None
    with pytest.raises(LLMToolsUnsupportedError, match="cannot call tools"):
        await client.complete(_user(), tools=[EDIT])
    assert client.supports_tools is False
    assert len(server.model_requests()) == 1  # not retried
    server.enqueue(Step.reply("fine without tools"))
    assert (await client.complete(_user())).text == "fine without tools"


async def test_the_tool_loop_reports_tokens_while_a_long_reply_streams(
    server: FakeLLMServer, make_client: ClientFactory, tmp_path: Path
) -> None:
    from reverie.events import EventRecorder
    from reverie.tools.gate import PathGate
    from reverie.tools.loop import run_tool_loop

    server.enqueue(Step.reply("token " * 300, chunk_delay=0.01))  # about 2.5 s of streaming
    events = EventRecorder()
    result = await run_tool_loop(
        make_client(), system="s", messages=_user(), gate=PathGate([tmp_path]),
        tools=["read_file"], max_turns=2, events=events, job="dream")
    assert result.stop_reason == "end_turn"
    generating = [e for e in events.of_type("progress") if e.payload.get("phase") == "generating"]
    assert generating, "no progress while the reply streamed"
    counts = [e.payload["tokens_generated"] for e in generating]
    assert counts == sorted(counts) and counts[0] > 0
    assert "tokens so far" in generating[0].message


async def test_finished_reply_without_terminator_is_accepted_after_silence(
    server: FakeLLMServer, make_client: ClientFactory
) -> None:
    """A server that sends the whole reply (with its finish reason) but never ``[DONE]`` /
    ``message_stop`` and keeps the connection open: the reply is used, not retried."""
    server.enqueue(Step.unterminated_stream("all of it", hold=30))
    started = time.monotonic()
    reply = await make_client(request_timeout=1.0).complete(_user())
    assert reply.text == "all of it" and reply.stop_reason == "end_turn"
    assert len(server.model_requests()) == 1 and time.monotonic() - started < 10
