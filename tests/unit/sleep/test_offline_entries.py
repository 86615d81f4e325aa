"""The offline engine's facts and the REM entry <-> memory-dir mapping."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from pydantic import ValidationError

from reverie.memory.store import blocking_problems, check_index
from reverie.sleep.entries import fix_recorded_dates, load_entries, render_files
from reverie.sleep.models import ConsolidatedMemory, MemoryCandidate, MemoryEntry
from reverie.sleep.offline import consolidate_offline, notes_sections, summarise_offline
from reverie.sleep.rem import capped_model
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
    assert "3 shell command(s) of which 1 failed" in text
    assert "Fixed: `uv run pytest tests/export -q` failed (FAILED tests/export/test_csv.py" in text
    assert "Last reply: Fixed: the export now formats dates in UTC." in text
    assert "CSV header order" in text
    values = {c.key: c.value for c in summary.memory_candidates}
    assert "`uv run pytest tests/export -q` runs successfully" in values["command-uv-run-pytest"]
    assert "once failed" in values["fix-uv-run-pytest"]
    assert any("Always use uv run" in v for k, v in values.items() if k.startswith("preference-"))
    assert any("TZ=UTC" in v for k, v in values.items() if k.startswith("note-"))
    assert not any("ls -la" in v for v in values.values())  # not a build/test command
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


def test_offline_rem_merges_by_key_keeps_dates_and_caps() -> None:
    old = date(2026, 1, 1)
    today = date(2026, 11, 10)
    existing = [
        _entry("build", "make build", old),
        _entry("style", "black", old),
        _entry("ancient", "x", date(2025, 1, 1)),
    ]
    cands = [
        MemoryCandidate(key="Build", value="make build"),  # already known: unchanged
        MemoryCandidate(key="style", value="ruff format, not black"),
        MemoryCandidate(key="new-thing", value="the API lives in api/"),
    ]
    merged = consolidate_offline(existing, cands, today, max_entries=3)
    by_key = {e.key: e for e in merged}
    assert set(by_key) == {"build", "style", "new-thing"}  # the oldest was dropped for the cap
    assert by_key["build"].recorded == old
    assert by_key["style"].recorded == today and "ruff format" in by_key["style"].content
    assert by_key["new-thing"].recorded == today


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
