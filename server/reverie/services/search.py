"""Search use cases, shared by ``reverie search``, ``reverie mcp`` and the editor.

``search_project`` brings the project's index up to date (on demand, within a time budget)
and ranks hits; ``session_notes`` / ``memory_topic`` open what a hit points at, bounded in
tokens. Only the workspace's own project is ever read: the index, the notes and the memory
dir all come from its ``ProjectPaths``.
"""

from __future__ import annotations

import logging
import re
import time
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from reverie.config import ProjectPaths, Settings
from reverie.errors import UserError
from reverie.memory import nofollow
from reverie.memory.store import INDEX_NAME, visible_files
from reverie.search.documents import notes_sections
from reverie.search.index import Hit, IndexUnavailable
from reverie.search.query import query_terms
from reverie.search.update import UpdateReport, index_path, open_index, refresh
from reverie.transcripts.editor_places import EditorPlaces

logger = logging.getLogger(__name__)

#: a call's answer stays under this many tokens (≈ 4 characters each)
DEFAULT_MAX_TOKENS = 2_000
MAX_LIMIT = 50
#: how long a search may spend bringing the index up to date before answering
UPDATE_BUDGET_SECONDS = 20.0


class IndexCounts(BaseModel):
    sessions: int = 0
    documents: int = 0


class SearchResult(BaseModel):
    """One hit (the ``reverie search --json`` contract, plus ``id``, ``section``, ``tokens``)."""

    kind: Literal["memory", "notes", "session"]
    session_id: str | None
    agent: str | None
    date: str | None
    title: str
    text: str
    source: str
    score: float
    id: str = ""
    section: str = ""
    #: the size of the whole document in tokens (what opening it costs)
    tokens: int = 0


class SearchResponse(BaseModel):
    query: str
    results: list[SearchResult] = Field(default_factory=list)
    index: IndexCounts = Field(default_factory=IndexCounts)


def parse_since(value: str | None) -> datetime | None:
    """``YYYY-MM-DD`` (or a full ISO timestamp) → an aware datetime; a bad value is a
    ``UserError``."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UserError(f"--since wants a date as YYYY-MM-DD, not {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def update_project_index(settings: Settings, workspace: Path, *,
                         sessions: bool = True,
                         budget_seconds: float | None = UPDATE_BUDGET_SECONDS,
                         discover: bool = True,
                         editor: EditorPlaces | None = None) -> UpdateReport:
    """Bring the project's index up to date (what the after-apply hooks and searches call).
    ``discover=False`` only looks at the sessions already indexed (what grew), without
    discovery's read of every transcript's head. ``editor``: where the editor's own agents
    keep their sessions (the language server passes the running editor's)."""
    paths = ProjectPaths(settings, workspace)
    deadline = time.monotonic() + budget_seconds if budget_seconds else None
    try:
        return refresh(paths, sessions=sessions, deadline=deadline, discover=discover,
                       editor=editor)
    except IndexUnavailable as exc:
        logger.warning("search index not updated: %s", exc)
        return UpdateReport(busy=True)


def index_after_apply(settings: Settings, workspace: Path,
                      editor: EditorPlaces | None = None) -> dict[str, int | bool]:
    """What runs after memory or notes were written (a dream, sleep, a notes update,
    ``remember``): the project's index brought up to date, sessions included (only what grew
    is read). Module-level and picklable: the language server runs it in a worker process."""
    report = update_project_index(settings, workspace, editor=editor)
    return {"sessions_indexed": report.sessions_indexed,
            "sessions_grown": report.sessions_grown,
            "notes_indexed": report.notes_indexed,
            "memory_files_indexed": report.memory_files_indexed, "busy": report.busy}


def _result(hit: Hit) -> SearchResult:
    return SearchResult(
        kind=hit.kind, session_id=hit.session_id, agent=hit.agent, date=hit.day,
        title=hit.title, text=hit.snippet, source=hit.source, score=hit.score,
        id=f"{hit.kind}:{hit.doc_id}", section=hit.label, tokens=max(1, hit.chars // 4))


def search_project(
    settings: Settings, workspace: Path, query: str, *, limit: int = 10,
    agent: str | None = None, since: datetime | None = None, update: bool = True,
) -> SearchResponse:
    """Ranked hits for ``query`` in the workspace's project (never another project's)."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    paths = ProjectPaths(settings, workspace)
    if update:
        update_project_index(settings, workspace)
    response = SearchResponse(query=query)
    if not index_path(paths).is_file():
        return response
    try:
        with open_index(paths, read_only=True) as index:
            stats = index.stats()
            response.index = IndexCounts(sessions=stats.sessions, documents=stats.documents)
            hits = index.search(query_terms(query), limit=limit, agent=agent or None,
                                since=since)
    except IndexUnavailable as exc:
        raise UserError(str(exc)) from None
    response.results = [_result(h) for h in hits]
    return response


def bound(text: str, max_tokens: int = DEFAULT_MAX_TOKENS, *, more: str = "") -> str:
    """``text`` cut to about ``max_tokens`` tokens, saying so (and how to see the rest)."""
    limit = max(200, max_tokens * 4)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    newline = cut.rfind("\n")
    if newline > limit // 2:
        cut = cut[:newline]
    return cut.rstrip() + f"\n\n[… cut at ~{max_tokens} tokens{'; ' + more if more else ''}]"


# --- opening what a hit points at ----------------------------------------------------------

_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")


def _known_session_ids(paths: ProjectPaths) -> dict[str, str | None]:
    """Session id → agent for every session the index knows."""
    if not index_path(paths).is_file():
        return {}
    try:
        with open_index(paths) as index:
            rows = index.sources()
    except IndexUnavailable:
        return {}
    return {row.session_id: row.agent for row in rows.values() if row.session_id}


def resolve_session_id(paths: ProjectPaths, session_id: str) -> str:
    """A full session id of this project from a full id or a unique prefix (≥ 6 chars)."""
    wanted = session_id.strip()
    if not _SAFE_ID.match(wanted):
        raise UserError("not a session id")
    if paths.notes_path(wanted).is_file():
        return wanted
    known = set(_known_session_ids(paths))
    for directory in paths.sessions_dir.iterdir() if paths.sessions_dir.is_dir() else ():
        known.add(directory.name)
    if wanted in known:
        return wanted
    matches = sorted(k for k in known if len(wanted) >= 6 and k.startswith(wanted))
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise UserError(f"session id {wanted!r} is ambiguous: give more of it")
    raise UserError(f"no session {wanted!r} in this project")


def session_notes(settings: Settings, workspace: Path, session_id: str, *,
                  section: str | None = None,
                  max_tokens: int = DEFAULT_MAX_TOKENS) -> str:
    """A session's notes (or one named section of them), bounded; a session without notes
    gives what the index holds of it."""
    paths = ProjectPaths(settings, workspace)
    full_id = resolve_session_id(paths, session_id)
    notes = paths.notes_path(full_id)
    text: str | None = None
    if notes.is_file() and not notes.is_symlink():
        text = notes.read_text("utf-8", errors="replace")
    if text is not None:
        if section:
            wanted = section.strip().lstrip("#").strip().lower()
            sections = notes_sections(text)
            found = [body for title, _, body in sections if title.lower() == wanted] or \
                [body for title, _, body in sections if title.lower().startswith(wanted)]
            if not found:
                names = ", ".join(title for title, _, _ in sections)
                raise UserError(f"no section {section!r} in the notes (sections: {names})")
            text = f"# {section.strip().lstrip('#').strip()}\n{found[0]}\n"
        return bound(text, max_tokens, more="ask for one section with `section`")
    with open_index(paths) as index:
        docs = index.session_documents(full_id)
    if not docs:
        raise UserError(f"session {full_id} has no notes and nothing indexed yet")
    title = docs[0][1]
    body = "\n\n".join(f"## {label}\n{text_}" for label, _, text_ in docs
                       if not section or label.lower() == section.strip().lower())
    if not body:
        raise UserError(f"no section {section!r} for session {full_id}")
    return bound(f"# {title} (from the transcript; no notes yet)\n\n{body}", max_tokens)


def memory_topic(settings: Settings, workspace: Path, topic: str, *,
                 max_tokens: int = DEFAULT_MAX_TOKENS) -> str:
    """One memory file by topic name (``MEMORY`` for the index), bounded."""
    paths = ProjectPaths(settings, workspace)
    memory_dir = paths.memory_dir
    wanted = topic.strip()
    if not wanted:
        raise UserError("name a topic (MEMORY for the index)")
    try:
        names = [n for n in visible_files(memory_dir) if n.endswith(".md")] \
            if memory_dir.is_dir() else []
    except OSError as exc:
        raise UserError(f"cannot read the memory dir: {exc}") from None
    if not names:
        raise UserError("this project has no memory yet")
    lowered = wanted.lower().removesuffix(".md")
    if lowered in ("memory", "index"):
        lowered = INDEX_NAME.lower().removesuffix(".md")
    chosen = next((n for n in names if n == wanted or n == f"{wanted}.md"), None) or next(
        (n for n in names if n.lower().removesuffix(".md") == lowered), None)
    if chosen is None:
        raise UserError(f"no topic {topic!r}; topics: {', '.join(sorted(names))}")
    try:
        text = nofollow.read_file(memory_dir / chosen).decode("utf-8", "replace")
    except OSError as exc:
        raise UserError(f"cannot read {chosen}: {exc}") from None
    return bound(text, max_tokens)


__all__ = [
    "IndexCounts", "SearchResponse", "SearchResult", "bound", "index_after_apply",
    "memory_topic", "parse_since",
    "search_project", "session_notes", "update_project_index",
]
