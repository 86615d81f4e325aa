"""The interface both notes writers share, and the offline writer behind it.

A writer gets the current notes and the conversation and returns the new notes text. It never
writes the notes file itself: the manager validates the result (the validity guard) and writes it
atomically, so a failing writer leaves the file byte-identical.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from reverie.background import run_in_background
from reverie.config import Settings
from reverie.events import EventSink
from reverie.session_memory.offline import build_notes
from reverie.session_memory.source import Conversation, ExtractedPoint, extracted_point
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


class NotesWriter(Protocol):
    name: str

    async def write(self, request: WriteRequest) -> WriteOutcome: ...


def build_offline_notes(request: WriteRequest, messages: Sequence[Message]) -> WriteOutcome:
    """Synchronous core of the offline writer (run in a worker thread): ``build_notes``."""
    notes = build_notes(
        iter(messages),
        session=request.session,
        workspace=request.workspace,
        current_notes=request.current_notes,
        template=request.template,
        previous=request.state.generated,
    )
    return WriteOutcome(
        text=notes.text,
        point=extracted_point(messages),
        redactions=notes.redactions,
        generated=notes.generated,
    )


class OfflineWriter:
    """The default engine: deterministic notes from the conversation, no model call."""

    name = "offline"

    async def write(self, request: WriteRequest) -> WriteOutcome:
        messages = await request.conversation.messages()
        return await run_in_background(build_offline_notes, request, messages)
