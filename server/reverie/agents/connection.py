"""``connect`` / ``disconnect`` / ``connections``: plan, check every file, then write them all.

Every file is read and checked before anything is written (a symlink, a read-only file, text
that is not UTF-8, a damaged block or a personal file git tracks stops the whole operation with
a clear error and no write). Writes are atomic per file; if one fails, the files already written
are put back (``agents.changes``). ``dry_run`` stops after the check and returns the unified diff.

Symlinked instruction files are refused rather than written through: the link's target is
usually shared (``CLAUDE.md -> AGENTS.md``, a dotfiles repository), and editing it would change
what other tools or other people read.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reverie.agents.blocks import BlockError, CommentStyle, find_block, remove_block, upsert_block
from reverie.agents.changes import (
    Change,
    ConnectError,
    apply_changes,
    check_writable,
    missing_dirs,
    read_exact,
)
from reverie.agents.edits import (
    EditError,
    has_flat_hooks,
    has_json_hooks,
    is_empty_json,
    remove_flat_hooks,
    remove_json_hooks,
    set_flat_hooks,
    set_json_hooks,
)
from reverie.agents.gitrepo import find_repo, is_tracked
from reverie.agents.ledger import (
    Connection,
    FileRecord,
    Scope,
    ledger_path,
    load_ledger,
    save_ledger,
)
from reverie.agents.mcpformats import MCP_FORMATS, load_json
from reverie.agents.results import (
    ConnectedFile,
    ConnectionInfo,
    ConnectionsResult,
    ConnectResult,
    FileChange,
    FileState,
)
from reverie.agents.shared import (
    ORIGINALS_NAME,
    REGISTRY_NAME,
    SharedFiles,
    connection_lock,
    file_locks,
)
from reverie.agents.specs import Plan, PlannedEdit, plan
from reverie.agents.yamlread import has_yaml_read, remove_yaml_read, set_yaml_read
from reverie.config import ProjectPaths, Settings
from reverie.types import CONNECTABLE_AGENTS as AGENTS
from reverie.types import ConnectableAgent, connectable_name

__all__ = ["ConnectError", "agents_of", "check_agent", "check_workspace", "connect",
           "connections", "disconnect"]

logger = logging.getLogger(__name__)


def check_agent(agent: str) -> ConnectableAgent:
    for name in AGENTS:
        if agent == name:
            return name
    raise ConnectError(f"unknown agent '{agent}' (known: {', '.join(AGENTS)})")


def check_workspace(workspace: Path) -> Path:
    resolved = workspace.expanduser().resolve()
    if not resolved.is_dir():
        raise ConnectError(f"workspace is not a directory: {resolved}")
    return resolved


def _style(record: FileRecord) -> CommentStyle:
    return "hash" if record.role == "exclude" or record.kind == "yaml-read" else "html"


def _has_secret(text: str) -> bool:
    from reverie.redact import redact

    return redact(text)[1] > 0


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# -- connect ----------------------------------------------------------------------------------


def connect(agent: str, workspace: Path, scope: str, settings: Settings,
            dry_run: bool = False, user_dirs: Sequence[Path] | None = None) -> ConnectResult:
    """Wire ``agent`` to the workspace's memory (idempotent: twice is once), under the
    machine-wide connection lock (``agents.shared``). ``user_dirs``: the VS Code ``User``
    folders of the editor that asked (where the editor's agents are connected)."""
    with connection_lock(settings):
        return _connect(agent, workspace, scope, settings, dry_run, user_dirs)


def _owner(agent: str, ws: Path) -> str:
    return f"{agent}:{ws}"


def _connect(agent: str, workspace: Path, scope: str, settings: Settings,
             dry_run: bool, user_dirs: Sequence[Path] | None) -> ConnectResult:
    name = check_agent(agent)
    if scope not in ("personal", "project"):
        raise ConnectError(f"unknown scope '{scope}' (personal or project)")
    scope_: Scope = "personal" if scope == "personal" else "project"
    ws = check_workspace(workspace)
    the_plan = plan(name, ws, scope_, settings, user_dirs)
    edits = _with_exclude(the_plan, ws)
    with file_locks([e.path for e in edits] + _bookkeeping(the_plan.memory_dir, settings)):
        return _connect_locked(name, ws, scope_, settings, the_plan, edits, dry_run)


def _bookkeeping(memory_dir: Path, settings: Settings) -> list[Path]:
    """The files every connect and disconnect reads and writes besides the agents' own."""
    return [ledger_path(memory_dir), settings.data_dir / REGISTRY_NAME,
            settings.data_dir / ORIGINALS_NAME]


def _connect_locked(name: ConnectableAgent, ws: Path, scope_: Scope, settings: Settings,
                    the_plan: Plan, edits: list[PlannedEdit], dry_run: bool) -> ConnectResult:
    """The read-modify-write of a connect, under the lock of every file it touches."""
    ledger = load_ledger(the_plan.memory_dir)
    previous = ledger.find(name, ws)
    if previous is not None and previous.scope != scope_:
        raise ConnectError(
            f"{name} is connected at {previous.scope} scope; run `reverie disconnect {name}` "
            "first to change the scope"
        )
    old_records = {r.path: r for r in previous.files} if previous else {}
    roots = _roots(ws, settings)
    changes = [_connect_change(edit, old_records.get(str(edit.path)), roots) for edit in edits]
    notes = list(the_plan.notes)
    if scope_ == "project":
        shared = [str(e.path) for e in edits if _inside(e.path, ws)]
        if shared:
            notes.append("project scope writes files meant to be committed: " + ", ".join(shared))
    result = _result(name, ws, the_plan, changes, dry_run, notes)
    if dry_run or (not result.changed and previous is not None):
        return result
    apply_changes(changes)
    registry = SharedFiles(settings)
    for change in changes:
        if change.after is not None:
            change.record.written_sha256 = _sha(change.after)
        key = _shared_key(change.record)
        if key and not _inside(change.path, ws):
            # a file (or an entry in one) other workspaces may share: what it was before the
            # first of them wrote to it is what the last disconnect puts back
            if not registry.file_users(change.path) and (
                    change.before is None or not _has_secret(change.before)):
                registry.keep_original(change.path, change.before)
            registry.add(Path(key), _owner(name, ws))
    ledger.put(Connection(
        agent=name, workspace=str(ws), scope=scope_, mode=the_plan.mode,
        memory_dir=str(the_plan.memory_dir), connected_at=datetime.now(UTC),
        # a file of an earlier connect that the plan no longer names (Codex's active global
        # file changed, say) stays recorded, so disconnect still cleans it
        files=[c.record for c in changes] + [
            r for r in (previous.files if previous else []) if r.path not in
            {c.record.path for c in changes}
        ],
    ))
    save_ledger(the_plan.memory_dir, ledger)
    return result


def _shared_key(record: FileRecord) -> str:
    """What several workspaces' connections may share in ``record``'s file: the hooks (the same
    commands for every workspace), an MCP server entry by its name; "" for the rest."""
    if record.kind in ("json-hooks", "json-hooks-flat"):
        return record.path
    if record.kind in MCP_FORMATS:
        return f"{record.path}#{'/'.join([*record.json_path, record.mcp_name])}"
    return ""


def _roots(ws: Path, settings: Settings) -> tuple[Path, ...]:
    """Where the folders on the way to an agent's file are the user's own: no linked folder
    below these is written through (``agents.changes.linked_parent``)."""
    home = settings.agent_home.expanduser()
    return (ws, home, home.resolve())


def _shown(diff: str) -> str:
    """The diff as it may be shown and logged: a settings file's context lines can hold an
    API key (``"env": {"ANTHROPIC_API_KEY": ...}``), which must not reach a terminal or the
    editor's output."""
    from reverie.redact import redact

    return redact(diff)[0]


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _with_exclude(the_plan: Plan, ws: Path) -> list[PlannedEdit]:
    """The plan's edits, plus the git exclude entry for personal files inside a repository."""
    edits = list(the_plan.edits)
    personal = [e for e in edits if e.in_workspace_personal]
    repo = find_repo(ws) if personal else None
    if repo is None:
        return edits
    lines = []
    for edit in personal:
        if edit.path.exists() and is_tracked(repo, edit.path):
            raise ConnectError(
                f"{edit.path} is tracked by git, so a personal connection would change a "
                "committed file; use --scope project, or untrack it first"
            )
        rel = repo.relative(edit.path)
        if rel is not None:
            lines.append("/" + rel)
    if lines:
        edits.append(PlannedEdit(
            repo.exclude_file, "exclude", "block", edits[0].block_id, style="hash",
            body="\n".join(["# files of Reverie's personal connection (never committed)",
                            *lines]),
        ))
    return edits


def _connect_change(edit: PlannedEdit, old: FileRecord | None,
                    roots: tuple[Path, ...] = ()) -> Change:
    before = read_exact(edit.path, roots)
    check_writable(edit.path, before is not None)
    record = FileRecord(path=str(edit.path), role=edit.role, kind=edit.kind,
                        block_id=edit.block_id)
    if old is not None:  # keep what the first connect recorded
        record = old.model_copy(update={"role": edit.role, "kind": edit.kind})
    else:
        record.created = before is None
        record.created_dirs = missing_dirs(edit.path) if before is None else []
        if edit.kind in MCP_FORMATS:
            record.json_path = list(edit.json_path)
            record.mcp_name = edit.mcp_name
            record.json_created_from = (0 if before is None else MCP_FORMATS[
                edit.kind].missing_depth(before, edit.json_path))
        if edit.kind in ("json-hooks", "json-hooks-flat", *MCP_FORMATS) and before is not None \
                and not _has_secret(before) and edit.path.name != ".claude.json":
            # (Claude Code's own state file changes all the time and holds its history: never
            # copied, always restored structurally)
            # kept so an unchanged file comes back byte for byte; never a file with a secret
            # in it (settings may hold API keys): that one is restored structurally instead
            record.original = before
    text = before or ""
    if before is None and edit.preamble and old is None:
        text = record.preamble = edit.preamble
    try:
        if edit.kind == "block":
            after, sep = upsert_block(text, edit.block_id, edit.body, edit.style)
        elif edit.kind == "json-hooks":
            after, sep = set_json_hooks(text, edit.hooks, edit.path.name), None
        elif edit.kind == "json-hooks-flat":
            after, sep = set_flat_hooks(text, edit.hooks, edit.path.name), None
        elif edit.kind in MCP_FORMATS:
            fmt = MCP_FORMATS[edit.kind]
            after, sep = fmt.put(text, edit.json_path, edit.mcp_name, edit.mcp_server,
                                 edit.path.name), None

            def redo(current: str | None, edit: PlannedEdit = edit) -> str | None:
                return MCP_FORMATS[edit.kind].put(current or "", edit.json_path, edit.mcp_name,
                                                  edit.mcp_server, edit.path.name)

            def undo(current: str | None, record: FileRecord = record) -> str | None:
                if current is None:
                    return None
                return MCP_FORMATS[record.kind].remove(
                    current, record.json_path, record.mcp_name, Path(record.path).name,
                    record.json_created_from)

            if old is None or sep:
                record.separator = sep
            return Change(record, before, after, redo, undo)
        else:
            after, sep = set_yaml_read(text, edit.block_id, edit.read_path, edit.path.name)
    except (BlockError, EditError) as exc:
        raise ConnectError(f"{edit.path}: {exc}") from None
    if old is None or sep:  # a block added now (again): what goes with it is this separator
        record.separator = sep
    return Change(record, before, after)


# -- disconnect -------------------------------------------------------------------------------


def disconnect(agent: str, workspace: Path, settings: Settings,
               dry_run: bool = False, user_dirs: Sequence[Path] | None = None) -> ConnectResult:
    """Remove what ``connect`` added; a file whose only change was Reverie's comes back byte
    for byte, and a file Reverie created is removed when nothing else was added to it. A file
    other connections still use (Codex's personal hooks.json) keeps Reverie's part."""
    with connection_lock(settings):
        return _disconnect(agent, workspace, settings, dry_run, user_dirs)


def _disconnect(agent: str, workspace: Path, settings: Settings,
                dry_run: bool, user_dirs: Sequence[Path] | None) -> ConnectResult:
    name = check_agent(agent)
    ws = check_workspace(workspace)
    memory_dir = ProjectPaths(settings, ws).memory_dir
    connection = load_ledger(memory_dir).find(name, ws) or _found_in_files(
        name, ws, settings, user_dirs)
    if connection is None:
        raise ConnectError(f"{name} is not connected for {ws}")
    paths = [Path(r.path) for r in connection.files] + _bookkeeping(memory_dir, settings)
    with file_locks(paths):
        return _disconnect_locked(name, ws, settings, memory_dir, user_dirs,
                                  {str(p) for p in paths}, dry_run)


def _disconnect_locked(name: ConnectableAgent, ws: Path, settings: Settings, memory_dir: Path,
                       user_dirs: Sequence[Path] | None, locked: set[str],
                       dry_run: bool) -> ConnectResult:
    """The read-modify-write of a disconnect, under the lock of every file it touches (the
    ledger is read again under the lock: what it names is what is locked)."""
    ledger = load_ledger(memory_dir)
    connection = ledger.find(name, ws) or _found_in_files(name, ws, settings, user_dirs)
    if connection is None:
        raise ConnectError(f"{name} is not connected for {ws}")
    if not {r.path for r in connection.files} <= locked:
        raise ConnectError(f"the connection of {name} changed while disconnecting; try again")
    roots = _roots(ws, settings)
    registry = SharedFiles(settings)
    owner = _owner(name, ws)
    in_use = {r.path for r in connection.files if _shared_key(r)
              and registry.users(Path(_shared_key(r))) - {owner}}
    changes = [c for r in connection.files if r.path not in in_use
               and (c := _disconnect_change(r, _last_original(r, registry, owner), roots))
               is not None]
    the_plan = Plan(name, connection.scope, connection.mode, memory_dir, [])
    result = _result(name, ws, the_plan, changes, dry_run, [])
    if dry_run:
        return result
    apply_changes(changes)
    for record in connection.files:
        if _shared_key(record):
            registry.remove(Path(_shared_key(record)), owner)
            if not registry.file_users(Path(record.path)):
                registry.forget_original(Path(record.path))
    for change in changes:
        if change.after is None:
            _remove_created_dirs(change.record)
    ledger.drop(name, ws)
    save_ledger(memory_dir, ledger)
    return result


def _last_original(record: FileRecord, registry: SharedFiles,
                   owner: str) -> tuple[bool, str | None]:
    """What a shared file was before the first connection wrote to it, when this connection is
    the last one using it (``(False, None)`` otherwise, or when it was not recorded)."""
    if not _shared_key(record) or registry.file_users(Path(record.path)) - {owner}:
        return False, None
    return registry.original(Path(record.path))


def _disconnect_change(record: FileRecord, first: tuple[bool, str | None] = (False, None),
                       roots: tuple[Path, ...] = ()) -> Change | None:
    """The change that takes ``record``'s part out; ``first``: a shared file's text before any
    connection wrote to it (``_last_original``), put back when nothing else changed since."""
    path = Path(record.path)
    before = read_exact(path, roots)
    if before is None:
        return None
    check_writable(path, True)
    try:
        if record.kind in ("json-hooks", "json-hooks-flat"):
            flat = record.kind == "json-hooks-flat"
            has, remove = ((has_flat_hooks, remove_flat_hooks) if flat
                           else (has_json_hooks, remove_json_hooks))
            if (record.written_sha256 == _sha(before) and record.original is not None
                    and not has(record.original)):
                after: str | None = record.original
            else:
                after = remove(before, path.name)
            if record.created and after is not None and is_empty_json(after):
                after = None
            after = _as_first(after, first)
        elif record.kind in MCP_FORMATS:
            fmt = MCP_FORMATS[record.kind]

            def redo(current: str | None, record: FileRecord = record) -> str | None:
                if current is None:
                    return None
                stripped = fmt.remove(current, record.json_path, record.mcp_name,
                                      Path(record.path).name, record.json_created_from)
                if record.created and fmt.is_empty(stripped):
                    return None
                return _as_first(stripped, first, fmt.load)

            if (record.written_sha256 == _sha(before) and record.original is not None
                    and not fmt.has(record.original, record.json_path, record.mcp_name)):
                after = record.original
            else:  # (an original that holds the entry: another workspace's connect made it)
                after = redo(before)
            if record.created and after is not None and fmt.is_empty(after):
                after = None
            return Change(record, before, after, redo)
        else:
            if record.kind == "block":
                after = remove_block(before, record.block_id, _style(record), record.separator)
            else:
                after = remove_yaml_read(before, record.block_id, record.separator)
            if record.created and (not after or after == record.preamble):
                after = None
    except (BlockError, EditError) as exc:
        raise ConnectError(f"{path}: {exc}") from None
    return Change(record, before, after)


def _as_first(after: str | None, first: tuple[bool, str | None],
              load: Callable[[str], Any] = load_json) -> str | None:
    """``after`` as the shared file's first text when it holds the same data (the file as it
    was, byte for byte), or None when the file did not exist and only empty objects are left
    (``load``: the file's format, JSON or TOML)."""
    known, text = first
    if not known or after is None:
        return after
    try:
        value = load(after)
    except ValueError:
        return after
    if text is None:
        return None if _only_empty(value) else after
    try:
        return text if load(text) == value else after
    except ValueError:
        return after


def _only_empty(value: object) -> bool:
    return isinstance(value, dict) and all(_only_empty(v) for v in value.values())


def _found_in_files(agent: ConnectableAgent, ws: Path, settings: Settings,
                    user_dirs: Sequence[Path] | None) -> Connection | None:
    """Without a ledger entry: Reverie's blocks and hooks still found in the agent's files."""
    for scope in ("personal", "project"):
        scope_: Scope = "personal" if scope == "personal" else "project"
        the_plan = plan(agent, ws, scope_, settings, user_dirs)
        repo = find_repo(ws)
        edits = list(the_plan.edits)
        if repo is not None:
            edits.append(PlannedEdit(repo.exclude_file, "exclude", "block",
                                     edits[0].block_id, style="hash"))
        records = []
        for edit in edits:
            text = read_exact(edit.path, _roots(ws, settings))
            if text is None:
                continue
            record = FileRecord(path=str(edit.path), role=edit.role, kind=edit.kind,
                                block_id=edit.block_id)
            try:
                present = (
                    has_json_hooks(text) if edit.kind == "json-hooks"
                    else has_flat_hooks(text) if edit.kind == "json-hooks-flat"
                    else MCP_FORMATS[edit.kind].has(text, edit.json_path, edit.mcp_name)
                    if edit.kind in MCP_FORMATS
                    else has_yaml_read(text, edit.block_id) if edit.kind == "yaml-read"
                    else find_block(text, edit.block_id, _style(record)) is not None
                )
                if edit.kind in MCP_FORMATS:
                    record.json_path = list(edit.json_path)
                    record.mcp_name = edit.mcp_name
            except BlockError as exc:
                raise ConnectError(f"{edit.path}: {exc}") from None
            if present:
                records.append(record)
        if any(r.role != "exclude" for r in records):
            return Connection(agent=agent, workspace=str(ws), scope=scope_,
                              mode=the_plan.mode, memory_dir=str(the_plan.memory_dir),
                              connected_at=datetime.now(UTC), files=records)
    return None


def _remove_created_dirs(record: FileRecord) -> None:
    for directory in record.created_dirs:  # deepest first
        try:
            os.rmdir(directory)
        except OSError:
            return  # not empty (something else lives there now) or already gone


# -- shared -----------------------------------------------------------------------------------


def _result(agent: ConnectableAgent, ws: Path, the_plan: Plan, changes: list[Change],
            dry_run: bool, notes: list[str]) -> ConnectResult:
    files = []
    diff: list[str] = []
    for change in changes:
        action = (
            "unchanged" if not change.changed
            else "create" if change.before is None
            else "delete" if change.after is None
            else "update"
        )
        files.append(FileChange(path=change.record.path, role=change.record.role,
                                action=action))
        if change.changed:
            diff.extend(difflib.unified_diff(
                (change.before or "").splitlines(keepends=True),
                (change.after or "").splitlines(keepends=True),
                fromfile="/dev/null" if change.before is None else change.record.path,
                tofile="/dev/null" if change.after is None else change.record.path,
            ))
            if diff and not diff[-1].endswith("\n"):
                diff.append("\n\\ No newline at end of file\n")
    return ConnectResult(
        agent=agent, workspace=str(ws), scope=the_plan.scope, mode=the_plan.mode,
        memory_dir=str(the_plan.memory_dir), dry_run=dry_run,
        changed=any(c.changed for c in changes), files=files, diff=_shown("".join(diff)),
        notes=notes,
    )


# -- connections ------------------------------------------------------------------------------


def _file_state(record: FileRecord) -> FileState:
    path = Path(record.path)
    if path.is_symlink():
        return "symlink"
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return "missing"
    try:
        present = (
            has_json_hooks(text) if record.kind == "json-hooks"
            else has_flat_hooks(text) if record.kind == "json-hooks-flat"
            else MCP_FORMATS[record.kind].has(text, record.json_path, record.mcp_name)
            if record.kind in MCP_FORMATS
            else has_yaml_read(text, record.block_id) if record.kind == "yaml-read"
            else find_block(text, record.block_id, _style(record)) is not None
        )
    except BlockError:
        return "damaged"
    return "ok" if present else "block-missing"


def connections(workspace: Path, settings: Settings, detect: bool = True) -> ConnectionsResult:
    """What is wired where for ``workspace``, and which agents have sessions there."""
    ws = check_workspace(workspace)
    memory_dir = ProjectPaths(settings, ws).memory_dir
    ledger = load_ledger(memory_dir)
    infos = [
        ConnectionInfo(
            agent=c.agent, scope=c.scope, mode=c.mode, connected_at=c.connected_at,
            files=[ConnectedFile(path=r.path, role=r.role, state=_file_state(r))
                   for r in c.files],
        )
        for c in ledger.for_workspace(ws)
    ]
    detected: list[ConnectableAgent] = []
    if detect:
        from reverie.transcripts.discovery import discover_sessions

        detected = agents_of(ref.agent for ref in discover_sessions(ws, settings.agent_home))
    return ConnectionsResult(workspace=str(ws), memory_dir=str(memory_dir),
                             connections=infos, detected=detected)


def agents_of(transcript_agents: Iterable[str]) -> list[ConnectableAgent]:
    """The connectable agents among transcript agent names (``gemini-cli`` is ``gemini``)."""
    seen = {connectable_name(name) for name in transcript_agents}
    return [a for a in AGENTS if a in seen]
