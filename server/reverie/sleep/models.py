"""The structured shapes the sleep cycle asks models for, and the report it gives back.

The LLM-facing models (``ConversationSummary``, ``ConsolidatedMemory``) have no defaults so their
JSON schema is valid for strict structured output on both providers: every field is required.
"""

from __future__ import annotations

import re
from datetime import date as Date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

_KEY_CHARS = re.compile(r"[^a-z0-9_-]+")


def normalise_key(raw: str) -> str:
    """A memory key that is also a safe file stem: lowercase ``[a-z0-9_-]``, at most 64 chars."""
    key = _KEY_CHARS.sub("-", raw.strip().lower()).strip("-_")[:64].strip("-_")
    return key


class MemoryCandidate(BaseModel):
    """A fact a conversation suggests remembering: a short key and the fact itself."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, max_length=200)
    value: str = Field(min_length=1, max_length=4000)


class ConversationSummary(BaseModel):
    """What deep sleep asks for per session: a summary and new memory candidates."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1)
    memory_candidates: list[MemoryCandidate]


EntryType = Literal["user", "feedback", "project", "reference"]


class MemoryEntry(BaseModel):
    """One consolidated memory: it becomes one topic file plus one ``MEMORY.md`` index line.

    ``key`` is the topic file's stem, ``title`` its name and index link text, ``description``
    the one-line hook, ``type`` the topic type, ``content`` the body, ``recorded`` its
    ``updated`` date.
    """

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, max_length=200)
    title: str = Field(min_length=1, max_length=120)
    description: str = Field(max_length=200)
    type: EntryType
    content: str = Field(min_length=1, max_length=8000)
    recorded: Date

    @field_validator("key")
    @classmethod
    def _key_is_a_safe_file_stem(cls, value: str) -> str:
        key = normalise_key(value)
        if not key:
            raise ValueError("key must contain at least one letter or digit")
        return key

    @field_validator("title", "description")
    @classmethod
    def _one_line(cls, value: str, info: ValidationInfo) -> str:
        line = " ".join(value.split())
        if info.field_name == "title" and not line:
            raise ValueError("title must not be blank")
        return line


class ConsolidatedMemory(BaseModel):
    """What REM asks for: the whole memory after consolidation."""

    model_config = ConfigDict(extra="forbid")

    entries: list[MemoryEntry]

    @field_validator("entries")
    @classmethod
    def _keys_unique(cls, value: list[MemoryEntry]) -> list[MemoryEntry]:
        seen: set[str] = set()
        for entry in value:
            if entry.key in seen:
                raise ValueError(f"duplicate key {entry.key!r}")
            seen.add(entry.key)
        return value


class SessionDigest(BaseModel):
    """One reviewed session in the journal: where it came from and what deep sleep made of it."""

    session_id: str
    agent: str
    title: str
    summary: str
    candidates: list[MemoryCandidate] = Field(default_factory=list)
    error: str | None = None


class HousekeepingReport(BaseModel):
    """What housekeeping removed, by kind, and how many bytes that freed."""

    journals_deleted: int = 0
    notes_deleted: int = 0
    history_runs_pruned: int = 0
    transcripts_deleted: int = 0
    bytes_reclaimed: int = 0
    errors: list[str] = Field(default_factory=list)


class SleepReport(BaseModel):
    """The result of one cycle. ``to_json_dict`` gives exactly the CLI's ``--json`` keys
    (``housekeeping`` holds the retention counts: journals, notes, history runs, transcripts
    removed and bytes reclaimed)."""

    date: Date
    sessions_found: int = 0
    summaries_ok: int = 0
    summaries_failed: int = 0
    candidates: int = 0
    entries_before: int = 0
    entries_after: int = 0
    journal_path: Path | None = None
    run_id: str | None = None
    skipped_reason: str | None = None
    engine: str = "offline"
    rem_error: str | None = None
    files_touched: list[str] = Field(default_factory=list)
    housekeeping: HousekeepingReport = Field(default_factory=HousekeepingReport)
    duration_seconds: float = 0.0

    def to_json_dict(self) -> dict[str, object]:
        return {
            "date": self.date.isoformat(),
            "sessions_found": self.sessions_found,
            "summaries_ok": self.summaries_ok,
            "summaries_failed": self.summaries_failed,
            "candidates": self.candidates,
            "entries_before": self.entries_before,
            "entries_after": self.entries_after,
            "journal_path": str(self.journal_path) if self.journal_path else None,
            "run_id": self.run_id,
            "skipped_reason": self.skipped_reason,
            "housekeeping": self.housekeeping.model_dump(exclude={"errors"}),
        }
