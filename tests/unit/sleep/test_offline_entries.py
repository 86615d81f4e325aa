"""The offline engine's facts and the REM entry <-> memory-dir mapping."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from pydantic import ValidationError

from reverie.curation.facts import Fact
from reverie.memory.store import blocking_problems, check_index
from reverie.sleep.entries import fix_recorded_dates, load_entries, render_files
from reverie.sleep.models import ConsolidatedMemory, MemoryEntry
from reverie.sleep.rem import capped_model
from reverie.sleep.rule_based import consolidate_facts, notes_sections, summarise_offline
from reverie.transcripts.model import (
    Message,
    Session,
    ToolCall,
    ToolKind,
    ToolResult,
    Transcript,
)

NOTES = """# Session Title
_A short and distinctive 5-10 word descriptive title for the session_

Fix flaky invoice export

# Current State
_What is actively being worked on right now_

Export passes; CSV header order still to confirm with the user.

# Learnings
_What has worked well? What has not?_

- The invoice tests need `TZ=UTC` or dates shift by a day.
- Use the `--frozen` flag with uv sync in CI.
"""


def _transcript() -> Transcript:
    session = Session(id="abc12345", agent="claude-code", path=Path("/x.jsonl"), cwd="/repo")
    call_fail = ToolCall(
        id="c1", name="Bash", kind=ToolKind.SHELL, command="uv run pytest tests/export"
    )
    call_edit = ToolCall(
        id="c2", name="Edit", kind=ToolKind.EDIT, file_paths=["/repo/src/export.py"]
    )
    call_ok = ToolCall(
        id="c3", name="Bash", kind=ToolKind.SHELL, command="uv run pytest tests/export -q"
    )
    call_ls = ToolCall(id="c4", name="Bash", kind=ToolKind.SHELL, command="ls -la")
    return Transcript(
        session=session,
        messages=[
            Message(
                id="1",
                role="user",
                text="The invoice export test is flaky. Please fix it. "
                "Always use uv run instead of calling python directly.",
            ),
            Message(id="2", role="assistant", text="Running the tests.", tool_calls=[call_fail]),
            Message(
                id="3",
                role="user",
                tool_results=[
                    ToolResult(
                        call_id="c1",
                        is_error=True,
                        exit_code=1,
                        output="collected 4 items\n"
                        "FAILED tests/export/test_csv.py::test_dates - AssertionError",
                    )
                ],
            ),
            Message(id="4", role="assistant", tool_calls=[call_edit, call_ls]),
            Message(
                id="5",
                role="user",
                tool_results=[ToolResult(call_id="c2"), ToolResult(call_id="c4", exit_code=0)],
            ),
            Message(id="6", role="assistant", tool_calls=[call_ok]),
            Message(
                id="7",
                role="user",
                tool_results=[ToolResult(call_id="c3", exit_code=0, output="4 passed")],
            ),
            Message(id="8", role="assistant", text="Fixed: the export now formats dates in UTC."),
        ],
    )


def test_notes_sections_drop_the_italic_descriptions() -> None:
    sections = notes_sections(NOTES)
    assert sections["Session Title"] == "Fix flaky invoice export"
    assert sections["Current State"].startswith("Export passes")


def test_offline_summary_and_candidates_state_concrete_facts() -> None:
    title, summary = summarise_offline(_transcript(), NOTES)
    assert title == "Fix flaky invoice export"
    text = summary.summary
    assert "`src/export.py`" in text
    assert "2 project command(s) of which 1 failed" in text
    assert "Fixed: `uv run pytest tests/export` failed (FAILED tests/export/test_csv.py" in text
    assert "fixed in `src/export.py`" in text
    assert "Last reply: Fixed: the export now formats dates in UTC." in text
    assert "CSV header order" in text
    values = [c.value for c in summary.memory_candidates]
    # plain statements, not quoted chat; the test command in the form that worked; the error
    # with the change that fixed it and the run that proved it
    assert "**Package manager:** Always use uv run instead of calling python directly." in values
    assert "**Test:** `uv run pytest tests/export -q`" in values
    assert ("`uv run pytest tests/export` failed with FAILED tests/export/test_csv.py::test_dates"
            " - AssertionError; fixed by changing `src/export.py`; verified by "
            "`uv run pytest tests/export -q`.") in values
    assert not any("ls -la" in v or "User" in v or "please fix" in v.lower() for v in values)
    # deterministic
    assert summarise_offline(_transcript(), NOTES) == (title, summary)


def _entry(key: str, content: str, recorded: date, **kw: object) -> MemoryEntry:
    return MemoryEntry.model_validate(
        {
            "key": key,
            "title": kw.get("title", key.title()),
            "description": kw.get("description", "when " + key),
            "type": kw.get("type", "project"),
            "content": content,
            "recorded": recorded,
        }
    )


def _fact(slot: str, text: str, day: date, **kw: object) -> Fact:
    from datetime import UTC, datetime

    return Fact(slot=slot, text=text, at=datetime(day.year, day.month, day.day, 12, tzinfo=UTC),
                session="s" * 8, sources=["s" * 8], first=day, **kw)  # type: ignore[arg-type]


def test_offline_rem_merges_facts_by_subject_keeps_dates_and_caps() -> None:
    old = date(2026, 1, 1)
    today = date(2026, 11, 10)
    existing = [
        _entry("package-manager-and-scripts",
               "# Package manager and scripts\n\n"
               "- **Build:** `make build` _(session aaaaaaaa, 2026-01-01)_", old),
        _entry("people", "Alice owns billing.", old, type="user"),
        _entry("ancient", "x", date(2025, 1, 1)),
    ]
    facts = [
        _fact("cmd:build:make build", "`make build`", today, kind="command", label="Build"),
        _fact("s:database:x", "Use Postgres for the database, not SQLite.", today,
              kind="decision", subject="database", label="Database", choice="postgres",
              exclusive=True),
    ]
    merged = consolidate_facts(existing, facts, today, max_entries=3)
    by_key = {e.key: e for e in merged}
    # the oldest entry was dropped for the cap; the new subject got its own topic
    assert set(by_key) == {"package-manager-and-scripts", "people", "database-and-migrations"}
    assert by_key["people"].recorded == old  # untouched
    scripts = by_key["package-manager-and-scripts"]
    assert scripts.content.count("`make build`") == 1  # recurrence, not a duplicate line
    assert "2 sessions, latest ssssssss 2026-11-10, first 2026-01-01" in scripts.content
    database = by_key["database-and-migrations"]
    assert database.recorded == today and "**Database:** Use Postgres" in database.content
    assert len(f"- [{database.title}]({database.key}.md) - {database.description}") <= 150


def test_entries_round_trip_through_the_memory_dir(tmp_path: Path) -> None:
    mem = tmp_path / "memory"
    mem.mkdir()
    (mem / "logs").mkdir()
    (mem / "logs" / "2026-11-09.md").write_text("raw log")
    (mem / "MEMORY.md").write_text(
        "# Memory\n\n- [Old](old.md) - old hook\n- [Log](logs/2026-11-09.md) - raw\n"
    )
    (mem / "old.md").write_text(
        "---\nname: Old\ndescription: old hook\ntype: project\n"
        "updated: 2026-01-02\nsources: [s1]\n---\n\nold body\n"
    )
    before = load_entries(mem)
    assert [(e.key, e.recorded, e.content) for e in before] == [
        ("old", date(2026, 1, 2), "old body")
    ]
    after = [_entry("build-cmd", "Run `make build`.", date(2026, 11, 10), title="Build command")]
    writes, deletes = render_files(mem, after)
    assert deletes == ["old.md"]
    assert "- [Build command](build-cmd.md) - when build-cmd" in writes["MEMORY.md"]
    assert "- [Log](logs/2026-11-09.md) - raw" in writes["MEMORY.md"]
    for name, text in writes.items():
        (mem / name).write_text(text)
    for name in deletes:
        (mem / name).unlink()
    assert blocking_problems(check_index(mem)) == []
    assert [e.key for e in load_entries(mem)] == ["build-cmd"]
    assert load_entries(mem)[0].recorded == date(2026, 11, 10)
    # the same entries again: nothing to write, nothing to delete
    assert render_files(mem, load_entries(mem), load_entries(mem)) == ({}, [])


def test_recorded_dates_of_unchanged_entries_survive_whatever_the_model_says() -> None:
    old = date(2026, 1, 1)
    today = date(2026, 11, 10)
    before = [_entry("a", "same", old), _entry("b", "before", old)]
    claimed = [_entry("a", "same", today), _entry("b", "after", old), _entry("c", "new", old)]
    fixed = {e.key: e.recorded for e in fix_recorded_dates(before, claimed, today)}
    assert fixed == {"a": old, "b": today, "c": today}


def test_rem_schema_rejects_over_cap_duplicates_and_bad_keys() -> None:
    model = capped_model(2)
    rows = [_entry(k, "x", date(2026, 1, 1)).model_dump(mode="json") for k in ("a", "b", "c")]
    with pytest.raises(ValidationError):
        model.model_validate({"entries": rows})
    assert len(model.model_validate({"entries": rows[:2]}).entries) == 2
    assert model.model_json_schema()["properties"]["entries"]["maxItems"] == 2
    with pytest.raises(ValidationError):
        ConsolidatedMemory.model_validate({"entries": [rows[0], rows[0]]})
    with pytest.raises(ValidationError):
        MemoryEntry.model_validate({**rows[0], "key": "../.."})
    assert MemoryEntry.model_validate({**rows[0], "key": "../Etc Passwd"}).key == "etc-passwd"


def test_rem_index_lines_fit_the_limit_whatever_the_entry_says(tmp_path: Path) -> None:
    """The sleep cycle once wrote a 224-character index line (a 120-character title plus a
    110-character hook): every line REM writes now fits in 150, model or offline."""
    long = _entry("k" * 60, "body", date(2026, 11, 10), title="T" * 120,
                  description="a long hook " * 16)
    writes, _ = render_files(tmp_path, [long])
    lines = writes["MEMORY.md"].splitlines()
    assert max(len(line) for line in lines) <= 150
    assert f"]({'k' * 60}.md) - a long hook" in writes["MEMORY.md"]


def test_offline_rem_replaces_a_reversed_decision_and_keeps_a_persons_line() -> None:
    old = date(2026, 1, 1)
    today = date(2026, 11, 10)
    existing = [_entry("database-and-migrations",
                       "# Database and migrations\n\n- We use SQLite for everything.\n"
                       "- Migrations are numbered by hand.", old)]
    facts = [_fact("s:database:drop-sqlite", "Drop SQLite, we move to Postgres 16.", today,
                   kind="decision", subject="database", label="Database", choice="postgres",
                   replaces="sqlite", exclusive=True)]
    (entry,) = consolidate_facts(existing, facts, today, max_entries=10)
    assert "- **Database:** Drop SQLite, we move to Postgres 16." in entry.content
    assert "(formerly: We use SQLite for everything; replaced on 2026-11-10)" in entry.content
    assert "- Migrations are numbered by hand." in entry.content  # a person's line stays
    assert "- We use SQLite" not in entry.content
