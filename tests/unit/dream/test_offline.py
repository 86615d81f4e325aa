"""The offline consolidation engine on hand-built sessions: it curates facts, not a log.

Supersession, merge in place across runs, a person's lines respected, nothing from sessions with
no durable content, index lines within the limit, secrets redacted before anything is formatted.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from reverie.dream.rule_based import SessionInput, consolidate_offline
from reverie.memory.store import MAX_ENTRY_CHARS, check_index, parse_index, read_topic
from reverie.transcripts.model import (
    Message,
    Session,
    ToolCall,
    ToolKind,
    ToolResult,
    Transcript,
)

WHEN = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
LATER = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)


def _session(sid: str, calls: list[tuple[str, str, bool, str]], user: str | list[str] = "",
             when: datetime = WHEN) -> SessionInput:
    messages: list[Message] = []
    for n, text in enumerate([user] if isinstance(user, str) else user):
        if text:
            messages.append(Message(id=f"u{n}", role="user", text=text, timestamp=when))
    for n, (kind, arg, failed, output) in enumerate(calls):
        call = ToolCall(id=f"c{n}", name="Bash" if kind == "shell" else "Edit",
                        kind=ToolKind(kind), command=arg if kind == "shell" else None,
                        file_paths=[arg] if kind != "shell" else [],
                        input={"file_path": arg, "old_string": "a", "new_string": "b"}
                        if kind != "shell" else {"command": arg})
        messages.append(Message(id=f"a{n}", role="assistant", tool_calls=[call], timestamp=when))
        messages.append(Message(id=f"r{n}", role="user", timestamp=when, tool_results=[
            ToolResult(call_id=f"c{n}", is_error=failed, exit_code=1 if failed else 0,
                       output=output)]))
    session = Session(id=sid, agent="claude-code", path=Path(f"/x/{sid}.jsonl"), cwd="/repo")
    return SessionInput(session_id=sid, anchor=when,
                        transcript=Transcript(session=session, messages=messages), cwd="/repo")


SESSION = _session("s1", [
    ("shell", "pnpm test", True, "FAIL src/app.test.ts\nError: expected 2 got 3"),
    ("edit", "/repo/src/app.ts", False, "ok"),
    ("shell", "pnpm test", False, "ok"),
    ("shell", "ls -la", False, "x"),
    ("shell", "find . -name '*.ts' | head", False, "x"),
    ("shell", "pnpm build", False, "ok"),
], user="Fix the failing test in src/app.ts please. Note: this repo uses pnpm — never npm or "
        "yarn; the lockfile is pnpm-lock.yaml.")


def _memory(memory: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(memory.glob("*.md")))


def _bullets(memory: Path) -> list[str]:
    return [line for p in sorted(memory.glob("*.md")) if p.name != "MEMORY.md"
            for line in read_topic(p).body.splitlines() if line.startswith("- ")]


def test_facts_are_plain_statements_in_topics_by_subject(tmp_path: Path) -> None:
    result = consolidate_offline(tmp_path, [SESSION], today=date(2026, 3, 5))
    scripts = (tmp_path / "package-manager-and-scripts.md").read_text()
    assert ("- **Package manager:** This repo uses pnpm — never npm or yarn; the lockfile is "
            "pnpm-lock.yaml. _(session s1, 2026-03-04)_") in scripts
    assert "- **Test:** `pnpm test` _(session s1, 2026-03-04)_" in scripts
    assert "- **Build:** `pnpm build`" in scripts
    # the error with the change that fixed it and the run that proved it
    testing = (tmp_path / "testing.md").read_text()
    assert "- `pnpm test` failed with " in testing
    assert "; fixed by changing `src/app.ts` (`a` → `b`); verified by `pnpm test`." in testing
    # no log: exploration, the one-off request and quoted chat stay out
    text = _memory(tmp_path)
    assert "ls -la" not in text and "find ." not in text
    assert "Fix the failing test" not in text and "User" not in text
    meta = read_topic(tmp_path / "testing.md").meta
    assert meta.sources == ["s1"] and meta.updated == "2026-03-05"
    assert check_index(tmp_path) == []
    index = parse_index((tmp_path / "MEMORY.md").read_text())
    assert {e.target for e in index.entries} == {"package-manager-and-scripts.md", "testing.md"}
    assert result.facts_added == 4


def test_second_pass_adds_nothing_and_keeps_bytes(tmp_path: Path) -> None:
    consolidate_offline(tmp_path, [SESSION], today=date(2026, 3, 5))
    before = {p.name: p.read_bytes() for p in tmp_path.glob("*.md")}
    again = consolidate_offline(tmp_path, [SESSION], today=date(2026, 3, 6))
    assert again.facts_added == 0 and again.files_touched == []
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.md")} == before


def test_a_later_run_updates_facts_in_place(tmp_path: Path) -> None:
    consolidate_offline(tmp_path, [SESSION], today=date(2026, 3, 5))
    later = _session("s2", [("shell", "pnpm test", False, "ok"), ("shell", "pnpm build", False,
                                                                   "ok")],
                     user="Always use pnpm, never npm or yarn.", when=LATER)
    consolidate_offline(tmp_path, [later], today=date(2026, 3, 21))
    bullets = _bullets(tmp_path)
    # the same facts again: evidence adds up, no duplicate lines
    tests = [b for b in bullets if b.startswith("- **Test:**")]
    assert tests == ["- **Test:** `pnpm test` _(2 sessions, latest s2 2026-03-20, first "
                     "2026-03-04)_"]
    assert len([b for b in bullets if "pnpm" in b and "never npm" in b]) == 1
    assert len(bullets) == len(set(bullets))


def test_a_reversed_decision_is_never_current(tmp_path: Path) -> None:
    first = _session("s1", [], user="Note: this repo uses SQLite for the database.")
    consolidate_offline(tmp_path, [first], today=date(2026, 3, 5))
    second = _session("s2", [], user="Change of plan: drop SQLite, we move to Postgres 16.",
                      when=LATER)
    result = consolidate_offline(tmp_path, [second], today=date(2026, 3, 21))
    topic = (tmp_path / "database-and-migrations.md").read_text()
    current = [b for b in _bullets(tmp_path) if "SQLite" in b or "Postgres" in b]
    assert current == ["- **Database:** Drop SQLite, move to Postgres 16. "
                       "_(session s2, 2026-03-20)_"]
    # the old statement survives only as what was replaced, and when
    assert "  (formerly: This repo uses SQLite for the database; replaced on 2026-03-20)" \
        in topic
    assert result.facts_replaced == 1


def test_contradictory_statements_in_one_session_keep_the_last(tmp_path: Path) -> None:
    session = _session("s1", [], user=[
        "Always use npm for installs.",
        "No, don't use npm — use pnpm, never npm.",
    ])
    consolidate_offline(tmp_path, [session], today=date(2026, 3, 5))
    current = [b for b in _bullets(tmp_path) if b.startswith("- **Package manager:**")]
    assert len(current) == 1 and "use pnpm" in current[0].lower()
    assert "Always use npm for installs" not in current[0]


def test_a_late_older_session_does_not_win(tmp_path: Path) -> None:
    newer = _session("s2", [], user="Change of plan: drop SQLite, we move to Postgres 16.",
                     when=LATER)
    older = _session("s1", [], user="Note: this repo uses SQLite for the database.")
    consolidate_offline(tmp_path, [newer], today=date(2026, 3, 21))
    consolidate_offline(tmp_path, [older], today=date(2026, 3, 22))
    current = [b for b in _bullets(tmp_path) if "SQLite" in b or "Postgres" in b]
    assert len(current) == 1 and "Postgres 16" in current[0]


def test_hand_edited_lines_are_kept_and_only_marked_superseded(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Memory\n\n- [People](people.md) - who is who\n"
                                        "- [Database](database-and-migrations.md) - db\n\n"
                                        "Footer text\n")
    (tmp_path / "people.md").write_text("---\nname: People\ndescription: d\ntype: user\n---\n"
                                        "Alice owns billing.\n")
    (tmp_path / "database-and-migrations.md").write_text(
        "---\nname: Database and migrations\ndescription: mine\ntype: project\n---\n\n"
        "# Database\n\nWritten by hand, keep this paragraph.\n\n"
        "- We use SQLite for everything, it is enough.\n"
        "- Migrations live in db/migrations and are numbered.\n")
    later = _session("s2", [], user="Change of plan: drop SQLite, we move to Postgres 16.",
                     when=LATER)
    consolidate_offline(tmp_path, [later], today=date(2026, 3, 21))
    topic = (tmp_path / "database-and-migrations.md").read_text()
    # the person's other line and paragraph are untouched, in place
    assert "Written by hand, keep this paragraph." in topic
    assert "- Migrations live in db/migrations and are numbered.\n" in topic
    # their superseded line is replaced by the new fact, their words kept as "formerly"
    assert "- We use SQLite for everything" not in topic
    assert "(formerly: We use SQLite for everything, it is enough; replaced on 2026-03-20)" \
        in topic
    assert "description: mine" not in topic or "Postgres" in topic
    assert (tmp_path / "people.md").read_text().endswith("Alice owns billing.\n")
    index = (tmp_path / "MEMORY.md").read_text()
    assert index.startswith("# Memory\n\n- [People](people.md) - who is who\n")
    assert index.rstrip().endswith("Footer text")


def test_a_restated_hand_written_rule_is_not_duplicated(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Memory\n\n- [Scripts](package-manager-and-scripts.md)"
                                        " - pnpm\n")
    original = ("---\nname: Package manager and scripts\ndescription: pnpm\ntype: project\n"
                "---\n\n# Package manager and scripts\n\n- Use pnpm, never npm or yarn.\n")
    (tmp_path / "package-manager-and-scripts.md").write_text(original)
    session = _session("s1", [], user="Always use pnpm — never npm or yarn, please.")
    consolidate_offline(tmp_path, [session], today=date(2026, 3, 5))
    topic = (tmp_path / "package-manager-and-scripts.md").read_text()
    assert topic.count("never npm") == 1 and "- Use pnpm, never npm or yarn.\n" in topic


def test_sessions_without_durable_content_write_nothing(tmp_path: Path) -> None:
    chatter = _session("s1", [
        ("shell", "ls", False, "a b"),
        ("shell", "cat README.md", False, "# x"),
        ("shell", "rm hello.js", False, ""),
        ("shell", "tail -5 /tmp/claude/tasks/x.output", False, ""),
    ], user=["hi! what's in this folder?", "thanks, that's all for now"])
    empty = SessionInput(session_id="e", anchor=WHEN)
    result = consolidate_offline(tmp_path, [chatter, empty])
    assert result.files_touched == [] and list(tmp_path.iterdir()) == []
    assert result.summary == "nothing new to consolidate"


def test_secrets_are_redacted_before_commands_are_formatted(tmp_path: Path) -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    session = _session("s1", [
        ("shell", f"AWS_SECRET_ACCESS_KEY={secret} pnpm run deploy", False, "ok"),
    ])
    consolidate_offline(tmp_path, [session], today=date(2026, 3, 5))
    text = _memory(tmp_path)
    assert secret not in text and "pnpm run deploy" in text
    assert "AWS_SECRET_ACCESS_KEY=[REDACTED" in text


def test_every_index_line_fits_the_limit(tmp_path: Path) -> None:
    long_rule = ("Always keep every money amount in the billing module as integer cents and "
                 "never as floats, including totals, discounts, refunds, taxes and all the "
                 "intermediate results of the invoice computation.")
    session = _session("s1", [], user=long_rule)
    consolidate_offline(tmp_path, [session], today=date(2026, 3, 5))
    index = (tmp_path / "MEMORY.md").read_text()
    assert index.count("- [") == 1
    assert all(len(line) <= MAX_ENTRY_CHARS for line in index.splitlines())
    assert "integer cents" in _memory(tmp_path)  # the whole statement lives in the topic


def test_a_broken_topic_file_is_never_overwritten(tmp_path: Path) -> None:
    broken = "---\nname: [oops\n---\nhand notes\n"
    (tmp_path / "package-manager-and-scripts.md").write_text(broken)
    result = consolidate_offline(tmp_path, [SESSION])
    assert (tmp_path / "package-manager-and-scripts.md").read_text() == broken
    assert "package-manager-and-scripts.md" not in result.files_touched


def test_session_without_transcript_or_notes_is_harmless(tmp_path: Path) -> None:
    empty = SessionInput(session_id="e", anchor=WHEN)
    result = consolidate_offline(tmp_path, [empty])
    assert result.files_touched == [] and not (tmp_path / "MEMORY.md").exists()


def test_a_dropped_tool_supersedes_a_persons_line_in_their_own_file(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Memory\n\n- [Team notes](team-notes.md) - ours\n")
    (tmp_path / "team-notes.md").write_text(
        "---\nname: Team notes\ndescription: ours\ntype: project\n---\n\n# Team notes\n\n"
        "- Data fetching uses SWR hooks in src/api/.\n- QA signs off on the preview.\n")
    first = _session("s1", [], user="For data fetching let's use SWR for now.")
    consolidate_offline(tmp_path, [first], today=date(2026, 3, 5))
    later = _session("s2", [], user="Change of plan: drop SWR, we move to TanStack Query.",
                     when=LATER)
    consolidate_offline(tmp_path, [later], today=date(2026, 3, 21))
    notes = (tmp_path / "team-notes.md").read_text()
    # replaced where the person wrote it, their words kept as what was replaced
    assert "- **Data fetching:** Drop SWR, move to TanStack Query." in notes or \
        "Drop SWR, move to TanStack Query." in notes
    assert "Data fetching uses SWR hooks in src/api/" in notes.split("(formerly:", 1)[1]
    assert "- QA signs off on the preview.\n" in notes
    # nothing anywhere still presents SWR as current
    for line in _bullets(tmp_path):
        assert "SWR" not in line or "Drop SWR" in line
    # the topic that only held the SWR decision is gone, and so is its index line
    assert check_index(tmp_path) == []
    index = (tmp_path / "MEMORY.md").read_text()
    for entry in parse_index(index).entries:
        assert (tmp_path / entry.target_path).is_file()


def test_restatements_of_a_choice_merge_keeping_the_richer_words(tmp_path: Path) -> None:
    session = _session("s1", [], user=[
        "Note: this repo uses pnpm — never npm or yarn; the lockfile is pnpm-lock.yaml.",
        "No, don't use npm here — use pnpm.",
    ])
    consolidate_offline(tmp_path, [session], today=date(2026, 3, 5))
    rules = [b for b in _bullets(tmp_path) if "pnpm" in b and "npm" in b]
    assert len(rules) == 1 and "pnpm-lock.yaml" in rules[0]
