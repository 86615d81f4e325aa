"""The offline consolidation engine on hand-built sessions: dedup, redaction, merging."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from reverie.dream.offline import SessionInput, consolidate_offline
from reverie.memory.store import check_index, parse_index, read_topic
from reverie.transcripts.model import (
    Message,
    Session,
    ToolCall,
    ToolKind,
    ToolResult,
    Transcript,
)

WHEN = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)


def _session(sid: str, calls: list[tuple[str, str, bool, str]], user: str = "") -> SessionInput:
    messages: list[Message] = []
    if user:
        messages.append(Message(id="u", role="user", text=user, timestamp=WHEN))
    for n, (kind, arg, failed, output) in enumerate(calls):
        call = ToolCall(id=f"c{n}", name="Bash" if kind == "shell" else "Edit",
                        kind=ToolKind(kind), command=arg if kind == "shell" else None,
                        file_paths=[arg] if kind != "shell" else [])
        messages.append(Message(id=f"a{n}", role="assistant", tool_calls=[call], timestamp=WHEN))
        messages.append(Message(id=f"r{n}", role="user", timestamp=WHEN, tool_results=[
            ToolResult(call_id=f"c{n}", is_error=failed, exit_code=1 if failed else 0,
                       output=output)]))
    session = Session(id=sid, agent="claude-code", path=Path(f"/x/{sid}.jsonl"), cwd="/repo")
    return SessionInput(session_id=sid, anchor=WHEN,
                        transcript=Transcript(session=session, messages=messages), cwd="/repo")


SESSION = _session("s1", [
    ("shell", "npm test", True, "FAIL src/app.test.ts\nError: expected 2 got 3"),
    ("edit", "/repo/src/app.ts", False, "ok"),
    ("shell", "npm test", False, "ok"),
    ("shell", "ls -la", False, "x"),
    ("shell", "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123 npm run e2e", False, "ok"),
], user="Please always run the linter before committing. Thanks!")


def test_facts_land_in_the_right_topics(tmp_path: Path) -> None:
    result = consolidate_offline(tmp_path, [SESSION], today=date(2026, 3, 5))
    workflow = (tmp_path / "workflow-and-commands.md").read_text()
    assert "- `npm test` _(session s1, 2026-03-04)_" in workflow
    assert "ls -la" not in workflow
    errors = (tmp_path / "errors-and-fixes.md").read_text()
    assert "`npm test` failed: Error: expected 2 got 3; later `npm test` worked" in errors
    assert "`src/app.ts`: changed once" in (tmp_path / "files-and-architecture.md").read_text()
    decisions = (tmp_path / "decisions-and-learnings.md").read_text()
    assert 'User: "Please always run the linter before committing."' in decisions
    assert result.redactions >= 1
    assert "sk-proj-abcdefghij" not in workflow and "npm run e2e" in workflow
    meta = read_topic(tmp_path / "errors-and-fixes.md").meta
    assert meta.sources == ["s1"] and meta.updated == "2026-03-05"
    assert check_index(tmp_path) == []
    assert len(parse_index((tmp_path / "MEMORY.md").read_text()).entries) == 4


def test_second_pass_adds_nothing_and_keeps_bytes(tmp_path: Path) -> None:
    consolidate_offline(tmp_path, [SESSION], today=date(2026, 3, 5))
    before = {p.name: p.read_bytes() for p in tmp_path.glob("*.md")}
    again = consolidate_offline(tmp_path, [SESSION], today=date(2026, 3, 6))
    assert again.facts_added == 0 and again.files_touched == []
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.md")} == before


def test_merges_into_existing_memory_and_keeps_other_entries(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Memory\n\n- [People](people.md) - who is who\n\n"
                                        "Footer text\n")
    (tmp_path / "people.md").write_text("---\nname: People\ndescription: d\ntype: user\n---\nx\n")
    (tmp_path / "workflow-and-commands.md").write_text(
        "---\nname: Workflow and commands\ndescription: mine\ntype: project\n---\n\n"
        "# Workflow\n\n- `npm test` (ran 9 times) _(session old, 2026-01-01)_\n")
    consolidate_offline(tmp_path, [SESSION], today=date(2026, 3, 5))
    workflow = (tmp_path / "workflow-and-commands.md").read_text()
    assert workflow.count("`npm test`") == 1  # same command: not repeated
    assert "npm run e2e" in workflow and "description: mine" in workflow
    index = (tmp_path / "MEMORY.md").read_text()
    assert index.startswith("# Memory\n\n- [People](people.md) - who is who\n- [")
    assert index.rstrip().endswith("Footer text")
    assert check_index(tmp_path) == []


def test_a_broken_topic_file_is_never_overwritten(tmp_path: Path) -> None:
    broken = "---\nname: [oops\n---\nhand notes\n"
    (tmp_path / "workflow-and-commands.md").write_text(broken)
    result = consolidate_offline(tmp_path, [SESSION])
    assert (tmp_path / "workflow-and-commands.md").read_text() == broken
    assert "workflow-and-commands.md" not in result.files_touched


def test_session_without_transcript_or_notes_is_harmless(tmp_path: Path) -> None:
    empty = SessionInput(session_id="e", anchor=WHEN)
    result = consolidate_offline(tmp_path, [empty])
    assert result.files_touched == [] and not (tmp_path / "MEMORY.md").exists()
