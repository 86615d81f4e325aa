"""Per-session extraction state, saved beside the notes so a restart continues where it stopped.

``session_memory.state.json`` (0600, written atomically) holds the cursors, the token count at
the last extraction and the offline writer's record of the lines it generated (which is how it
tells them apart from lines a person added by hand).
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from reverie.fsutil import atomic_write_text
from reverie.session_memory.cursor import MessageCursor

logger = logging.getLogger(__name__)

STATE_VERSION = 1


class ExtractionState(BaseModel):
    """What the manager remembers about one session between extractions."""

    version: int = STATE_VERSION
    session_id: str = ""
    #: the first extraction has happened (the init threshold no longer applies).
    initialized: bool = False
    #: context size (tokens) of the conversation at the last extraction.
    tokens_at_last_extraction: int = 0
    #: the last message when a threshold check last said "due" (tool calls are counted from here).
    last_memory_cursor: MessageCursor | None = None
    #: the last message the notes are known to cover; only moves at a point with no tool call
    #: in flight, so compaction can safely drop everything up to it.
    last_summarized_cursor: MessageCursor | None = None
    #: the last message the writer was given (incremental mode sends what comes after it).
    last_extracted_cursor: MessageCursor | None = None
    last_extraction_at: datetime | None = None
    extractions: int = 0
    #: offline writer: the lines it wrote in each section at its last run.
    generated: dict[str, list[str]] = Field(default_factory=dict)
    #: sha256 of the notes file as Reverie last wrote it (a different hash means a hand edit).
    notes_sha256: str | None = None


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def load_state(path: Path, session_id: str) -> ExtractionState:
    """The saved state, or a fresh one when there is none or it cannot be read."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ExtractionState(session_id=session_id)
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("cannot read %s (%s); starting from scratch", path, exc)
        return ExtractionState(session_id=session_id)
    try:
        state = ExtractionState.model_validate_json(raw)
    except ValidationError as exc:
        logger.warning("ignoring unreadable state %s: %s", path, exc.errors()[0]["msg"])
        return ExtractionState(session_id=session_id)
    if state.version != STATE_VERSION or state.session_id not in ("", session_id):
        return ExtractionState(session_id=session_id)
    state.session_id = session_id
    return state


def save_state(path: Path, state: ExtractionState) -> None:
    atomic_write_text(path, state.model_dump_json(indent=2) + "\n")
