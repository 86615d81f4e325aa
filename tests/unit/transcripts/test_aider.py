"""Aider chat history: one session per run, edits and commits as tool calls."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reverie.analysis import analyse_session
from reverie.transcripts.model import ToolKind
from reverie.transcripts.reader import detect_agent, load_sessions, load_transcript

FIXTURE = (Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / "aider"
           / "aider-repo" / ".aider.chat.history.md")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture history in a git repository of its own (Aider names files from the git
    root; in place, the fixture would sit inside Reverie's own repository)."""
    root = tmp_path_factory.mktemp("aider-repo")
    (root / ".git").mkdir()
    shutil.copyfile(FIXTURE, root / ".aider.chat.history.md")
    return root


def test_every_run_is_a_session(repo: Path) -> None:
    HISTORY, ROOT = repo / ".aider.chat.history.md", str(repo)
    assert detect_agent(HISTORY) == "aider"
    runs = load_sessions(HISTORY)
    assert len(runs) == 147
    assert len({r.session.id for r in runs}) == 147
    assert runs[0].session.id == "aider-20240805T193302-0"
    assert all(r.session.cwd == ROOT for r in runs)
    assert all(r.session.started_at is not None for r in runs)
    assert runs[0].session.started_at is not None
    assert runs[0].session.started_at.strftime("%Y-%m-%d %H:%M:%S") == "2024-08-05 19:33:02"


def test_applied_edits_and_commits(repo: Path) -> None:
    HISTORY, ROOT = repo / ".aider.chat.history.md", str(repo)
    runs = load_sessions(HISTORY)
    edits = [c for r in runs for m in r.messages for c in m.tool_calls if c.name == "apply_edit"]
    commits = [c for r in runs for m in r.messages for c in m.tool_calls if c.name == "git_commit"]
    assert len(edits) == 45 and len(commits) == 82  # the counts SOURCES.md gives
    assert all(c.kind is ToolKind.EDIT for c in edits)
    second = runs[1]
    assert second.session.title == "Use the Spinner instead of the inlined custom spinner"
    reply = next(m for m in second.messages if m.tool_calls)
    assert reply.tool_calls[0].file_paths == [f"{ROOT}/aider/utils.py"]
    assert reply.tool_calls[1].input["sha"] == "fd43cd4"
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (5244, 604)
    assert "<<<<<<< SEARCH" in reply.text and ">>>>>>> REPLACE" in reply.text


def test_load_transcript_is_the_latest_run_and_session_can_be_picked() -> None:
    HISTORY = FIXTURE
    runs = load_sessions(HISTORY)
    latest = load_transcript(HISTORY)
    assert latest.session.id == runs[-1].session.id
    picked = load_transcript(HISTORY, session_id=runs[1].session.id)
    assert [m.id for m in picked.messages] == [m.id for m in runs[1].messages]



def _history(folder: Path, *starts: str) -> Path:
    (folder / ".git").mkdir(exist_ok=True)
    path = folder / ".aider.chat.history.md"
    path.write_text("".join(
        f"# aider chat started at {start}\n\n> Aider v0.86.1\n\n#### fix the build {i}\n\n"
        f"Done.\n\n> Applied edit to main.go\n\n" for i, start in enumerate(starts)))
    return path


def _local(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").astimezone()


def test_a_copied_history_is_dated_by_its_runs_not_the_copy(tmp_path: Path) -> None:
    """A clone or a copy gives the history a new modification time. It still tells what is new
    (the last run's updated_at, what discovery and the dream's scan go by), but what each run
    said is dated by the run: its messages carry its start, and so does its analysis."""
    path = _history(tmp_path, "2026-11-18 10:00:00", "2026-11-20 09:00:00")
    copied_at = datetime(2026, 12, 1, 12, tzinfo=UTC)
    os.utime(path, (copied_at.timestamp(), copied_at.timestamp()))
    first, last = load_sessions(path)
    assert {m.timestamp for m in first.messages} == {_local("2026-11-18 10:00:00")}
    assert {m.timestamp for m in last.messages} == {_local("2026-11-20 09:00:00")}
    assert last.session.updated_at == copied_at  # new to the scan
    analysis = analyse_session(last.messages, last.session)
    assert analysis.updated_at == _local("2026-11-20 09:00:00")
