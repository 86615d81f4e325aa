"""Gemini CLI: legacy whole-file JSON and append-only JSONL with $set / $rewindTo."""

from __future__ import annotations

from pathlib import Path

import orjson

from reverie.transcripts.model import ToolKind
from reverie.transcripts.reader import detect_agent, load_transcript

GEMINI = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / "gemini-cli"
LEGACY = GEMINI / "codemie-code/chats/session-2025-12-01T21-45-5b959dae.json"
FILE_OPS = GEMINI / "codemie-code/chats/session-2026-01-16T11-01-file-ops-37b7abef.json"
JSONL = GEMINI / "agent-sessions-synthetic/session-jsonl-v040.jsonl"


def test_legacy_json_session() -> None:
    assert detect_agent(LEGACY) == "gemini-cli"
    t = load_transcript(LEGACY)
    assert t.session.id == "5b959dae-8655-4cd1-b10f-720b8c336ea2"
    assert [m.role for m in t.messages][:4] == ["user", "assistant", "user", "assistant"]
    assert len(t.messages) == 22
    calls = [c for m in t.messages for c in m.tool_calls]
    assert {c.name: c.kind for c in calls} == {
        "list_directory": ToolKind.READ, "read_file": ToolKind.READ,
        "write_file": ToolKind.WRITE, "replace": ToolKind.EDIT,
    }
    replace = next(c for c in calls if c.name == "replace")
    assert replace.file_paths == [
        "/Users/Jane_Smith/Documents/projects/epm-cdme/assistants/lead_gemini.txt"
    ]
    first = t.messages[1]
    assert first.usage is not None and first.usage.input_tokens == 2752
    assert first.model is not None


def test_file_ops_session_relative_paths_and_results() -> None:
    t = load_transcript(FILE_OPS)
    writes = [c for m in t.messages for c in m.tool_calls if c.kind is ToolKind.WRITE]
    assert [c.file_paths for c in writes] == [["hello.md"]] * 3
    results = [r for m in t.messages for r in m.tool_results]
    assert len(results) == sum(len(m.tool_calls) for m in t.messages)
    assert any("Successfully created" in r.output for r in results)


def test_jsonl_fixture() -> None:
    assert detect_agent(JSONL) == "gemini-cli"
    t = load_transcript(JSONL)
    assert t.session.id == "gemini_stage0_jsonl"
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]
    shell = t.messages[1].tool_calls[0]
    assert shell.kind is ToolKind.SHELL and shell.command == "ls -F"
    assert t.messages[3].usage is not None and t.messages[3].usage.cache_read_tokens == 11502


def _write(path: Path, records: list[dict[str, object]]) -> None:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


def test_set_rewind_and_last_write_wins(tmp_path: Path) -> None:
    path = tmp_path / "session-2026-04-29T21-39-abcdef12.jsonl"
    _write(path, [
        {"sessionId": "abc", "projectHash": "h", "startTime": "2026-04-29T21:39:22Z",
         "lastUpdated": "2026-04-29T21:39:22Z", "kind": "main"},
        {"id": "u1", "timestamp": "2026-04-29T21:39:30Z", "type": "user", "content": "first"},
        {"id": "g1", "timestamp": "2026-04-29T21:39:31Z", "type": "gemini", "content": "draft"},
        {"id": "u2", "timestamp": "2026-04-29T21:39:32Z", "type": "user", "content": "second"},
        {"id": "g2", "timestamp": "2026-04-29T21:39:33Z", "type": "gemini", "content": "old"},
        {"$rewindTo": "u2"},  # drops u2 and g2
        {"id": "g1", "timestamp": "2026-04-29T21:39:31Z", "type": "gemini", "content": "final",
         "toolCalls": [{"id": "t1", "name": "run_shell_command", "args": {"command": "false"},
                        "status": "error",
                        "result": [{"functionResponse": {
                            "id": "t1", "name": "run_shell_command",
                            "response": {"output": "Exit Code: 1"}}}]}]},
        {"id": "u3", "timestamp": "2026-04-29T21:39:40Z", "type": "user", "content": "third"},
        {"$set": {"summary": "Fixing the build", "lastUpdated": "2026-04-29T21:40:00Z"}},
    ])
    t = load_transcript(path)
    assert [m.id for m in t.messages] == ["u1", "g1", "g1#results", "u3"]
    assert t.messages[1].text == "final"  # last write wins, first position kept
    result = t.messages[2].tool_results[0]
    assert result.is_error and result.exit_code == 1
    assert t.session.title == "Fixing the build" and t.session.title_source == "summary"
    assert t.session.id == "abc"


def test_set_with_messages_replaces_all(tmp_path: Path) -> None:
    path = tmp_path / "session-x.jsonl"
    _write(path, [
        {"sessionId": "s", "projectHash": "h"},
        {"id": "a", "type": "user", "content": "gone"},
        {"$set": {"messages": [{"id": "b", "type": "user", "content": "kept"}]}},
    ])
    t = load_transcript(path)
    assert [m.text for m in t.messages] == ["kept"]


def test_half_written_legacy_json_is_a_counted_skip(tmp_path: Path) -> None:
    path = tmp_path / "session-2026-01-01T00-00-deadbeef.json"
    path.write_bytes(LEGACY.read_bytes()[:5000])
    t = load_transcript(path)
    assert t.messages == [] and t.stats.skipped == 1
