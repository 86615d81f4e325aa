"""Finding a workspace's sessions in the agents' default places under an agent home.

- Claude Code: ``.claude/projects/*/*.jsonl`` (plus ``agent-*.jsonl`` siblings and
  ``<session>/subagents/agent-*.jsonl``), matched on the ``cwd`` inside the records (equal to or
  inside the workspace), never by reversing the directory slug; ``memory/`` is skipped.
- Codex: ``.codex/sessions/**/rollout-*.jsonl``, matched on ``session_meta.cwd``.
- Gemini CLI: ``.gemini/tmp/<project>/chats/``, where ``<project>`` is the sha256 of the workspace
  path, an id from ``.gemini/projects.json``, or a directory whose ``.project_root`` names it.
- Aider: ``.aider.chat.history.md`` in the workspace or its enclosing git root, one session per run.
- Generic: ``.reverie/sessions/*.jsonl`` (and ``*.messages``), matched on the sidecar
  ``<id>.json``'s ``project_path``/``workspace_dir``/``worktree_path``/``cwd`` or a ``cwd`` field in
  the first records. A generic session that names no project belongs to no workspace.

``updated_at`` is the file's modification time: "most recently appended" is what makes a session
current, and what the dream's "touched since" gate counts.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson

from reverie.agent_roots import AgentRoots
from reverie.config import REVERIE_CLI_WORKDIR
from reverie.transcripts import aider
from reverie.transcripts.base import as_dict, as_str
from reverie.transcripts.claude_stats import UUID_PATTERN as _UUID
from reverie.transcripts.editor_discovery import editor_ref, editor_refs
from reverie.transcripts.editor_places import EditorPlaces
from reverie.transcripts.generic import read_sidecar, sidecar_project
from reverie.transcripts.lines import LineSplitter
from reverie.transcripts.pathstyle import PathStyle
from reverie.transcripts.reader import is_kilo_db
from reverie.transcripts.refs import (
    SessionRef,
    belongs,
    is_reverie_cli_session,
    mtime,
    workspace_variants,
)

__all__ = ["REVERIE_CLI_WORKDIR", "SessionRef", "current_session", "discover_sessions",
           "is_inside", "is_reverie_cli_session", "session_ref", "sessions_touched_since"]

logger = logging.getLogger(__name__)

#: how far into a file discovery reads looking for the session's cwd
_HEAD_BYTES = 1024 * 1024
_HEAD_LINES = 200
_HEAD_CHUNK = 64 * 1024


_mtime = mtime
_workspace_variants = workspace_variants
_belongs = belongs


def is_inside(child: str | None, workspace: Path, style: PathStyle | None = None) -> bool:
    """True when ``child`` is ``workspace`` or a path inside it, by the rules of the OS we run
    on (``style``): case and separators on Windows, case on macOS; a path in another OS's
    syntax is never inside."""
    return (style or PathStyle.host()).is_inside(child, workspace)


def _head_records(path: Path) -> Iterator[dict[str, object]]:
    """The first JSON-object records of a JSONL file, read lazily in small chunks.

    Callers stop as soon as they found what they need, so a typical file costs one 64 KiB read;
    at most ``_HEAD_BYTES`` / ``_HEAD_LINES`` are ever looked at.
    """
    try:
        handle = path.open("rb")
    except OSError:
        return
    with handle:
        splitter = LineSplitter(max_line_bytes=_HEAD_BYTES)
        seen = read = 0
        while read < _HEAD_BYTES and seen < _HEAD_LINES:
            try:
                chunk = handle.read(_HEAD_CHUNK)
            except OSError:
                return
            if not chunk:
                return
            read += len(chunk)
            for line in splitter.feed(chunk):
                seen += 1
                if line.oversized or not line.data.strip():
                    continue
                try:
                    record = orjson.loads(line.data)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(record, dict):
                    yield record


# -- Claude Code -----------------------------------------------------------------------------

def _claude_files(projects: Path) -> Iterator[Path]:
    try:
        project_dirs = [d for d in projects.iterdir() if d.is_dir()]
    except OSError:
        return
    for project in project_dirs:
        try:
            entries = list(project.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.name == "memory":
                continue
            if entry.suffix == ".jsonl" and entry.is_file():
                yield entry
            elif entry.is_dir():
                subagents = entry / "subagents"
                if subagents.is_dir():
                    yield from sorted(p for p in subagents.glob("agent-*.jsonl") if p.is_file())


def claude_ref(path: Path, workspace: Path | None = None) -> SessionRef | None:
    """A Claude Code file's ref from its first records (cwd, session id, parent).

    The ref's ``cwd`` is the first one recorded, or, given ``workspace``, the first recorded one
    inside it: a session started in a parent folder that then works in the workspace (the
    agent ``cd``-ed into it) belongs to the workspace too.
    """
    updated = _mtime(path)
    if updated is None:
        return None
    is_agent = path.name.startswith("agent-") or path.parent.name == "subagents"
    cwd = record_session = None
    matched = workspace is None
    for record in _head_records(path):
        here = as_str(record.get("cwd"))
        if here and cwd is None:
            cwd = here
        if here and not matched and workspace is not None and _belongs(here, workspace):
            cwd, matched = here, True
        record_session = record_session or as_str(record.get("sessionId"))
        if cwd and record_session and matched:
            break
    parent = record_session if is_agent and record_session != path.stem else None
    session_id = path.stem
    if not is_agent and record_session and not _UUID.match(session_id):
        session_id = record_session  # same rule as the parser: a renamed file keeps its id
    return SessionRef(agent="claude-code", session_id=session_id, path=path, updated_at=updated,
                      parent_session_id=parent, cwd=cwd)


# -- Codex -----------------------------------------------------------------------------------

def codex_ref(path: Path) -> SessionRef | None:
    updated = _mtime(path)
    if updated is None:
        return None
    for record in _head_records(path):
        if record.get("type") != "session_meta":
            continue
        payload = as_dict(record.get("payload"))
        spawn = as_dict(as_dict(as_dict(payload.get("source")).get("subagent")).get("thread_spawn"))
        return SessionRef(
            agent="codex",
            session_id=as_str(payload.get("id")) or path.stem,
            path=path,
            updated_at=updated,
            parent_session_id=as_str(spawn.get("parent_thread_id")),
            cwd=as_str(payload.get("cwd")),
        )
    return None


# -- Gemini CLI ------------------------------------------------------------------------------

def gemini_project_ids(
    workspace: Path, agent_home: Path, style: PathStyle | None = None
) -> set[str]:
    """Names Gemini CLI may have given this workspace's directory under ``.gemini/tmp``: the
    sha256 of each way the path may be spelled (on Windows both drive-letter cases), or the id
    its ``projects.json`` registry gives it."""
    style = style or PathStyle.host()
    ids: set[str] = set()
    paths = {spelling for w in _workspace_variants(workspace)
             for spelling in style.spellings(str(w))}
    for p in paths:
        ids.add(hashlib.sha256(p.encode("utf-8", "surrogatepass")).hexdigest())
    registry = AgentRoots.for_home(agent_home).gemini_dir / "projects.json"
    try:
        data = orjson.loads(registry.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        data = None
    entries = data.get("projects", data) if isinstance(data, dict) else data
    if isinstance(entries, dict):
        for key, value in entries.items():
            if isinstance(value, str) and any(style.same(key, p) for p in paths):
                ids.add(value)
            if isinstance(value, str) and any(style.same(value, p) for p in paths):
                ids.add(key)
    elif isinstance(entries, list):
        for item in entries:
            if isinstance(item, dict):
                where = item.get("path") or item.get("root") or item.get("projectRoot")
                ident = item.get("id") or item.get("projectId")
                if (isinstance(ident, str) and isinstance(where, str)
                        and any(style.same(where, p) for p in paths)):
                    ids.add(ident)
    return ids


def _gemini_dir_matches(project_dir: Path, ids: set[str], workspace: Path) -> bool:
    if project_dir.name in ids:
        return True
    marker = project_dir / ".project_root"
    try:
        root = marker.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return _belongs(root, workspace)


def gemini_ref(path: Path, workspace: Path | None = None) -> SessionRef | None:
    updated = _mtime(path)
    if updated is None:
        return None
    chats = path.parent if path.parent.name == "chats" else path.parent.parent
    parent = path.parent.name if path.parent.name != "chats" else None
    session_id = path.stem
    if path.suffix == ".jsonl":
        for record in _head_records(path):
            session_id = as_str(record.get("sessionId")) or session_id
            break
    else:
        try:
            with path.open("rb") as handle:
                head = handle.read(4096)
            marker = b'"sessionId"'
            at = head.find(marker)
            if at >= 0:
                rest = head[at + len(marker):].split(b'"')
                if len(rest) > 1 and rest[1]:
                    session_id = rest[1].decode("utf-8", "replace")
        except OSError:
            return None
    cwd = None
    marker_file = chats.parent / ".project_root"
    if marker_file.is_file():
        try:
            cwd = marker_file.read_text(encoding="utf-8").strip() or None
        except (OSError, UnicodeDecodeError):
            cwd = None
    if cwd is None and workspace is not None:
        cwd = str(workspace)
    return SessionRef(agent="gemini-cli", session_id=session_id, path=path, updated_at=updated,
                      parent_session_id=parent, cwd=cwd)


def _gemini_files(chats: Path) -> Iterator[Path]:
    try:
        entries = list(chats.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.is_file() and entry.name.startswith("session-") and entry.suffix in (".json",
                                                                                      ".jsonl"):
            # a legacy .json migrated to .jsonl on resume: the .jsonl is the live one
            if entry.suffix == ".json" and entry.with_suffix(".jsonl").exists():
                continue
            yield entry
        elif entry.is_dir():
            yield from (p for p in entry.glob("*.jsonl") if p.is_file())


# -- Aider -----------------------------------------------------------------------------------

#: how far below the workspace Aider histories are looked for, and how many folders at most
_AIDER_DEPTH = 4
_AIDER_MAX_FOLDERS = 2000
_AIDER_SKIP = frozenset({"node_modules", ".git", ".hg", ".svn", ".venv", "venv", "__pycache__",
                         "dist", "build", "target", ".tox", ".mypy_cache", ".ruff_cache",
                         ".pytest_cache", ".next", ".cache"})


def aider_history_files(workspace: Path) -> list[Path]:
    """The Aider histories of the workspace: in it or an enclosing folder up to the git root,
    and, when the workspace is a repository's root, in its sub-folders (Aider started in a
    sub-folder writes its history there), at most ``_AIDER_DEPTH`` levels down, skipping
    dependency and build folders and nested repositories. A folder that is not a repository
    root (a home folder, /tmp) is never searched downwards."""
    found: list[Path] = []
    here = _workspace_variants(workspace)[0]
    for folder in (here, *here.parents):
        candidate = folder / ".aider.chat.history.md"
        if candidate.is_file():
            found.append(candidate)
        if (folder / ".git").exists():
            break
    if (here / ".git").exists():
        found.extend(_aider_below(here))
    return list(dict.fromkeys(found))


def _aider_below(root: Path) -> list[Path]:
    found: list[Path] = []
    pending: list[tuple[Path, int]] = [(root, 0)]
    visited = 0
    while pending and visited < _AIDER_MAX_FOLDERS:
        folder, depth = pending.pop()
        visited += 1
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if depth > 0 and entry.name == ".aider.chat.history.md" and entry.is_file():
                    found.append(Path(entry.path))
                elif (depth < _AIDER_DEPTH and entry.name not in _AIDER_SKIP
                      and not entry.is_symlink() and entry.is_dir()
                      and not os.path.exists(os.path.join(entry.path, ".git"))):
                    pending.append((Path(entry.path), depth + 1))
            except OSError:
                continue
    return sorted(found)


def aider_refs(path: Path) -> list[SessionRef]:
    updated = _mtime(path)
    if updated is None:
        return []
    try:
        data = path.read_bytes()
    except OSError:
        return []
    headers = aider.run_offsets(data)
    refs: list[SessionRef] = []
    for index, (offset, stamp) in enumerate(headers):
        started = aider._local_time(stamp)
        compact = started.strftime("%Y%m%dT%H%M%S") if started else "unknown"
        if index + 1 < len(headers):
            ended = aider._local_time(headers[index + 1][1]) or updated
        else:
            ended = updated
        refs.append(SessionRef(agent="aider", session_id=f"aider-{compact}-{offset}", path=path,
                               updated_at=ended.astimezone(UTC),
                               cwd=aider.repository_root(path)))
    return refs


# -- generic ---------------------------------------------------------------------------------

def generic_ref(path: Path) -> SessionRef | None:
    updated = _mtime(path)
    if updated is None:
        return None
    meta = read_sidecar(path)
    cwd = sidecar_project(meta)
    if cwd is None:
        for record in _head_records(path):
            cwd = as_str(record.get("cwd"))
            if cwd:
                break
    return SessionRef(
        agent="generic",
        session_id=as_str(meta.get("session_id")) or as_str(meta.get("id")) or path.stem,
        path=path,
        updated_at=updated,
        parent_session_id=as_str(meta.get("parent_session_id")),
        cwd=cwd,
    )


def generic_sessions_dir(agent_home: Path) -> Path:
    return AgentRoots.for_home(agent_home).generic_sessions


# -- entry points ----------------------------------------------------------------------------

def session_ref(path: Path, workspace: Path, agent_home: Path,
                editor: EditorPlaces | None = None) -> SessionRef | None:
    """The ref of one transcript file when it belongs to ``workspace`` (used by the watcher).
    ``editor``: where the editor's agents keep their sessions (default: detected)."""
    home = agent_home
    found = editor_ref(path, workspace, editor or EditorPlaces.detect(home))
    if found is not None:
        return found
    roots = AgentRoots.for_home(home)
    try:
        rel_claude = path.relative_to(roots.claude_projects)
    except ValueError:
        rel_claude = None
    if rel_claude is not None:
        if "memory" in rel_claude.parts[:2] or path.suffix != ".jsonl":
            return None
        ref = claude_ref(path, workspace)
        return ref if ref is not None and _belongs(ref.cwd, workspace) else None
    if _under(path, roots.codex_sessions):
        ref = codex_ref(path) if path.name.startswith("rollout-") else None
        return ref if ref is not None and _belongs(ref.cwd, workspace) else None
    if _under(path, roots.gemini_tmp):
        parts = path.relative_to(roots.gemini_tmp).parts
        if len(parts) < 3 or parts[1] != "chats":
            return None
        project_dir = roots.gemini_tmp / parts[0]
        if not _gemini_dir_matches(project_dir, gemini_project_ids(workspace, home), workspace):
            return None
        return gemini_ref(path, workspace)
    if _under(path, roots.generic_sessions):
        if path.suffix not in (".jsonl", ".messages"):
            return None
        ref = generic_ref(path)
        return ref if ref is not None and _belongs(ref.cwd, workspace) else None
    if path.name == ".aider.chat.history.md" and path in aider_history_files(workspace):
        refs = aider_refs(path)
        return refs[-1] if refs else None
    return None


def _under(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def discover_sessions(workspace: Path, agent_home: Path, editor: EditorPlaces | None = None,
                      notes: list[str] | None = None) -> list[SessionRef]:
    """Every session of ``workspace`` under ``agent_home`` (``Settings.agent_home``), newest
    first: the terminal agents' and the editor's own (``editor``: where those live, default
    detected under the agent home; ``notes`` collects why editor storage folders were
    skipped)."""
    workspace = Path(workspace)
    home = Path(agent_home).expanduser()
    roots = AgentRoots.for_home(home)
    refs: list[SessionRef] = []
    for path in _claude_files(roots.claude_projects):
        ref = claude_ref(path, workspace)
        if ref is not None and _belongs(ref.cwd, workspace):
            refs.append(ref)
    codex_root = roots.codex_sessions
    if codex_root.is_dir():
        for path in codex_root.rglob("rollout-*.jsonl"):
            ref = codex_ref(path)
            if ref is not None and _belongs(ref.cwd, workspace):
                refs.append(ref)
    gemini_root = roots.gemini_tmp
    if gemini_root.is_dir():
        ids = gemini_project_ids(workspace, home)
        for project_dir in (d for d in gemini_root.iterdir() if d.is_dir()):
            if not _gemini_dir_matches(project_dir, ids, workspace):
                continue
            for path in _gemini_files(project_dir / "chats"):
                ref = gemini_ref(path, workspace)
                if ref is not None and not is_reverie_cli_session(ref.cwd):
                    refs.append(ref)
    for history in aider_history_files(workspace):
        refs.extend(aider_refs(history))
    generic_root = roots.generic_sessions
    if generic_root.is_dir():
        for path in sorted(generic_root.iterdir()):
            if path.suffix in (".jsonl", ".messages") and path.is_file():
                ref = generic_ref(path)
                if ref is not None and _belongs(ref.cwd, workspace):
                    refs.append(ref)
    refs.extend(editor_refs(workspace, editor or EditorPlaces.detect(home), notes))
    refs.sort(key=lambda r: (r.updated_at, str(r.path), r.session_id), reverse=True)
    return refs


def transcript_files(refs: Iterable[SessionRef]) -> list[tuple[str, Path]]:
    """``(session id, file)`` of the sessions whose file a tool may read as text: not Kilo's
    database (binary, and every project's sessions in one file: their notes stand for them)."""
    return [(r.session_id, r.path) for r in refs if not is_kilo_db(r.agent, r.path)]


def current_session(workspace: Path, agent_home: Path,
                    editor: EditorPlaces | None = None) -> SessionRef | None:
    """The most recently appended main (not sub-agent) session of ``workspace``."""
    for ref in discover_sessions(workspace, agent_home, editor):
        if not ref.is_subagent:
            return ref
    return None


def sessions_touched_since(
    workspace: Path,
    agent_home: Path,
    since: datetime,
    exclude_session_id: str | None = None,
    editor: EditorPlaces | None = None,
) -> list[SessionRef]:
    """Main sessions appended to after ``since`` (the dream's session gate), newest first.

    Sub-agent sessions are part of their parent's conversation and are not counted.
    """
    if since.tzinfo is None:
        since = since.astimezone()
    return [
        ref
        for ref in discover_sessions(workspace, agent_home, editor)
        if ref.updated_at > since and not ref.is_subagent and ref.session_id != exclude_session_id
    ]
