"""Notifications the server sends unasked (``reverie/memorySaved``, ``reverie/jobEvent``...)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_serializer

from reverie.lsp.payloads.wire import JobEventType, Wire, camel_keys


class MemorySaved(Wire):
    """``reverie/memorySaved``: a dream or sleep changed memory files."""

    memory_paths: list[str]
    verb: str
    source: str
    run_id: str | None = None
    message: str


class SessionNotesUpdated(Wire):
    """``reverie/sessionNotesUpdated``: an extraction finished (``edited``: the file changed)."""

    session_id: str
    path: str
    edited: bool


class JobEventPayload(Wire):
    """``reverie/jobEvent``: every runtime event of every job (``payload`` keys camelCase)."""

    job_id: str | None
    kind: str
    type: JobEventType
    payload: dict[str, Any] = Field(default_factory=dict)

    @field_serializer("payload")
    def _camel_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        return dict(camel_keys(payload))
