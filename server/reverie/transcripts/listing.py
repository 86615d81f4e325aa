"""The agent sessions of a workspace as rows (newest first): what ``reverie sessions`` prints and
the editor's Sessions view shows. Core code, so the server and the CLI share it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from reverie.transcripts.discovery import SessionRef, discover_sessions
from reverie.transcripts.editor_places import EditorPlaces
from reverie.transcripts.model import Transcript
from reverie.transcripts.reader import (
    TranscriptError,
    is_kilo_db,
    load_sessions,
    load_transcript,
)
from reverie.transcripts.tokens import context_tokens


def session_rows(
    workspace: Path,
    agent_home: Path,
    on_skip: Callable[[Path, Exception], None] | None = None,
    *,
    with_title: bool = False,
    editor: EditorPlaces | None = None,
    notes: list[str] | None = None,
) -> list[dict[str, Any]]:
    """``{agent, session_id, path, messages, tokens, updated_at, current}`` per session (and
    ``title`` with ``with_title``: the CLI's ``--json`` keeps its keys); an unreadable
    transcript is reported to ``on_skip`` and listed with no messages. ``editor``: where the
    editor's agents keep sessions (default: detected); ``notes`` collects skipped folders."""
    refs = discover_sessions(workspace, agent_home, editor, notes)
    current = next((r for r in refs if not r.is_subagent), None)
    loaded: dict[Path, dict[str, Transcript]] = {}
    rows: list[tuple[datetime, dict[str, Any]]] = []
    for ref in refs:
        transcript = _transcript(ref, loaded, on_skip)
        updated_at = _updated_at(ref, transcript)
        row: dict[str, Any] = {
            "agent": ref.agent,
            "session_id": ref.session_id,
            "path": str(ref.path),
            "messages": len(transcript.messages) if transcript else 0,
            "tokens": context_tokens(transcript.messages) if transcript else 0,
            "updated_at": updated_at.isoformat(),
            "current": ref is current,
        }
        if with_title:
            row["title"] = transcript.session.title if transcript else None
        rows.append((updated_at, row))
    # newest first by the sessions' own times: a copied or synced home has copy-time mtimes
    rows.sort(key=lambda pair: pair[0], reverse=True)
    return [row for _, row in rows]


def _updated_at(ref: SessionRef, transcript: Transcript | None) -> datetime:
    """When the session last had a message, by its own records; the file's time when they
    carry none (Aider logs no per-message times, an empty file has none)."""
    own = transcript.session.updated_at if transcript is not None else None
    if own is None:
        return ref.updated_at
    return own if own.tzinfo is not None else own.replace(tzinfo=ref.updated_at.tzinfo)


def _transcript(
    ref: SessionRef,
    loaded: dict[Path, dict[str, Transcript]],
    on_skip: Callable[[Path, Exception], None] | None,
) -> Transcript | None:
    if is_kilo_db(ref.agent, ref.path):  # every project's sessions in one file: just this one
        try:
            return load_transcript(ref.path, ref.session_id, ref.agent)
        except TranscriptError as exc:
            if on_skip is not None:
                on_skip(ref.path, exc)
            return None
    if ref.path not in loaded:
        try:
            loaded[ref.path] = {t.session.id: t for t in load_sessions(ref.path, ref.agent)}
        except TranscriptError as exc:
            if on_skip is not None:
                on_skip(ref.path, exc)
            loaded[ref.path] = {}
    by_id = loaded[ref.path]
    return by_id.get(ref.session_id) or (next(iter(by_id.values())) if len(by_id) == 1 else None)
