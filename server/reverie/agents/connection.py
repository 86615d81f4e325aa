"""``connect`` / ``disconnect`` / ``connections``: plan, check every file, then write them all.

Every file is read and checked before anything is written (a symlink, a read-only file, text
that is not UTF-8, a damaged block or a personal file git tracks stops the whole operation with
a clear error and no write). Writes are atomic per file; if one fails, the files already written
are put back. ``dry_run`` stops after the check and returns the unified diff.

Symlinked instruction files are refused rather than written through: the link's target is
usually shared (``CLAUDE.md -> AGENTS.md``, a dotfiles repository), and editing it would change
what other tools or other people read.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from reverie.agents.blocks import BlockError, CommentStyle, find_block, remove_block, upsert_block
from reverie.agents.edits import (
    EditError,
    has_json_hooks,
    has_json_mcp,
    has_yaml_read,
    is_empty_json,
    missing_depth,
    remove_json_hooks,
    remove_json_mcp,
    remove_yaml_read,
    set_json_hooks,
    set_json_mcp,
    set_yaml_read,
)
from reverie.agents.gitrepo import find_repo, is_tracked
from reverie.agents.ledger import Connection, FileRecord, Scope, load_ledger, save_ledger
from reverie.agents.results import (
    ConnectedFile,
    ConnectionInfo,
    ConnectionsResult,
    ConnectResult,
    FileChange,
    FileState,
)
from reverie.agents.shared import SharedFiles, connection_lock
from reverie.agents.specs import MCP_SERVER_NAME, Plan, PlannedEdit, plan
from reverie.config import ProjectPaths, Settings
from reverie.errors import UserError
from reverie.fsutil import atomic_write_bytes
from reverie.types import CONNECTABLE_AGENTS as AGENTS
from reverie.types import ConnectableAgent, connectable_name

logger = logging.getLogger(__name__)


class ConnectError(UserError):
    """A one-line reason why nothing was written (the front ends show it as a refusal)."""


@dataclass(slots=True)
class _Change:
    record: FileRecord
    before: str | None
    after: str | None  # None: delete the file
    #: for files the agent itself rewrites while it runs (Claude Code's ~/.claude.json): the
    #: same edit made again on the text found just before writing, so its writes survive
    redo: Callable[[str | None], str | None] | None = None
    #: with ``redo``: the opposite edit, to put such a file back after a failure
    undo: Callable[[str | None], str | None] | None = None

    @property
    def path(self) -> Path:
        return Path(self.record.path)

    @property
    def changed(self) -> bool:
        return self.before != self.after


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


def _read(path: Path) -> str | None:
    """The file's text exactly (no newline translation), None when it does not exist."""
    if path.is_symlink():
        raise ConnectError(
            f"{path} is a symbolic link (to {os.readlink(path)}); Reverie does not edit "
            "through links, whose target other tools may share: replace the link with a "
            "file or use the other --scope"
        )
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConnectError(f"{path} is a directory, not a file") from None
    except OSError as exc:
        raise ConnectError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConnectError(f"{path} is not UTF-8 text; nothing was written") from None


def _check_writable(path: Path, exists: bool) -> None:
    if exists:
        mode = path.stat().st_mode
        if not mode & stat.S_IWUSR or not os.access(path, os.W_OK):
            raise ConnectError(f"{path} is read-only; nothing was written")
        return
    probe = path.parent
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not os.access(probe, os.W_OK):
        raise ConnectError(f"cannot create {path}: {probe} is not writable; nothing was written")


def _missing_dirs(path: Path) -> list[str]:
    missing = []
    probe = path.parent
    while not probe.exists() and probe.parent != probe:
        missing.append(str(probe))
        probe = probe.parent
    return missing  # deepest first


def _has_secret(text: str) -> bool:
    from reverie.redact import redact

    return redact(text)[1] > 0


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# -- connect ----------------------------------------------------------------------------------


def connect(agent: str, workspace: Path, scope: str, settings: Settings,
            dry_run: bool = False) -> ConnectResult:
    """Wire ``agent`` to the workspace's memory (idempotent: twice is once), under the
    machine-wide connection lock (``agents.shared``)."""
    with connection_lock(settings):
        return _connect(agent, workspace, scope, settings, dry_run)


def _owner(agent: str, ws: Path) -> str:
    return f"{agent}:{ws}"


def _connect(agent: str, workspace: Path, scope: str, settings: Settings,
             dry_run: bool) -> ConnectResult:
    name = check_agent(agent)
    if scope not in ("personal", "project"):
        raise ConnectError(f"unknown scope '{scope}' (personal or project)")
    scope_: Scope = "personal" if scope == "personal" else "project"
    ws = check_workspace(workspace)
    the_plan = plan(name, ws, scope_, settings)
    ledger = load_ledger(the_plan.memory_dir)
    previous = ledger.find(name, ws)
    if previous is not None and previous.scope != scope_:
        raise ConnectError(
            f"{name} is connected at {previous.scope} scope; run `reverie disconnect {name}` "
            "first to change the scope"
        )
    old_records = {r.path: r for r in previous.files} if previous else {}
    edits = _with_exclude(the_plan, ws)
    changes = [_connect_change(edit, old_records.get(str(edit.path))) for edit in edits]
    notes = list(the_plan.notes)
    if scope_ == "project":
        shared = [str(e.path) for e in edits if _inside(e.path, ws)]
        if shared:
            notes.append("project scope writes files meant to be committed: " + ", ".join(shared))
    result = _result(name, ws, the_plan, changes, dry_run, notes)
    if dry_run or (not result.changed and previous is not None):
        return result
    _apply(changes)
    registry = SharedFiles(settings)
    for change in changes:
        if change.after is not None:
            change.record.written_sha256 = _sha(change.after)
        if change.record.kind == "json-hooks" and not _inside(change.path, ws):
            registry.add(change.path, _owner(name, ws))  # a file other workspaces may share
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


def _connect_change(edit: PlannedEdit, old: FileRecord | None) -> _Change:
    before = _read(edit.path)
    _check_writable(edit.path, before is not None)
    record = FileRecord(path=str(edit.path), role=edit.role, kind=edit.kind,
                        block_id=edit.block_id)
    if old is not None:  # keep what the first connect recorded
        record = old.model_copy(update={"role": edit.role, "kind": edit.kind})
    else:
        record.created = before is None
        record.created_dirs = _missing_dirs(edit.path) if before is None else []
        if edit.kind == "json-mcp":
            record.json_path = list(edit.json_path)
            record.json_created_from = (0 if before is None
                                        else missing_depth(before, edit.json_path))
        if edit.kind in ("json-hooks", "json-mcp") and before is not None \
                and not _has_secret(before) and edit.path.name != ".claude.json":
            # (Claude Code's own state file changes all the time and holds its history: never
            # copied, always restored structurally)
            # kept so an unchanged file comes back byte for byte; never a file with a secret
            # in it (settings may hold API keys): that one is restored structurally instead
            record.original = before
    text = before or ""
    try:
        if edit.kind == "block":
            after, sep = upsert_block(text, edit.block_id, edit.body, edit.style)
        elif edit.kind == "json-hooks":
            after, sep = set_json_hooks(text, edit.hooks, edit.path.name), None
        elif edit.kind == "json-mcp":
            after, sep = set_json_mcp(text, edit.json_path, edit.mcp_name, edit.mcp_server,
                                      edit.path.name), None

            def redo(current: str | None, edit: PlannedEdit = edit) -> str | None:
                return set_json_mcp(current or "", edit.json_path, edit.mcp_name,
                                    edit.mcp_server, edit.path.name)

            def undo(current: str | None, record: FileRecord = record) -> str | None:
                if current is None:
                    return None
                return remove_json_mcp(current, record.json_path, MCP_SERVER_NAME,
                                       Path(record.path).name, record.json_created_from)

            if old is None or sep:
                record.separator = sep
            return _Change(record, before, after, redo, undo)
        else:
            after, sep = set_yaml_read(text, edit.block_id, edit.read_path, edit.path.name)
    except (BlockError, EditError) as exc:
        raise ConnectError(f"{edit.path}: {exc}") from None
    if old is None or sep:  # a block added now (again): what goes with it is this separator
        record.separator = sep
    return _Change(record, before, after)


# -- disconnect -------------------------------------------------------------------------------


def disconnect(agent: str, workspace: Path, settings: Settings,
               dry_run: bool = False) -> ConnectResult:
    """Remove what ``connect`` added; a file whose only change was Reverie's comes back byte
    for byte, and a file Reverie created is removed when nothing else was added to it. A file
    other connections still use (Codex's personal hooks.json) keeps Reverie's part."""
    with connection_lock(settings):
        return _disconnect(agent, workspace, settings, dry_run)


def _disconnect(agent: str, workspace: Path, settings: Settings,
                dry_run: bool) -> ConnectResult:
    name = check_agent(agent)
    ws = check_workspace(workspace)
    memory_dir = ProjectPaths(settings, ws).memory_dir
    ledger = load_ledger(memory_dir)
    connection = ledger.find(name, ws) or _found_in_files(name, ws, settings)
    if connection is None:
        raise ConnectError(f"{name} is not connected for {ws}")
    registry = SharedFiles(settings)
    owner = _owner(name, ws)
    in_use = {r.path for r in connection.files if r.kind == "json-hooks"
              and registry.users(Path(r.path)) - {owner}}
    changes = [c for r in connection.files
               if r.path not in in_use and (c := _disconnect_change(r)) is not None]
    the_plan = Plan(name, connection.scope, connection.mode, memory_dir, [])
    result = _result(name, ws, the_plan, changes, dry_run, [])
    if dry_run:
        return result
    _apply(changes)
    for record in connection.files:
        if record.kind == "json-hooks":
            registry.remove(Path(record.path), owner)
    for change in changes:
        if change.after is None:
            _remove_created_dirs(change.record)
    ledger.drop(name, ws)
    save_ledger(memory_dir, ledger)
    return result


def _disconnect_change(record: FileRecord) -> _Change | None:
    path = Path(record.path)
    before = _read(path)
    if before is None:
        return None
    _check_writable(path, True)
    try:
        if record.kind == "json-hooks":
            if (record.written_sha256 == _sha(before) and record.original is not None
                    and not has_json_hooks(record.original)):
                after: str | None = record.original
            else:
                after = remove_json_hooks(before, path.name)
            if record.created and after is not None and is_empty_json(after):
                after = None
        elif record.kind == "json-mcp":
            def redo(current: str | None, record: FileRecord = record) -> str | None:
                if current is None:
                    return None
                stripped = remove_json_mcp(current, record.json_path, MCP_SERVER_NAME,
                                           Path(record.path).name, record.json_created_from)
                return None if record.created and is_empty_json(stripped) else stripped

            if record.written_sha256 == _sha(before) and record.original is not None:
                after = record.original
            else:
                after = redo(before)
            if record.created and after is not None and is_empty_json(after):
                after = None
            return _Change(record, before, after, redo)
        else:
            if record.kind == "block":
                after = remove_block(before, record.block_id, _style(record), record.separator)
            else:
                after = remove_yaml_read(before, record.block_id, record.separator)
            if record.created and not after:
                after = None
    except (BlockError, EditError) as exc:
        raise ConnectError(f"{path}: {exc}") from None
    return _Change(record, before, after)


def _found_in_files(agent: ConnectableAgent, ws: Path, settings: Settings) -> Connection | None:
    """Without a ledger entry: Reverie's blocks and hooks still found in the agent's files."""
    for scope in ("personal", "project"):
        scope_: Scope = "personal" if scope == "personal" else "project"
        the_plan = plan(agent, ws, scope_, settings)
        repo = find_repo(ws)
        edits = list(the_plan.edits)
        if repo is not None:
            edits.append(PlannedEdit(repo.exclude_file, "exclude", "block",
                                     edits[0].block_id, style="hash"))
        records = []
        for edit in edits:
            text = _read(edit.path)
            if text is None:
                continue
            record = FileRecord(path=str(edit.path), role=edit.role, kind=edit.kind,
                                block_id=edit.block_id)
            try:
                present = (
                    has_json_hooks(text) if edit.kind == "json-hooks"
                    else has_json_mcp(text, edit.json_path, edit.mcp_name)
                    if edit.kind == "json-mcp"
                    else has_yaml_read(text, edit.block_id) if edit.kind == "yaml-read"
                    else find_block(text, edit.block_id, _style(record)) is not None
                )
                if edit.kind == "json-mcp":
                    record.json_path = list(edit.json_path)
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


def _result(agent: ConnectableAgent, ws: Path, the_plan: Plan, changes: list[_Change],
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
        changed=any(c.changed for c in changes), files=files, diff="".join(diff), notes=notes,
    )


def _write(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
        return
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    atomic_write_bytes(path, text.encode("utf-8"), mode)


#: how often an edit is made again when the file keeps changing under it
_REDO_ATTEMPTS = 8


#: Claude Code's config lock (proper-lockfile: a directory ``<file>.lock``; older than this
#: many seconds, it is stale)
_CLAUDE_LOCK_STALE = 10.0
_CLAUDE_LOCK_WAIT = 5.0


@contextmanager
def _config_lock(path: Path) -> Iterator[None]:
    """Take the lock Claude Code takes before it saves ``~/.claude.json`` (``mkdir`` of
    ``~/.claude.json.lock``, its proper-lockfile convention), so that neither side's
    read-modify-write lands on the other's. A lock held past the wait is reported, never
    broken unless stale."""
    lock = Path(f"{path}.lock")
    deadline = time.monotonic() + _CLAUDE_LOCK_WAIT
    while True:
        try:
            lock.mkdir()
            break
        except FileExistsError:
            try:
                stale = time.time() - lock.stat().st_mtime > _CLAUDE_LOCK_STALE
            except OSError:
                continue
            if stale:
                try:
                    lock.rmdir()
                except OSError:
                    pass
                continue
            if time.monotonic() > deadline:
                raise ConnectError(f"{path} is locked by Claude Code ({lock}); try again in "
                                   "a moment") from None
            time.sleep(0.01)
        except OSError as exc:
            raise ConnectError(f"cannot lock {path}: {exc.strerror or exc}") from None
    try:
        yield
    finally:
        try:
            lock.rmdir()
        except OSError:
            logger.warning("could not remove %s", lock)


def _write_again_if_moved(change: _Change) -> None:
    """Write ``change.after`` under the agent's own lock (Claude Code's); if the file changed
    since it was read, make the edit again on what is there now, so the agent's writes
    survive (also those of a writer that skips the lock)."""
    if change.path.name == ".claude.json":
        with _config_lock(change.path):
            _write_again_unlocked(change)
    else:
        _write_again_unlocked(change)


def _write_again_unlocked(change: _Change) -> None:
    assert change.redo is not None
    for _ in range(_REDO_ATTEMPTS):
        current = _read(change.path)
        if current != change.before:
            try:
                change.before, change.after = current, change.redo(current)
            except EditError as exc:
                raise ConnectError(f"{change.path}: {exc}") from None
        if not change.changed:
            return
        _write(change.path, change.after)
        # written: re-read at once; another write landing between our read and the rename
        # shows as a text that is neither ours nor what we read
        if _read(change.path) == change.after:
            return
    raise ConnectError(f"{change.path} keeps changing under Reverie; close the agent and "
                       "connect again (nothing of its own was lost)")


def _apply(changes: list[_Change]) -> None:
    """Write every changed file; on a failure put back the ones already written."""
    done: list[_Change] = []
    try:
        for change in changes:
            if change.redo is not None:
                _write_again_if_moved(change)
                if change.changed:
                    done.append(change)
            elif change.changed:
                _write(change.path, change.after)
                done.append(change)
    except (OSError, ConnectError) as exc:
        for change in reversed(done):
            try:
                if change.undo is not None:  # the agent may have written since: edit again
                    current = _read(change.path)
                    _write_again_if_moved(_Change(change.record, current,
                                                  change.undo(current), change.undo))
                else:
                    _write(change.path, change.before)
            except (OSError, ConnectError, EditError):
                logger.exception("could not put back %s", change.path)
        if isinstance(exc, ConnectError):
            raise ConnectError(f"{exc}; the files were put back as they were") from None
        raise ConnectError(f"cannot write {exc.filename or ''}: {exc.strerror or exc}; "
                           "the files were put back as they were") from None


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
            else has_json_mcp(text, record.json_path, MCP_SERVER_NAME)
            if record.kind == "json-mcp"
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
