"""A session's place and owner (``SessionRef``), and the rule that says whose it is.

Kept apart from ``discovery`` so that every discoverer (the terminal agents' in ``discovery``,
the editor's in ``editor_discovery``) shares one definition without importing each other.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from reverie.config import REVERIE_CLI_WORKDIR
from reverie.transcripts.model import AgentName
from reverie.transcripts.pathstyle import PathStyle


class SessionRef(BaseModel):
    """Where one session lives and whose it is; cheap to build (no full parse)."""

    agent: AgentName
    session_id: str
    path: Path
    updated_at: datetime
    parent_session_id: str | None = None
    cwd: str | None = None

    @property
    def is_subagent(self) -> bool:
        return self.parent_session_id is not None


def mtime(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return None


def workspace_variants(workspace: Path) -> list[Path]:
    """The workspace as given and resolved (symlinked homes such as /private/var on macOS)."""
    out = [Path(os.path.abspath(workspace.expanduser()))]
    try:
        resolved = workspace.expanduser().resolve()
    except OSError:
        resolved = out[0]
    if resolved not in out:
        out.append(resolved)
    return out


def is_reverie_cli_session(cwd: str | None) -> bool:
    return bool(cwd) and REVERIE_CLI_WORKDIR in Path(str(cwd)).parts


def belongs(cwd: str | None, workspace: Path) -> bool:
    """True when a session recorded in ``cwd`` belongs to ``workspace``: ``cwd`` is the
    workspace or a folder inside it, by the rules of the OS we run on."""
    if is_reverie_cli_session(cwd):
        return False
    style = PathStyle.host()
    return any(style.is_inside(cwd, w) for w in workspace_variants(workspace))
