"""Generic JSONL (OpenAI-style chat messages) with its sidecar metadata."""

from __future__ import annotations

from pathlib import Path

import orjson

from reverie.transcripts.model import ToolKind
from reverie.transcripts.reader import detect_agent, load_transcript
from reverie.transcripts.tokens import context_tokens


def write_generic(
    path: Path, records: list[dict[str, object]], meta: dict[str, object] | None
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    if meta is not None:
        path.with_suffix(".json").write_bytes(orjson.dumps(meta))


RECORDS: list[dict[str, object]] = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the failing test", "timestamp": "2026-03-01T10:00:00Z"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "read_file", "arguments": "{\"file_path\": \"src/app.py\"}"}},
        {"id": "c2", "type": "function",
         "function": {"name": "bash", "arguments": "{\"command\": \"pytest -q\"}"}}],
     "usage": {"prompt_tokens": 1200, "completion_tokens": 40,
               "prompt_tokens_details": {"cached_tokens": 1000}}},
    {"role": "tool", "tool_call_id": "c1", "content": "print('hi')"},
    {"role": "tool", "tool_call_id": "c2", "content": "1 failed", "exit_code": 1},
    {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}], "model": "gpt-x",
     "tool_calls": [{"id": "c3", "function": {"name": "notes", "arguments": {
         "file_paths": ["NOTES.md"]}}}],
     "usage": {"input_tokens": 7, "output_tokens": 3, "cache_read_tokens": 50,
               "cache_write_tokens": 9}},
]


def test_generic_with_sidecar(tmp_path: Path) -> None:
    path = tmp_path / ".reverie" / "sessions" / "run-42.jsonl"
    write_generic(path, RECORDS, {"project_path": "/work/proj", "title": "Fix CI",
                                  "session_id": "run-42", "git_branch": "main"})
    assert detect_agent(path) == "generic"
    t = load_transcript(path)
    assert t.session.agent == "generic" and t.session.id == "run-42"
    assert t.session.cwd == "/work/proj" and t.session.title == "Fix CI"
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "tool",
                                            "assistant"]
    read, bash = t.messages[2].tool_calls
    assert read.kind is ToolKind.READ and read.file_paths == ["/work/proj/src/app.py"]
    assert bash.kind is ToolKind.SHELL and bash.command == "pytest -q"
    failed = t.messages[4].tool_results[0]
    assert failed.call_id == "c2" and failed.exit_code == 1 and failed.is_error
    usage = t.messages[2].usage
    assert usage is not None and (usage.input_tokens, usage.cache_read_tokens) == (200, 1000)
    assert t.messages[5].text == "Fixed." and t.messages[5].model == "gpt-x"
    assert t.messages[5].tool_calls[0].file_paths == ["/work/proj/NOTES.md"]
    last = t.messages[5].usage
    assert last is not None and (last.cache_read_tokens, last.cache_write_tokens) == (50, 9)
    # context: the last recorded usage (7 + 3 + 50 + 9)
    assert context_tokens(t.messages) == 69


def test_generic_without_sidecar_uses_record_cwd_and_first_prompt(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    write_generic(path, [{"role": "user", "content": "hello there", "cwd": "/w"},
                         {"role": "alien", "content": "?"}], None)
    t = load_transcript(path)
    assert t.session.cwd == "/w" and t.session.title == "hello there"
    assert len(t.messages) == 1 and t.stats.skipped == 1
