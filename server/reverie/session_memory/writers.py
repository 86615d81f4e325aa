"""The interface both notes writers share, and the offline writer behind it.

A writer gets the current notes and the conversation and returns the new notes text. It never
writes the notes file itself: the manager validates the result (the validity guard) and writes it
atomically, so a failing writer leaves the file byte-identical.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from reverie.config import Settings
from reverie.events import EventSink
from reverie.session_memory.cursor import ExtractedPoint
from reverie.session_memory.rule_based_job import (
    OfflineNotesJob,
    OfflineNotesResult,
    notes_from_messages,
)
from reverie.session_memory.source import Conversation
from reverie.session_memory.state import ExtractionState
from reverie.session_memory.template import NotesTemplate
from reverie.transcripts.model import Message, Session


@dataclass(frozen=True, slots=True)
class WriteRequest:
    session: Session
    workspace: Path
    notes_path: Path
    current_notes: str
    template: NotesTemplate
    #: the conversation; each writer reads what it needs of it (``source.Conversation``)
    conversation: Conversation
    state: ExtractionState
    settings: Settings
    events: EventSink


@dataclass(slots=True)
class WriteOutcome:
    """What a writer produced. ``text`` is ``None`` when it failed (``error`` says why)."""

    text: str | None
    #: how far the conversation the writer saw went (what the state records after a success)
    point: ExtractedPoint | None = None
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    redactions: int = 0
    error: str | None = None
    #: offline writer only: its own lines per section (saved to tell them from hand edits).
    generated: dict[str, list[str]] | None = None
    denials: list[str] = field(default_factory=list)
    #: dollars, when the provider reported the cost (the coding-agent CLIs)
    cost_usd: float | None = None


class NotesWriter(Protocol):
    name: str

    async def write(self, request: WriteRequest) -> WriteOutcome: ...


def offline_job(request: WriteRequest) -> OfflineNotesJob:
    """What the offline writer needs besides the conversation, picklable."""
    return OfflineNotesJob(
        session=request.session,
        workspace=request.workspace,
        current_notes=request.current_notes,
        template=request.template,
        previous=request.state.generated,
    )


def _outcome(result: OfflineNotesResult) -> WriteOutcome:
    notes = result.notes
    return WriteOutcome(
        text=notes.text, point=result.point, redactions=notes.redactions,
        generated=notes.generated,
    )


def build_offline_notes(request: WriteRequest, messages: Iterable[Message]) -> WriteOutcome:
    """The offline writer over ``messages``, synchronously (tests, benchmarks)."""
    return _outcome(notes_from_messages(offline_job(request), messages))


class OfflineWriter:
    """The default engine: deterministic notes from the conversation, no model call.

    The whole run (reading the conversation, building, merging) is the conversation's
    ``offline_notes`` job: in the language server a worker process reads the transcript and
    returns only the new text, so the server's interpreter never holds the conversation.
    """

    name = "offline"

    async def write(self, request: WriteRequest) -> WriteOutcome:
        from concurrent.futures import BrokenExecutor

        from reverie.transcripts.reader import TranscriptError

        try:
            result = await request.conversation.offline_notes(offline_job(request))
        except (TranscriptError, BrokenExecutor) as exc:  # unreadable; the worker was killed
            return WriteOutcome(text=None, error=str(exc))
        return _outcome(result)
