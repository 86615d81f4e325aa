"""Transcript sessions and their notes: the listing and reading both front ends offer.

"Session" here is always an agent's conversation (a transcript); its notes are the file
Reverie keeps for it (``ProjectPaths.notes_path``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reverie.config import ProjectPaths, Settings
from reverie.errors import UserError
from reverie.transcripts.discovery import current_session
from reverie.transcripts.editor_places import EditorPlaces
from reverie.transcripts.listing import session_rows


class NoSession(UserError):
    """No session to act on: none found for the workspace, or an unknown id."""


class NotesUnreadable(UserError):
    """A session's notes file exists but cannot be read."""


def list_sessions(
    workspace: Path,
    agent_home: Path,
    on_skip: Callable[[Path, Exception], None] | None = None,
    *,
    paths: ProjectPaths | None = None,
    editor: EditorPlaces | None = None,
    notes: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The workspace's sessions, newest first (``reverie sessions --json`` rows). With
    ``paths`` each row also has ``title`` and ``has_notes`` (what the editor's list shows).
    ``editor``: where the editor's agents keep sessions (default: detected); ``notes``
    collects the editor storage folders skipped (remote, virtual). Blocking: call via a
    thread."""
    rows = session_rows(workspace, agent_home, on_skip, with_title=paths is not None,
                        editor=editor, notes=notes)
    if paths is not None:
        for row in rows:
            row["has_notes"] = paths.notes_path(row["session_id"]).is_file()
    return rows


def current_session_id(settings: Settings, workspace: Path) -> str | None:
    """The id of the workspace's most recently appended main session, if any. Blocking."""
    ref = current_session(workspace, settings.agent_home)
    return ref.session_id if ref is not None else None


@dataclass(frozen=True, slots=True)
class SessionNotes:
    session_id: str
    path: Path
    content: str
    exists: bool


def read_session_notes(paths: ProjectPaths, session_id: str) -> SessionNotes:
    """A session's notes ("" and ``exists=False`` before the first extraction). Blocking."""
    path = paths.notes_path(session_id)
    try:
        content, exists = path.read_text(encoding="utf-8"), True
    except FileNotFoundError:
        content, exists = "", False
    except (OSError, UnicodeDecodeError) as exc:
        raise NotesUnreadable(str(exc)) from None
    return SessionNotes(session_id=session_id, path=path, content=content, exists=exists)
