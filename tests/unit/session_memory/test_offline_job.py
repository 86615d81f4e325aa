"""The offline writer as one job: the streamed point equals the list-based one, and the job over
a transcript file gives exactly what the writer gives over the loaded messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from reverie.config import Settings
from reverie.events import discard_events
from reverie.session_memory.rule_based_job import (
    OfflineNotesJob,
    PointFold,
    notes_from_transcript,
)
from reverie.session_memory.source import InMemoryConversation, extracted_point
from reverie.session_memory.state import ExtractionState
from reverie.session_memory.template import default_template
from reverie.session_memory.writers import WriteRequest, build_offline_notes
from reverie.transcripts.digest import digests
from reverie.transcripts.reader import load_transcript

from .conftest import CLAUDE_INLINE, CLAUDE_SPOTTER, CODEX_ROLLOUT, TRANSCRIPTS, Conversation

ALL = sorted(p for p in TRANSCRIPTS.rglob("*") if p.suffix in (".jsonl", ".json", ".md"))


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(TRANSCRIPTS)))
def test_point_fold_equals_extracted_point_on_every_fixture(path: Path) -> None:
    messages = load_transcript(path).messages
    fold = PointFold()
    for item in digests(messages):
        fold.feed(item)
    assert fold.point() == extracted_point(messages)


@pytest.mark.parametrize("path", [CLAUDE_INLINE, CLAUDE_SPOTTER, CODEX_ROLLOUT],
                         ids=["claude-inline", "claude-spotter", "codex"])
def test_point_fold_equals_extracted_point_after_every_message(path: Path) -> None:
    """Every prefix: a tool loop in progress, usage mid-response, split responses."""
    messages = load_transcript(path).messages
    fold = PointFold()
    for n, item in enumerate(digests(messages), start=1):
        fold.feed(item)
        assert fold.point() == extracted_point(messages[:n]), n


def test_point_fold_tool_loop_and_split_responses() -> None:
    convo = (Conversation().user("fix it").assistant("looking", usage=900)
             .shell("pytest", "1 failed", exit_code=1).pending_call("pytest -x"))
    messages = convo.messages
    fold = PointFold()
    assert list(fold.tap(messages)) == messages
    assert fold.point() == extracted_point(messages)
    assert fold.point().mid_tool_loop is True
    convo.assistant("done")
    fold.feed(digests(convo.messages[-1:])[0])
    assert fold.point() == extracted_point(convo.messages)
    assert fold.point().mid_tool_loop is False
    empty = PointFold()
    assert empty.point() == extracted_point([])


@pytest.mark.parametrize("path", [CLAUDE_INLINE, CLAUDE_SPOTTER, CODEX_ROLLOUT],
                         ids=["claude-inline", "claude-spotter", "codex"])
def test_job_over_the_file_equals_the_writer_over_loaded_messages(path: Path) -> None:
    transcript = load_transcript(path)
    template = default_template()
    session = transcript.session
    workspace = Path(session.cwd or "/")
    request = WriteRequest(
        session=session, workspace=workspace, notes_path=Path("/n/notes.md"),
        current_notes=template.text, template=template,
        conversation=InMemoryConversation(transcript.messages), state=ExtractionState(),
        settings=Settings(), events=discard_events,
    )
    expected = build_offline_notes(request, transcript.messages)
    job = OfflineNotesJob(session=session, workspace=workspace, current_notes=template.text,
                          template=template, previous=None)
    got = notes_from_transcript(job, path, session.id)
    assert got.notes.text == expected.text
    assert got.notes.generated == expected.generated
    assert got.point == expected.point == extracted_point(transcript.messages)


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(TRANSCRIPTS)))
def test_session_head_names_the_session_as_the_whole_file_does(path: Path) -> None:
    """``reverie notes --force`` reads only the head to name the session's notes."""
    from reverie.session_memory.source import load_session_head

    whole = load_transcript(path).session
    head = load_session_head(path, None)
    assert (head.id, head.agent, head.cwd, head.parent_session_id) == (
        whole.id, whole.agent, whole.cwd, whole.parent_session_id)
