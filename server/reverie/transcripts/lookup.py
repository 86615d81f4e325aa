"""One session's transcript by its id, without reading every session.

A hook knows the session's id (Codex documents ``transcript_path`` as nullable), and finding
its file through ``discovery.discover_sessions`` reads the head of every session of every
project: with 100,000 Codex rollouts that took 10.9 s of the pre-compact hook's 15 s. The
agents name their files by the id, so this looks at names only: Claude Code's
``projects/<slug>/<id>.jsonl`` (the workspace's folder first, then one ``stat`` per project)
and Codex's ``sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`` (newest day first, one directory
listing per day). ``None`` when no name matches: the caller may then fall back to discovery.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from reverie.agent_roots import AgentRoots
from reverie.config import claude_project_dir

__all__ = ["find_session_file"]

#: an id that can be part of a file name (a uuid, ``rollout-...``): anything else is not looked up
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")


def find_session_file(agent_home: Path, session_id: str, workspace: Path) -> Path | None:
    """The transcript named for ``session_id``, or None."""
    if not _SAFE_ID.fullmatch(session_id) or ".." in session_id:
        return None
    roots = AgentRoots.for_home(agent_home)
    return _claude(roots.claude_projects, session_id, workspace) or _codex(
        roots.codex_sessions, session_id)


def _claude(projects: Path, session_id: str, workspace: Path) -> Path | None:
    name = f"{session_id}.jsonl"
    own = claude_project_dir(projects, str(workspace)) / name
    if own.is_file():
        return own
    try:
        folders = [entry for entry in os.scandir(projects) if entry.is_dir()]
    except OSError:
        return None
    for folder in folders:
        candidate = Path(folder.path) / name
        if candidate.is_file():
            return candidate
    return None


def _codex(sessions: Path, session_id: str) -> Path | None:
    suffix = f"-{session_id}.jsonl"
    for day in sorted(_day_folders(sessions), reverse=True):
        try:
            with os.scandir(day) as entries:
                for entry in entries:
                    if entry.name.startswith("rollout-") and entry.name.endswith(suffix) \
                            and entry.is_file():
                        return Path(entry.path)
        except OSError:
            continue
    return None


def _day_folders(sessions: Path) -> list[str]:
    """The ``sessions/YYYY/MM/DD`` folders, listing folders only down to the days."""
    level = [str(sessions)]
    for _ in range(3):
        below: list[str] = []
        for folder in level:
            try:
                with os.scandir(folder) as entries:
                    below += [e.path for e in entries if e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
        level = below
    return level
