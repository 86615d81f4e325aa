"""Runtime events of background jobs.

Every job (session memory, dream, sleep) and the tool gate report what they do as ``JobEvent``s
through an ``EventSink``. The CLI logs them; the language server forwards them to the editor.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

JobKind = Literal["session_memory", "dream", "sleep", "tools", "watch"]
EventType = Literal[
    "start",
    "progress",
    "complete",
    "skipped",
    "coalesced",
    "trailing_start",
    "cancelled",
    "error",
    "denied",
    "memory_saved",
    "notes_updated",
    "lock_changed",
]


class JobEvent(BaseModel):
    """One thing a job did; ``payload`` carries the details (reason, files, tokens)."""

    job: JobKind
    type: EventType
    job_id: str | None = None
    session_id: str | None = None
    message: str = ""
    payload: dict[str, Any] = Field(default_factory=dict)
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))


EventSink = Callable[[JobEvent], None]


def discard_events(event: JobEvent) -> None:
    """An ``EventSink`` for callers that do not care."""


class EventRecorder:
    """An ``EventSink`` that keeps every event (CLI summaries and tests)."""

    def __init__(self) -> None:
        self.events: list[JobEvent] = []

    def __call__(self, event: JobEvent) -> None:
        self.events.append(event)

    def of_type(self, type_: str) -> list[JobEvent]:
        return [e for e in self.events if e.type == type_]
