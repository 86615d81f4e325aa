"""Claude Code adapter against the real fixtures: all three sub-agent layouts, usage, tools."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson

from reverie.transcripts.model import ToolKind
from reverie.transcripts.reader import detect_agent, load_transcript
from reverie.transcripts.stats import transcript_stats
from reverie.transcripts.tail import TranscriptTail
from reverie.transcripts.tokens import usage_totals

CC = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / "claude-code"
INLINE = CC / "claude-code-viewer-v1.0.108-inline-sidechains/sample-project/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"  # noqa: E501
SIBLING = CC / "codemie-v2.0.64-sibling-agent-files/-tmp-private"
SPOTTER = CC / "spotter-v2.1.39-subagents/-home-USER-projects-spotter-worktrees-spotter-dov"
SPOTTER_ID = "4d5611e5-241a-462a-8d15-5122611a9569"
INCREMENTAL = CC / "codemie-v2.1.7-incremental-subagents"


def test_detects_every_claude_fixture() -> None:
    for path in CC.rglob("*.jsonl"):
        assert detect_agent(path) == "claude-code", path


def test_inline_sidechains_link_to_their_task_calls() -> None:
    t = load_transcript(INLINE)
    assert t.session.id == "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    assert t.session.cwd == "/path/to/Demo"
    assert len(t.messages) == 53 and t.stats.lines == 53 and t.stats.skipped == 0
    side = [m for m in t.messages if m.is_sidechain]
    assert len(side) == 22
    # the first Task failed validation (no prompt); the two others spawned the sidechains
    assert {m.parent_call_id for m in side} == {
        "toolu_014YF9TXhDRR7BnpasNJ7gjC",
        "toolu_01LKfUwrsnof18CpWZQcJH44",
    }
    tasks = [c for m in t.messages for c in m.tool_calls if c.kind is ToolKind.TASK]
    assert [c.id for c in tasks] == [
        "toolu_018t5jce2ZNoGr2ADsHGQife",
        "toolu_014YF9TXhDRR7BnpasNJ7gjC",
        "toolu_01LKfUwrsnof18CpWZQcJH44",
    ]
    # slash command prompt becomes the fallback title
    assert t.session.title_source == "first_prompt"
    assert t.session.title is not None and t.session.title.startswith("/orchestrator")


def test_inline_tool_errors_edits_and_failing_bash() -> None:
    t = load_transcript(INLINE)
    stats = transcript_stats(t)
    assert stats["tool_errors"] == 3
    assert stats["files"] == ["/path/to/Demo/CLAUDE.md", "/path/to/Demo/todo-app/package.json"]
    by_name = Counter(c.name for m in t.messages for c in m.tool_calls)
    assert by_name["Edit"] == 1 and by_name["MultiEdit"] == 1 and by_name["Bash"] == 5
    edit = next(c for m in t.messages for c in m.tool_calls if c.name == "MultiEdit")
    assert edit.kind is ToolKind.EDIT and edit.file_paths == ["/path/to/Demo/CLAUDE.md"]
    bash = {c.id: c for m in t.messages for c in m.tool_calls if c.kind is ToolKind.SHELL}
    failed = [r for m in t.messages for r in m.tool_results if r.is_error and r.call_id in bash]
    assert len(failed) == 1
    assert bash[failed[0].call_id].command == "tree /path/to/Demo -I 'node_modules|.git' -L 3"
    assert "No such file or directory" in failed[0].output


def _final_usage_by_response(path: Path) -> dict[str, dict[str, int]]:
    """Each API response's usage on its LAST line, read straight from the file."""
    final: dict[str, dict[str, int]] = {}
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        message = record.get("message") if record.get("type") == "assistant" else None
        if isinstance(message, dict) and isinstance(message.get("usage"), dict):
            final[message["id"]] = message["usage"]
    return final


def test_usage_totals_are_each_responses_final_figure() -> None:
    for path in (INLINE, INCREMENTAL / "turn-2.jsonl",
                 SPOTTER / f"{SPOTTER_ID}.jsonl"):
        raw_ids: Counter[str] = Counter()
        for line in path.read_bytes().splitlines():
            record = orjson.loads(line)
            if record.get("type") == "assistant":
                raw_ids[record["message"]["id"]] += 1
        final = _final_usage_by_response(path)
        totals = usage_totals(load_transcript(path).messages)
        assert totals.output_tokens == sum(u.get("output_tokens", 0) for u in final.values())
        assert totals.cache_read_tokens == sum(
            u.get("cache_read_input_tokens", 0) for u in final.values())
        assert totals.input_tokens == sum(u.get("input_tokens", 0) for u in final.values())
    assert any(n > 1 for n in raw_ids.values())  # the fixtures do split API messages


def _assistant_line(uuid: str, msg_id: str, block: dict[str, object], output: int,
                    cache_read: int = 150_000) -> dict[str, object]:
    return {"type": "assistant", "uuid": uuid, "sessionId": "s1", "cwd": "/w",
            "timestamp": "2026-03-01T10:00:00.000Z",
            "message": {"id": msg_id, "role": "assistant", "model": "claude-opus-4-6",
                        "content": [block],
                        "usage": {"input_tokens": 3, "output_tokens": output,
                                  "cache_read_input_tokens": cache_read}}}


THINK = {"type": "thinking", "thinking": "hmm", "signature": "x"}


def test_split_response_growing_usage_and_thinking_only_responses(tmp_path: Path) -> None:
    records = [
        {"type": "user", "uuid": "u1", "sessionId": "s1", "cwd": "/w",
         "timestamp": "2026-03-01T10:00:00.000Z", "message": {"role": "user", "content": "go"}},
        # one response over three lines: 10, then 40, then 95 output tokens (95 is final)
        _assistant_line("a1", "msg_A", THINK, 10),
        _assistant_line("a2", "msg_A", {"type": "text", "text": "Reading."}, 40),
        _assistant_line("a3", "msg_A", {"type": "tool_use", "id": "t1", "name": "Read",
                                        "input": {"file_path": "/w/x.py"}}, 95),
        {"type": "user", "uuid": "u2", "sessionId": "s1", "cwd": "/w",
         "timestamp": "2026-03-01T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                  "content": "ok"}]}},
        # a response that is thinking only (interrupted): its usage must still count
        _assistant_line("a4", "msg_B", THINK, 7, cache_read=151_000),
        {"type": "user", "uuid": "u3", "sessionId": "s1", "cwd": "/w",
         "timestamp": "2026-03-01T10:00:02.000Z", "message": {"role": "user", "content": "?"}},
        # and one more at the very end of the file
        _assistant_line("a5", "msg_C", THINK, 5, cache_read=152_000),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    t = load_transcript(path)
    totals = usage_totals(t.messages)
    assert totals.output_tokens == 95 + 7 + 5
    assert totals.cache_read_tokens == 150_000 + 151_000 + 152_000
    held = [m for m in t.messages if m.is_meta and m.usage is not None]
    assert [m.api_message_id for m in held] == ["msg_B", "msg_C"]
    assert all(m.text == "" and m.role == "system" for m in held)
    # the conversation itself is unchanged: no message for thinking-only lines
    assert [m.role for m in t.messages if not m.is_meta] == ["user", "assistant", "assistant",
                                                             "tool", "user"]
    # a tail that stops right after a thinking-only line keeps it across a restart
    cut = b"".join(orjson.dumps(r) + b"\n" for r in records[:6])
    live = tmp_path / "live" / "s1.jsonl"
    live.parent.mkdir()
    live.write_bytes(cut)
    tail = TranscriptTail(live)
    first = tail.read_new()
    state = TranscriptTail.restore(orjson.loads(orjson.dumps(tail.state().model_dump(
        mode="json"))))
    live.write_bytes(path.read_bytes())
    rest = state.read_new()
    # a tail never sees the file's end: msg_C stays held until a record follows it
    assert usage_totals(first + rest).output_tokens == 95 + 7
    assert [m.api_message_id for m in first + rest if m.is_meta] == ["msg_B"]


def test_sibling_agent_files_name_their_parent() -> None:
    parent = load_transcript(SIBLING / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
    assert parent.session.parent_session_id is None
    assert parent.session.git_branch == "analytics-v2"
    assert transcript_stats(parent)["files"] == [
        "/tmp/private/hello.js", "/tmp/private/hello.md", "/tmp/private/hello.py",
    ]
    assert parent.stats.ignored == 6  # file-history-snapshot records
    for name, agent_id in (("agent-36541525.jsonl", "36541525"),
                           ("agent-50243ee8.jsonl", "50243ee8")):
        sub = load_transcript(SIBLING / name)
        assert sub.session.parent_session_id == "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
        assert sub.session.agent_id == agent_id
        assert sub.session.is_subagent
        assert all(m.is_sidechain for m in sub.messages)
    warmup = load_transcript(SIBLING / "agent-50243ee8.jsonl")
    assert warmup.messages[0].text == "Warmup" and warmup.messages[0].is_meta


def test_subagents_directory_layout() -> None:
    main = load_transcript(SPOTTER / f"{SPOTTER_ID}.jsonl")
    assert main.session.id == SPOTTER_ID and main.session.parent_session_id is None
    assert main.stats.lines == 278 and main.stats.skipped == 0
    assert main.session.git_branch == "spotter-dov"
    explore = load_transcript(SPOTTER / SPOTTER_ID / "subagents" / "agent-a2898e3.jsonl")
    assert explore.session.parent_session_id == SPOTTER_ID
    assert explore.session.agent_id == "a2898e3"
    assert transcript_stats(explore)["tool_errors"] == 8  # as SOURCES.md says
    compact = load_transcript(SPOTTER / SPOTTER_ID / "subagents" / "agent-acompact-e1f845.jsonl")
    assert compact.session.parent_session_id == SPOTTER_ID
    assert compact.session.agent_id == "acompact-e1f845"
    # the parent's Task result names the same agent id
    task_results = [r for m in main.messages for r in m.tool_results]
    assert any("a2898e3" in r.output for r in task_results)


def test_incremental_fixture_summary_title_and_progress_noise() -> None:
    t2 = load_transcript(INCREMENTAL / "turn-2.jsonl")
    assert t2.session.id == "e9fb405b-169f-40eb-9396-7e75076f045d"  # from the records
    # its summary record's leafUuid is not in this file: it names the conversation this one
    # was resumed from (issue 26), so the first prompt names the session instead
    assert t2.session.title is not None and t2.session.title.startswith(
        '@"solution-architect (agent)" analyze existing CLI command')
    assert t2.session.title_source != "summary"
    assert t2.stats.lines == 50 and len(t2.messages) == 34
    sub = load_transcript(INCREMENTAL / "turn-2" / "subagents" / "agent-a485154.jsonl")
    assert sub.session.parent_session_id == "e9fb405b-169f-40eb-9396-7e75076f045d"
    assert sub.stats.ignored == 1  # one hook progress record
    errors = [r for m in sub.messages for r in m.tool_results if r.is_error]
    assert errors and "File does not exist" in errors[0].output


def test_compact_boundary_and_bash_exit_code(tmp_path: Path) -> None:
    base = {"sessionId": "s1", "cwd": "/w", "timestamp": "2026-01-01T00:00:00Z"}
    records = [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": "run the tests"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"id": "msg_1", "model": "m", "role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}],
             "usage": {"input_tokens": 10, "output_tokens": 5}}},
        {**base, "type": "user", "uuid": "u2", "parentUuid": "a1",
         "toolUseResult": "Error: Exit code 1\nFAILED test_x",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
              "content": "Exit code 1\nFAILED test_x"}]}},
        {**base, "type": "system", "subtype": "compact_boundary", "uuid": "c1",
         "content": "Conversation compacted",
         "compactMetadata": {"trigger": "auto", "preTokens": 155000}},
        {"type": "progress", "data": {"type": "hook_progress"}},
        {"type": "brand-new-record-type", "whatever": 1},
    ]
    path = tmp_path / "s1.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
    t = load_transcript(path)
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "system"]
    result = t.messages[2].tool_results[0]
    assert result.is_error and result.exit_code == 1
    assert t.messages[1].tool_calls[0].command == "pytest"
    boundary = t.messages[3]
    assert boundary.is_compact_boundary and "155000" in boundary.text
    assert t.stats.ignored == 2 and t.stats.skipped == 0
