"""Codex rollouts: session meta, exec_command / shell exit codes, apply_patch paths, usage."""

from __future__ import annotations

from pathlib import Path

import orjson

from reverie.transcripts.classify import patch_file_paths
from reverie.transcripts.model import ToolKind
from reverie.transcripts.reader import detect_agent, load_transcript
from reverie.transcripts.stats import transcript_stats

CODEX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / "codex"
SESSIONS = CODEX / "codemie-code" / "sessions"
TUI = SESSIONS / "2026/05/11/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
DESKTOP = SESSIONS / "2026/05/11/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"  # noqa: E501
OLD = SESSIONS / "2026/01/02/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
SYNTHETIC = CODEX / "agent-sessions-synthetic" / "schema-coverage-0.146-small.jsonl"
REPO = "/Users/Sample_User/repos/codemie-ai/codemie-code"


def test_detects_codex() -> None:
    for path in (TUI, DESKTOP, OLD, SYNTHETIC):
        assert detect_agent(path) == "codex"


def test_tui_rollout_session_and_apply_patch_paths() -> None:
    t = load_transcript(TUI)
    s = t.session
    assert s.id == "019e1625-789d-76c0-80ab-3724b5ddb799"
    assert s.cwd == REPO and s.git_branch == "feat/codex-agent-plugin"
    assert s.title == "show tools"
    assert t.stats.lines == 386 and t.stats.skipped == 0
    patches = [c for m in t.messages for c in m.tool_calls if c.name == "apply_patch"]
    assert len(patches) == 3 and all(c.kind is ToolKind.EDIT for c in patches)
    assert transcript_stats(t)["files"] == [
        f"{REPO}/src/agents/plugins/__tests__/codemie-code-reasoning.test.ts",
        f"{REPO}/src/agents/plugins/codemie-code.plugin.ts",
        f"{REPO}/src/agents/plugins/opencode/opencode.plugin.ts",
    ]
    counts = {name: sum(1 for m in t.messages for c in m.tool_calls if c.name == name)
              for name in ("exec_command", "write_stdin", "web_search", "update_plan")}
    assert counts == {"exec_command": 43, "write_stdin": 54, "web_search": 3, "update_plan": 2}
    # user prompts appear once although both event_msg and response_item carry them
    assert next(m.text for m in t.messages if m.role == "user") == "show tools"
    assert sum(1 for m in t.messages if m.role == "user") == 2


def test_failing_exec_command_exit_code() -> None:
    t = load_transcript(TUI)
    calls = {c.id: c for m in t.messages for c in m.tool_calls}
    failing = {
        r.call_id: r.exit_code
        for m in t.messages for r in m.tool_results
        if r.exit_code not in (None, 0) and calls[r.call_id].name == "exec_command"
    }
    assert failing["call_NqXBF7JK4NH5M85YXgojxxmC"] == 2
    assert calls["call_NqXBF7JK4NH5M85YXgojxxmC"].command is not None
    assert calls["call_NqXBF7JK4NH5M85YXgojxxmC"].command.startswith("rg -n ")
    npm = next(c for c in calls.values() if c.command and c.command.startswith("npm test"))
    assert failing[npm.id] == 1
    assert calls[npm.id].kind is ToolKind.SHELL


def test_token_count_usage_once_per_call() -> None:
    records = [orjson.loads(line) for line in TUI.read_bytes().splitlines()]
    totals = [r["payload"]["info"]["total_token_usage"] for r in records
              if r["type"] == "event_msg" and r["payload"]["type"] == "token_count"
              and r["payload"].get("info")]
    distinct = [t for i, t in enumerate(totals) if i == 0 or t != totals[i - 1]]
    t = load_transcript(TUI)
    usages = [m.usage for m in t.messages if m.usage is not None]
    assert len(usages) == len(distinct)
    last = distinct[-1]
    assert sum(u.output_tokens for u in usages) == last["output_tokens"]
    assert sum(u.input_tokens + u.cache_read_tokens for u in usages) == last["input_tokens"]


def test_old_shell_tool_with_json_output() -> None:
    t = load_transcript(OLD)
    calls = [c for m in t.messages for c in m.tool_calls]
    assert [c.command for c in calls] == [
        "ls", "rg --files -g 'AGENTS.md'", "sed -n '1,160p' README.md",
    ]
    results = [r for m in t.messages for r in m.tool_results]
    assert [r.exit_code for r in results] == [0, 0, 0]
    assert results[1].output == "docs/AGENTS.md\n"


def test_desktop_rollout_without_token_counts() -> None:
    t = load_transcript(DESKTOP)
    assert t.session.id == "019e1695-0522-7c83-8b39-0dd379793f80"
    assert sum(1 for m in t.messages for c in m.tool_calls if c.name == "exec_command") == 35
    assert all(m.usage is None for m in t.messages)


def test_synthetic_schema_coverage_never_fails() -> None:
    t = load_transcript(SYNTHETIC)
    assert t.stats.skipped == 0
    assert t.session.cwd == "/tmp/repo" and t.session.git_branch == "main"
    assert any(m.is_compact_boundary for m in t.messages)


def test_patch_headers() -> None:
    patch = ("*** Begin Patch\n*** Add File: docs/new.md\n+hi\n*** Update File: src/a.py\n"
             "*** Move to: src/b.py\n@@\n-x\n+y\n*** Delete File: old.txt\n*** End Patch\n")
    assert patch_file_paths(patch, "/repo") == [
        "/repo/docs/new.md", "/repo/src/a.py", "/repo/src/b.py", "/repo/old.txt",
    ]
    assert patch_file_paths(patch, None)[0] == "docs/new.md"
