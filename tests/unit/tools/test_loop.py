"""The tool loop against the real fake server, both providers."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reverie.events import EventRecorder
from reverie.llm.anthropic import AnthropicClient
from reverie.llm.errors import LLMAuthError
from reverie.llm.extractive import OfflineClient
from reverie.llm.http import HttpModelClient
from reverie.llm.openai import OpenAIClient
from reverie.llm.retry import RetryPolicy
from reverie.llm.types import ChatMessage
from reverie.tools.gate import PathGate
from reverie.tools.loop import run_tool_loop
from support.fake_llm import FakeLLMServer, FakeRequest, Step, ToolCallSpec

KEY = "sk-loop-KEY-0123456789abcdef"


async def _no_sleep(_: float) -> None:
    return None


@pytest.fixture(params=["openai", "anthropic"])
async def setup(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[FakeLLMServer, HttpModelClient, Path]]:
    async with FakeLLMServer() as server:
        cls = OpenAIClient if request.param == "openai" else AnthropicClient
        client = cls(model="m", base_url=server.base_url, api_key=KEY,
                     retry_policy=RetryPolicy(max_retries=2, sleep=_no_sleep))
        work = tmp_path.resolve()
        (work / "notes").mkdir()
        (work / "notes" / "session.md").write_text("# Session Title\n_title_\n\nold\n")
        (work / "transcript.jsonl").write_text('{"text": "we fixed the parser"}\n')
        (work / "secret.txt").write_text("outside the job")
        try:
            yield server, client, work
        finally:
            await client.aclose()


def _tool_results(body: dict) -> list[tuple[str, bool]]:
    """(content, is_error) of the tool results in a recorded request (either wire format)."""
    out = []
    for message in body["messages"]:
        if message.get("role") == "tool":
            out.append((message["content"], message["content"].startswith("Error")))
        if isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    out.append((block["content"], bool(block.get("is_error"))))
    return out


async def test_loop_round_trip_with_denials_and_bad_calls(
    setup: tuple[FakeLLMServer, HttpModelClient, Path]
) -> None:
    server, client, work = setup
    notes = work / "notes" / "session.md"
    server.enqueue(
        Step.tool_calls(
            ToolCallSpec(name="read_file", arguments={"file_path": str(notes)}),
            ToolCallSpec(name="read_file", arguments={"file_path": str(work / "secret.txt")}),
            text="reading the notes",
        ),
        Step.tool_calls(
            ToolCallSpec(name="write_file", arguments={"file_path": str(work / "secret.txt"),
                                                       "content": "pwned"}),
            ToolCallSpec(name="run_shell", arguments={"command": "rm -rf /"}),
        ),
        Step.invalid_tool_args("edit_file", '{"file_path": '),
        Step.tool("edit_file", file_path=str(notes), old_string="old", new_string="new"),
        Step.reply("notes updated"),
    )
    events = EventRecorder()
    gate = PathGate([work / "transcript.jsonl"], write_file=notes, base_dir=work)
    result = await run_tool_loop(
        client, system="update the notes", messages=[ChatMessage(role="user", content="go")],
        gate=gate, tools=["read_file", "edit_file", "write_file"], max_turns=8,
        events=events, job="session_memory", session_id="s1",
    )
    assert result.turns == 5
    assert result.stop_reason == "end_turn"
    assert result.text == "notes updated"
    assert result.files_written == [str(notes)]
    assert result.files_read == [str(notes)]
    assert notes.read_text() == "# Session Title\n_title_\n\nnew\n"
    assert (work / "secret.txt").read_text() == "outside the job"
    assert [(d.tool, d.reason) for d in result.denials] == [
        ("read_file", "outside the directories this job may read"),
        ("write_file", "this job may not write there"),
        ("run_shell", "unknown tool"),
    ]
    denied = events.of_type("denied")
    assert [e.payload["tool"] for e in denied] == ["read_file", "write_file", "run_shell"]
    assert all(e.job == "session_memory" and e.session_id == "s1" for e in denied)
    progress = events.of_type("progress")
    assert [e.payload["turn"] for e in progress] == [1, 2, 3, 4, 5]
    assert progress[0].payload["text"] == "reading the notes"
    assert [u["name"] for u in progress[0].payload["tool_uses"]] == ["read_file", "read_file"]
    assert progress[3].payload["files_touched"] == [str(notes)]
    # what the model got back
    bodies = [r.json for r in server.model_requests()]
    second = _tool_results(bodies[1])
    assert "old" in second[0][0] and not second[0][1]
    assert second[1][1] and "outside" in second[1][0]
    fourth = _tool_results(bodies[3])
    assert fourth[-1][1] and "not a JSON object" in fourth[-1][0]
    third = _tool_results(bodies[2])
    assert "unknown tool 'run_shell'" in third[-1][0]
    # the usage of every turn adds up
    assert result.usage.input_tokens > 0
    assert result.usage.output_tokens >= 5


async def test_loop_stops_at_max_turns(setup: tuple[FakeLLMServer, HttpModelClient, Path]) -> None:
    server, client, work = setup

    def keep_listing(request: FakeRequest) -> Step:
        return Step.tool("list_dir", path=str(work / "notes"))

    server.set_fallback(keep_listing)
    events = EventRecorder()
    result = await run_tool_loop(
        client, system="s", messages=[ChatMessage(role="user", content="go")],
        gate=PathGate([work]), tools=["list_dir"], max_turns=3, events=events, job="dream",
    )
    assert result.turns == 3 and result.stop_reason == "max_turns"
    assert len(server.model_requests()) == 3
    assert len(events.of_type("progress")) == 3


async def test_loop_lets_llm_errors_out_and_never_leaks_the_key(
    setup: tuple[FakeLLMServer, HttpModelClient, Path], caplog: pytest.LogCaptureFixture
) -> None:
    server, client, work = setup
    caplog.set_level(logging.DEBUG)
    server.enqueue(Step.tool("list_dir", path=str(work)), Step.error(500, f"oops {KEY}"),
                   Step.error(401, f"bad key {KEY}"))
    events = EventRecorder()
    with pytest.raises(LLMAuthError) as info:
        await run_tool_loop(
            client, system="s", messages=[ChatMessage(role="user", content="go")],
            gate=PathGate([work]), tools=["list_dir"], max_turns=5, events=events,
            job="dream",
        )
    haystack = "\n".join([caplog.text, str(info.value), repr(info.value), repr(client),
                          json.dumps([e.model_dump(mode="json") for e in events.events])])
    assert KEY not in haystack and KEY[-8:] not in haystack


async def test_loop_cancellation_propagates_promptly(
    setup: tuple[FakeLLMServer, HttpModelClient, Path]
) -> None:
    server, client, work = setup
    server.set_default(Step.hang(30))
    task = asyncio.create_task(run_tool_loop(
        client, system="s", messages=[ChatMessage(role="user", content="go")],
        gate=PathGate([work]), tools=["read_file"], max_turns=3, events=EventRecorder(),
        job="dream",
    ))
    while not server.model_requests():
        await asyncio.sleep(0.01)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 5  # at once, not after the 30 s reply (a loaded machine)


async def test_loop_path_map_parameter(tmp_path: Path) -> None:
    real = tmp_path / "memory"
    staged = tmp_path / "stage"
    real.mkdir()
    staged.mkdir()
    async with FakeLLMServer([
        Step.tool("write_file", file_path=str(real / "topic.md"), content="fact"),
        Step.reply("done"),
    ]) as server:
        client = OpenAIClient(model="m", base_url=server.base_url, api_key=KEY)
        events = EventRecorder()
        result = await run_tool_loop(
            client, system="s", messages=[ChatMessage(role="user", content="go")],
            gate=PathGate([real], write_dir=real), tools=["write_file"], max_turns=4,
            events=events, job="dream", path_map={real: staged},
        )
        await client.aclose()
    assert result.files_written == [str(real / "topic.md")]
    assert (staged / "topic.md").read_text() == "fact"
    assert not (real / "topic.md").exists()
    assert events.of_type("progress")[0].payload["files_touched"] == [str(real / "topic.md")]


async def test_loop_with_offline_client_ends_after_one_turn(tmp_path: Path) -> None:
    result = await run_tool_loop(
        OfflineClient(), system="s",
        messages=[ChatMessage(role="user", content="We fixed the parser. It was slow.")],
        gate=PathGate([tmp_path]), tools=["read_file"], max_turns=4, events=EventRecorder(),
        job="session_memory",
    )
    assert result.turns == 1 and result.stop_reason == "end_turn"
    assert "parser" in result.text


async def test_unknown_tool_name_in_the_job_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        await run_tool_loop(
            OfflineClient(), system="s", messages=[], gate=PathGate([tmp_path]),
            tools=["bash"], max_turns=1, events=EventRecorder(), job="dream",
        )
