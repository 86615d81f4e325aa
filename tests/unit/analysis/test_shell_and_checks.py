"""Issue 26, classes 1, 4, 5, 8, 9: edits and reads through the shell, benign non-zero exits, a
failure superseded by another command at the same goal, commands not garbled, all-zero usage,
sessions taken in the order of their own times. The shell snippets are in the shape Codex
0.4x rollouts record (``bash -lc`` with ``apply_patch`` / ``applypatch`` heredocs)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from reverie.analysis import CommandCategory, analyse_command, analyse_session
from reverie.transcripts.base import make_tool_call
from reverie.transcripts.model import Message, ToolResult, Usage
from reverie.transcripts.tokens import context_tokens

CWD = "/home/dev/relay"
PATCH = ("applypatch <<'PATCH'\n*** Begin Patch\n*** Update File: internal/queue/retry.go\n@@\n"
         "-\tdelay := base\n+\tdelay := base * time.Duration(attempt)\n*** End Patch\nPATCH")


def _run(n: int, command: str, code: int, output: str = "") -> list[Message]:
    call = make_tool_call("codex", f"c{n}", "shell", {"command": ["bash", "-lc", command]}, CWD)
    return [Message(id=f"a{n}", role="assistant", tool_calls=[call]),
            Message(id=f"r{n}", role="tool", tool_results=[
                ToolResult(call_id=f"c{n}", exit_code=code, output=output)])]


def _session(*parts: list[Message]) -> list[Message]:
    return [Message(id="u", role="user", text="make the retry backoff linear"),
            *(m for part in parts for m in part)]


# -- class 1 -------------------------------------------------------------------------------

def test_a_patch_applied_through_the_shell_is_an_edit_with_its_path() -> None:
    analysis = analyse_session(_session(
        _run(1, "go test ./internal/queue", 1, "--- FAIL: TestRetryDelay (0.00s)\n"
             "    retry_test.go:31: got 100ms, want 200ms"),
        _run(2, PATCH, 0, "Success. Updated the following files:\nM internal/queue/retry.go"),
        _run(3, "go test ./internal/queue", 0, "ok  \texample.com/relay/internal/queue\t0.2s"),
    ))
    files = {f.path: f for f in analysis.files}
    assert files["internal/queue/retry.go"].edits == 1
    assert not [c for c in analysis.commands if "patch" in c.key]
    (error,) = analysis.errors
    assert error.status == "fixed" and error.fix is not None
    assert error.fix.path == "internal/queue/retry.go"  # not "passed later, no edit in between"
    assert error.fix.essence and "attempt" in error.fix.essence


def test_a_heredoc_written_file_is_an_edit_and_shell_reads_are_reads() -> None:
    analysis = analyse_session(_session(
        _run(1, "sed -n '1,120p' internal/queue/retry.go", 0, "package queue"),
        _run(2, "nl -ba internal/queue/retry_test.go | sed -n 20,40p", 0, "31 ..."),
        _run(3, "cat > internal/queue/doc.go <<'EOF'\n// Package queue retries jobs.\n"
                "package queue\nEOF", 0),
    ))
    files = {f.path: f for f in analysis.files}
    assert files["internal/queue/retry.go"].reads == 1
    assert files["internal/queue/retry_test.go"].reads == 1
    assert files["internal/queue/doc.go"].edits == 1
    assert analysis.commands == []


# -- class 4 -------------------------------------------------------------------------------

def test_nothing_to_commit_is_not_a_failure() -> None:
    analysis = analyse_session(_session(_run(
        1, "git add -A && git commit -m 'retry: linear backoff'", 1,
        "On branch main\nnothing to commit, working tree clean")))
    assert analysis.errors == []


def test_benign_non_zero_exits_are_not_failures() -> None:
    analysis = analyse_session(_session(
        _run(1, "grep -rn 'retryDelay' internal/", 1, ""),                 # no match
        _run(2, "diff internal/queue/retry.go /dev/null", 1, "1d0\n< package queue"),
        _run(3, "git diff --exit-code", 1, "diff --git a/x b/x"),           # there are changes
        _run(4, "git commit -m wip", 1, "nothing added to commit but untracked files present"),
    ))
    assert analysis.errors == [] and analysis.still_failing == []


def test_a_failure_superseded_by_another_command_at_the_same_goal_is_not_still_failing() -> None:
    analysis = analyse_session(_session(
        _run(1, "npm test", 1, "npm ERR! Missing script: \"test\""),
        _run(2, "npx vitest run", 0, " Test Files  4 passed (4)\n      Tests  31 passed (31)"),
    ))
    assert analysis.still_failing == []
    (error,) = analysis.errors
    assert error.status == "passed" and error.proved_by == "npx vitest run"


def test_a_pass_in_another_ecosystem_does_not_supersede() -> None:
    analysis = analyse_session(_session(
        _run(1, "npm test", 1, "FAIL src/a.test.ts"), _run(2, "pytest", 0, "3 passed")))
    assert [e.check for e in analysis.still_failing] == ["npm test"]


# -- class 5 -------------------------------------------------------------------------------

def test_continuations_heredoc_bodies_and_workspace_filters_are_read_whole() -> None:
    info = analyse_command("pytest \\\n  tests/unit \\\n  -k retry")
    assert (info.key, info.main, sorted(info.scope)) == (
        "pytest", "pytest tests/unit -k retry", ["-k=retry", "tests/unit"])
    body = analyse_command("python3 - <<'PY'\nimport subprocess\nmake deploy\nPY")
    assert body.category is CommandCategory.EXPLORE and body.chain == ()
    lint = analyse_command("pnpm --filter web lint")
    test = analyse_command("pnpm -F api test")
    types = analyse_command("pnpm --filter web run check-types")
    assert (lint.key, lint.category) == ("pnpm lint", CommandCategory.LINT)
    assert (test.key, test.category) == ("pnpm test", CommandCategory.TEST)
    assert (types.key, types.category) == ("pnpm run check-types", CommandCategory.TYPECHECK)
    assert lint.scope == frozenset({"--filter=web"})
    assert analyse_command("pnpm run check-types").category is CommandCategory.TYPECHECK


# -- class 8 -------------------------------------------------------------------------------

def test_an_all_zero_usage_record_does_not_reset_the_context_estimate() -> None:
    messages = [
        Message(id="a1", role="assistant", text="working", api_message_id="m1",
                usage=Usage(input_tokens=90_000, output_tokens=500)),
        Message(id="a2", role="assistant", text="API Error: overloaded", api_message_id="m2",
                model="<synthetic>", usage=Usage()),
    ]
    assert context_tokens(messages) >= 90_000


# -- class 9 -------------------------------------------------------------------------------

def test_the_dream_dates_facts_by_the_sessions_own_times(tmp_path: Path) -> None:
    from reverie.curation.sessions import SessionSource
    from reverie.dream.rule_based import consolidate_sources

    def session(name: str, day: int, text: str) -> SessionSource:
        path = tmp_path / f"{name}.jsonl"
        stamp = f"2026-03-{day:02d}T10:00:00Z"
        record = {"type": "user", "uuid": f"u-{name}", "parentUuid": None, "sessionId": name,
                  "cwd": CWD, "timestamp": stamp, "message": {"role": "user", "content": text}}
        path.write_text(json.dumps(record) + "\n", "utf-8")
        # the file times say the opposite (a synced home): the copy of the older one is newer
        return SessionSource(session_id=name, path=path, agent="claude-code", cwd=CWD,
                             updated_at=datetime(2026, 4, 30 - day, tzinfo=UTC))

    memory = tmp_path / "memory"
    memory.mkdir()
    older = session("s1", 2, "Note: this repo uses yarn for packages.")
    newer = session("s2", 9, "Change of plan: we switched from yarn to pnpm. Use pnpm, not yarn.")
    # given newest-file-first (what file times say), the older session must not win
    consolidate_sources(memory, [newer, older])
    text = "\n".join(p.read_text("utf-8") for p in memory.glob("*.md"))
    assert "pnpm" in text
    current = [line for line in text.splitlines() if "yarn" in line.lower()
               and "pnpm" not in line.lower() and "formerly" not in line.lower()]
    assert current == [], current
