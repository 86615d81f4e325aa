"""Finding a workspace's sessions of the editor's own agents (``editor_places`` says where).

- Copilot Chat: ``User/workspaceStorage/<hash>/chatSessions/<id>.jsonl`` (or ``.json``), where
  ``<hash>/workspace.json`` names the workspace: ``{"folder": "file:///..."}``, or
  ``{"workspace": "file:///.../x.code-workspace"}`` for a multi-root workspace (whose
  ``folders`` are read). A ``vscode-remote:`` / ``vscode-vfs:`` folder is on another machine or
  virtual: never this workspace, noted as a skip. The folder the running editor reported
  (``EditorPlaces.workspace_storage``) is used as is when it has no ``workspace.json``. When a
  session has both files, the ``.jsonl`` log is the one VS Code reads (unless the ``.json`` is
  newer: the log setting was turned off). A chat nothing was asked in yet is not listed.
- Cline, Roo Code, Kilo Code: ``User/globalStorage/<extension>/tasks/<id>/ui_messages.json``
  (and Cline's ``~/.cline/data/tasks``), matched on the workspace the extension recorded for
  the task (``cline.history_cwds``), else on its environment details.
- Cline 4: ``~/.cline/data/sessions/<id>/<id>.messages.json``, matched on the workspace its
  manifest ``<id>.json`` records (``workspace_root``, else ``cwd``).
- Continue: ``~/.continue/sessions/<id>.json``, matched on ``workspaceDirectory`` (the index
  ``sessions.json`` first, else the head of the file).
- Kilo Code (rebuilt on OpenCode): the sessions in its CLI's database (``kilo_db``), matched on
  ``session.directory`` as Kilo lists them; each ref is the database plus the session's id.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import orjson

from reverie.transcripts import cline, cline_sdk, continue_dev, kilo_db
from reverie.transcripts.base import as_dict, as_str, parse_time
from reverie.transcripts.detect import (
    CLINE_SDK_SUFFIX,
    CLINE_UI_MESSAGES,
    TASK_EXTENSIONS,
    is_cline_sdk_session,
)
from reverie.transcripts.document import load_json, load_jsonc
from reverie.transcripts.editor_places import EditorPlaces, local_path_of_uri
from reverie.transcripts.model import AgentName
from reverie.transcripts.refs import SessionRef, belongs, mtime

logger = logging.getLogger(__name__)

_WORKSPACE_JSON_LIMIT = 64 * 1024
_CODE_WORKSPACE_LIMIT = 1024 * 1024
#: ``"workspaceDirectory": "..."`` near the top of a Continue session
_CONTINUE_WORKSPACE = re.compile(rb'"workspaceDirectory"\s*:\s*"((?:[^"\\]|\\.)*)"')


# -- Copilot Chat ----------------------------------------------------------------------------

def storage_folders(hash_dir: Path) -> tuple[list[str] | None, str | None]:
    """The local folders a ``workspaceStorage/<hash>`` folder stands for, from its
    ``workspace.json``: ``(folders, None)``; ``(None, None)`` when it has no readable
    ``workspace.json``; ``([], reason)`` when it names no folder on this machine."""
    try:
        raw = (hash_dir / "workspace.json").read_bytes()[:_WORKSPACE_JSON_LIMIT]
    except OSError:
        return None, None
    meta, why = load_json(raw)
    if not isinstance(meta, dict):
        return [], f"{hash_dir.name}/workspace.json is unreadable ({why or 'not an object'})"
    folder = as_str(meta.get("folder"))
    if folder is not None:
        local, why = local_path_of_uri(folder)
        return ([local], None) if local else ([], f"{hash_dir.name}: {folder} skipped: {why}")
    config = as_str(meta.get("workspace")) or as_str(meta.get("configuration"))
    if config is None:
        return [], f"{hash_dir.name}/workspace.json names no folder"
    local, why = local_path_of_uri(config)
    if not local:
        return [], f"{hash_dir.name}: {config} skipped: {why}"
    return _code_workspace_folders(Path(local)), None


def _code_workspace_folders(config: Path) -> list[str]:
    """The folders of a multi-root ``.code-workspace`` file (paths relative to the file)."""
    try:
        text = config.read_bytes()[:_CODE_WORKSPACE_LIMIT].decode("utf-8", "replace")
    except OSError:
        return []
    value, _why = load_jsonc(text.encode())
    out: list[str] = []
    for item in as_dict(value).get("folders") or []:
        item = as_dict(item)
        where = as_str(item.get("path"))
        if where:
            out.append(str(config.parent / where) if not Path(where).is_absolute() else where)
        elif as_str(item.get("uri")):
            local, _why = local_path_of_uri(item["uri"])
            if local:
                out.append(local)
    return out


def storage_match(hash_dir: Path, workspace: Path, exact: bool,
                  notes: list[str] | None = None) -> str | None:
    """The folder of ``workspace`` that ``workspaceStorage/<hash>`` stands for, or None. An
    ``exact`` folder (the running editor's own) without a ``workspace.json`` is trusted."""
    folders, why = storage_folders(hash_dir)
    if folders is None:
        return str(workspace) if exact else None
    match = next((f for f in folders if belongs(f, workspace)), None)
    if match is None and why and notes is not None:
        notes.append(why)
    return match


def copilot_storage_dirs(workspace: Path, places: EditorPlaces,
                         notes: list[str] | None = None) -> list[tuple[Path, str]]:
    """``(workspaceStorage/<hash>, the workspace folder it stands for)`` of ``workspace``."""
    found: dict[Path, str] = {}
    for exact in places.workspace_storage:
        match = storage_match(exact, workspace, True, notes)
        if match is not None:
            found[exact] = match
    for root in places.workspace_storage_roots():
        try:
            hash_dirs = [d for d in root.iterdir() if d.is_dir()]
        except OSError:
            continue
        for hash_dir in hash_dirs:
            if hash_dir in found or hash_dir in places.workspace_storage \
                    or not (hash_dir / "chatSessions").is_dir():
                continue
            match = storage_match(hash_dir, workspace, False, notes)
            if match is not None:
                found[hash_dir] = match
    return list(found.items())


def copilot_session_files(chat_dir: Path) -> list[Path]:
    """The session files of a ``chatSessions`` folder, one per session (see module doc)."""
    try:
        entries = [p for p in chat_dir.iterdir() if p.suffix in (".json", ".jsonl")]
    except OSError:
        return []
    by_id: dict[str, list[Path]] = {}
    for path in entries:
        if path.is_file():
            by_id.setdefault(path.stem, []).append(path)
    out: list[Path] = []
    for paths in by_id.values():
        if len(paths) == 1:
            out.append(paths[0])
            continue
        log = next(p for p in paths if p.suffix == ".jsonl")
        flat = next(p for p in paths if p.suffix == ".json")
        flat_time, log_time = mtime(flat), mtime(log)
        newer_flat = flat_time is not None and log_time is not None and flat_time > log_time
        out.append(flat if newer_flat else log)
    return sorted(out)


#: a chat session file this small may be a new, empty chat (checked for a request in it)
_EMPTY_CHAT_BYTES = 64 * 1024


def is_empty_chat(path: Path) -> bool:
    """A chat VS Code created when a chat view opened, before anything was asked: not a
    session yet (it would become the "current" one and hide the session being worked in)."""
    try:
        if path.stat().st_size > _EMPTY_CHAT_BYTES:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    return b'"requestId"' not in data and b'"message"' not in data


def _copilot_refs(workspace: Path, places: EditorPlaces, notes: list[str] | None
                  ) -> list[SessionRef]:
    refs: list[SessionRef] = []
    for hash_dir, folder in copilot_storage_dirs(workspace, places, notes):
        for path in copilot_session_files(hash_dir / "chatSessions"):
            updated = mtime(path)
            if updated is not None and not is_empty_chat(path):
                refs.append(SessionRef(agent="copilot-chat", session_id=path.stem, path=path,
                                       updated_at=updated, cwd=folder))
    return refs


# -- Cline, Roo Code, Kilo Code --------------------------------------------------------------

def _extension_of(tasks_root: Path) -> str | None:
    name = tasks_root.parent.name.lower()
    return name if name in TASK_EXTENSIONS else None


def _task_refs(workspace: Path, places: EditorPlaces) -> list[SessionRef]:
    refs: list[SessionRef] = []
    # a custom storage path: the extension's global state stays in its user dir
    moved = {root: (user, ext) for _agent, root, user, ext in places.custom_task_roots()}
    for agent, tasks_root in places.task_roots():
        try:
            task_dirs = [d for d in tasks_root.iterdir() if d.is_dir()]
        except OSError:
            continue
        extension = _extension_of(tasks_root)
        user_dir = tasks_root.parent.parent.parent if extension else None
        if tasks_root in moved:
            user_dir, extension = moved[tasks_root]
        recorded = cline.history_cwds(tasks_root, user_dir, extension)
        for task_dir in task_dirs:
            path = task_dir / CLINE_UI_MESSAGES
            updated = mtime(path)
            if updated is None:
                continue
            cwd = (recorded.get(task_dir.name) or cline.own_history_cwd(task_dir)
                   or cline.head_cwd(path))
            if belongs(cwd, workspace):
                refs.append(SessionRef(agent=agent, session_id=task_dir.name,  # type: ignore[arg-type]
                                       path=path, updated_at=updated, cwd=cwd))
    return refs


def _cline_sdk_refs(workspace: Path, places: EditorPlaces) -> list[SessionRef]:
    """Cline 4: ``sessions/<id>/<id>.messages.json``, matched on the manifest's workspace."""
    root = places.cline_sessions_dir()
    try:
        folders = [d for d in root.iterdir() if d.is_dir()] if root is not None else []
    except OSError:
        return []
    refs: list[SessionRef] = []
    for folder in folders:
        path = folder / f"{folder.name}{CLINE_SDK_SUFFIX}"
        updated = mtime(path)
        if updated is None:
            continue
        cwd = cline_sdk.manifest_cwd(path)
        if belongs(cwd, workspace):
            refs.append(SessionRef(agent="cline", session_id=folder.name, path=path,
                                   updated_at=updated, cwd=cwd))
    return refs


# -- Continue --------------------------------------------------------------------------------

def continue_cwd(path: Path) -> str | None:
    """The ``workspaceDirectory`` of a Continue session, from the head of its file."""
    try:
        with path.open("rb") as handle:
            head = handle.read(64 * 1024)
    except OSError:
        return None
    match = _CONTINUE_WORKSPACE.search(head)
    if match is None:
        return None
    try:
        value = orjson.loads(b'"' + match.group(1) + b'"')
    except orjson.JSONDecodeError:
        return None
    return continue_dev.workspace_of(value)


def _continue_refs(workspace: Path, places: EditorPlaces) -> list[SessionRef]:
    sessions = places.continue_sessions()
    if sessions is None or not sessions.is_dir():
        return []
    indexed = continue_dev.index_workspaces(sessions)
    refs: list[SessionRef] = []
    for path in sorted(sessions.glob("*.json")):
        if path.name == continue_dev.INDEX_NAME or not path.is_file():
            continue
        cwd = indexed.get(path.stem) or continue_cwd(path)
        updated = mtime(path)
        if updated is not None and belongs(cwd, workspace):
            refs.append(SessionRef(agent="continue", session_id=path.stem, path=path,
                                   updated_at=updated, cwd=cwd))
    return refs


# -- Kilo Code's database --------------------------------------------------------------------

def kilo_refs(db: Path, workspace: Path, notes: list[str] | None = None) -> list[SessionRef]:
    """The sessions of ``workspace`` in one Kilo database; an unreadable one is a note."""
    try:
        rows = kilo_db.list_sessions(db)
    except kilo_db.KiloDbError as exc:
        if notes is not None:
            notes.append(f"Kilo Code database skipped: {exc}")
        logger.info("Kilo Code database %s skipped: %s", db, exc)
        return []
    fallback = mtime(db)
    refs: list[SessionRef] = []
    for row in rows:
        updated = parse_time(row.time_updated) or fallback
        if updated is not None and belongs(row.directory, workspace):
            refs.append(SessionRef(agent="kilo-code", session_id=row.id, path=db,
                                   updated_at=updated, parent_session_id=row.parent_id,
                                   cwd=row.directory))
    return refs


def _kilo_refs(workspace: Path, places: EditorPlaces, notes: list[str] | None
               ) -> list[SessionRef]:
    return [ref for db in places.kilo_db_files() for ref in kilo_refs(db, workspace, notes)]


# -- entry points ----------------------------------------------------------------------------

def editor_refs(workspace: Path, places: EditorPlaces,
                notes: list[str] | None = None) -> list[SessionRef]:
    """Every session of the editor's agents that belongs to ``workspace`` (unsorted);
    ``notes`` collects why editor storage folders were skipped (remote, unreadable)."""
    return (_copilot_refs(workspace, places, notes) + _task_refs(workspace, places)
            + _cline_sdk_refs(workspace, places) + _continue_refs(workspace, places)
            + _kilo_refs(workspace, places, notes))


def editor_ref(path: Path, workspace: Path, places: EditorPlaces) -> SessionRef | None:
    """The ref of one changed file when it is a session of ``workspace`` (the watcher's check)."""
    updated = mtime(path)
    if updated is None:
        return None
    agent: AgentName | None = None
    cwd: str | None = None
    if path.parent.name == "chatSessions" and path.suffix in (".json", ".jsonl"):
        hash_dir = path.parent.parent
        if not any(_under(hash_dir, root) for root in places.workspace_storage_roots()) \
                and hash_dir not in places.workspace_storage:
            return None
        match = storage_match(hash_dir, workspace, hash_dir in places.workspace_storage)
        if match is None or path not in copilot_session_files(path.parent) \
                or is_empty_chat(path):
            return None
        return SessionRef(agent="copilot-chat", session_id=path.stem, path=path,
                          updated_at=updated, cwd=match)
    if path.name == CLINE_UI_MESSAGES:
        for task_agent, tasks_root in places.task_roots():
            if path.parent.parent == tasks_root:
                agent = task_agent  # type: ignore[assignment]
                cwd = cline.task_cwd(path) or cline.head_cwd(path)
                break
    cline_sessions = places.cline_sessions_dir()
    if cline_sessions is not None and path.parent.parent == cline_sessions \
            and is_cline_sdk_session(path):
        agent, cwd = "cline", cline_sdk.manifest_cwd(path)
    sessions = places.continue_sessions()
    if agent is None and sessions is not None and path.parent == sessions \
            and path.suffix == ".json" and path.name != continue_dev.INDEX_NAME:
        agent = "continue"
        cwd = continue_dev.index_workspaces(sessions).get(path.stem) or continue_cwd(path)
    if agent is None or not belongs(cwd, workspace):
        return None
    session_id = path.parent.name if agent != "continue" else path.stem  # (Cline 4: <id>/)
    return SessionRef(agent=agent, session_id=session_id, path=path, updated_at=updated, cwd=cwd)


def _under(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def editor_watch_roots(workspace: Path, places: EditorPlaces) -> list[Path]:
    """The folders to watch (recursively) for the editor's agents: the ``chatSessions`` of
    this workspace's storage folders, the extensions' ``tasks`` folders, Continue's
    ``sessions``. Only under user-data dirs that exist: no VS Code, nothing watched."""
    roots = [hash_dir / "chatSessions" for hash_dir, _ in copilot_storage_dirs(workspace, places)]
    for exact in places.workspace_storage:
        if exact / "chatSessions" not in roots:
            roots.append(exact / "chatSessions")
    for _agent, tasks_root in places.task_roots():
        base = tasks_root.parent.parent  # User/globalStorage, or ~/.cline
        if base.is_dir():
            roots.append(tasks_root)
    for sessions in (places.cline_sessions_dir(), places.continue_sessions()):
        if sessions is not None and sessions.parent.is_dir():
            roots.append(sessions)
    return list(dict.fromkeys(roots))
