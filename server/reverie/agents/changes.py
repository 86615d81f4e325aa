"""Reading and writing agents' files for a connection: every change checked first, written
atomically, put back when a later write fails.

``Change`` is one file's before and after; ``apply_changes`` writes them all or none. Files an
agent rewrites while it runs (Claude Code's ``~/.claude.json``, Cline's and Roo's MCP settings)
carry a ``redo``: the edit is made again on whatever is there just before the write.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from reverie.agents.edits import EditError
from reverie.agents.ledger import FileRecord
from reverie.errors import UserError
from reverie.fsutil import atomic_write_bytes, ensure_private_dir, fsync_dir

logger = logging.getLogger(__name__)


class ConnectError(UserError):
    """A one-line reason why nothing was written (the front ends show it as a refusal)."""


@dataclass(slots=True)
class Change:
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


def linked_parent(path: Path, roots: Iterable[Path] = ()) -> Path | None:
    """The first folder on the way to ``path`` that is a symbolic link, below the deepest of
    ``roots`` that holds it (the workspace, the agent home: where the folders are the user's
    own), else ``path``'s own folder; None when there is none. A linked ``.claude/``,
    ``.codex/`` or ``.git/info/`` would make a write land in the link's target."""
    parent = path.parent
    inside = [root for root in roots if root == parent or root in parent.parents]
    start = max(inside, key=lambda root: len(root.parts)) if inside else parent.parent
    probe = start
    for part in parent.parts[len(start.parts):]:
        probe = probe / part
        if probe.is_symlink():
            return probe
    return None


def read_exact(path: Path, roots: Iterable[Path] = ()) -> str | None:
    """The file's text exactly (no newline translation), None when it does not exist. A file
    that is a symbolic link, or reached through a linked folder below ``roots``, is refused."""
    linked = linked_parent(path, roots)
    if linked is not None:
        raise ConnectError(
            f"{linked} is a symbolic link (to {os.readlink(linked)}); Reverie does not write "
            f"{path.name} through a linked folder, whose target other tools or people may "
            "share: replace the link with a folder or use the other --scope"
        )
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


def check_writable(path: Path, exists: bool) -> None:
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


def missing_dirs(path: Path) -> list[str]:
    missing = []
    probe = path.parent
    while not probe.exists() and probe.parent != probe:
        missing.append(str(probe))
        probe = probe.parent
    return missing  # deepest first


def write_file(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
        return
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def _replace_if_unchanged(path: Path, text: str | None, expected: str | None) -> bool:
    """Write ``text`` (None: delete) unless the file no longer holds ``expected``: the new
    file is written and synced first, then the file is read again just before the rename, so
    a writer without a lock (Codex saving config.toml) loses its write only in that instant
    rather than for the whole write. False when the file had changed (nothing written)."""
    if text is None:
        if read_exact(path) != expected:
            return False
        path.unlink(missing_ok=True)
        return True
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    if not path.parent.is_dir():
        ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if read_exact(path) != expected:
            os.unlink(tmp)
            return False
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
    return True


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


def _write_again_if_moved(change: Change) -> None:
    """Write ``change.after`` under the agent's own lock (Claude Code's); if the file changed
    since it was read, make the edit again on what is there now, so the agent's writes
    survive (also those of a writer that skips the lock)."""
    if change.path.name == ".claude.json":
        with _config_lock(change.path):
            _write_again_unlocked(change)
    else:
        _write_again_unlocked(change)


def _write_again_unlocked(change: Change) -> None:
    assert change.redo is not None
    for _ in range(_REDO_ATTEMPTS):
        current = read_exact(change.path)
        if current != change.before:
            try:
                change.before, change.after = current, change.redo(current)
            except EditError as exc:
                raise ConnectError(f"{change.path}: {exc}") from None
        if not change.changed:
            return
        if not _replace_if_unchanged(change.path, change.after, change.before):
            continue  # it changed while ours was being written out: edit what is there now
        # written: re-read at once; another write landing between our read and the rename
        # shows as a text that is neither ours nor what we read
        if read_exact(change.path) == change.after:
            return
    raise ConnectError(f"{change.path} keeps changing under Reverie; close the agent and "
                       "connect again (nothing of its own was lost)")


def apply_changes(changes: list[Change]) -> None:
    """Write every changed file; on a failure put back the ones already written."""
    done: list[Change] = []
    try:
        for change in changes:
            if change.redo is not None:
                _write_again_if_moved(change)
                if change.changed:
                    done.append(change)
            elif change.changed:
                write_file(change.path, change.after)
                done.append(change)
    except (OSError, ConnectError) as exc:
        for change in reversed(done):
            try:
                if change.undo is not None:  # the agent may have written since: edit again
                    current = read_exact(change.path)
                    _write_again_if_moved(Change(change.record, current,
                                                  change.undo(current), change.undo))
                else:
                    write_file(change.path, change.before)
            except (OSError, ConnectError, EditError):
                logger.exception("could not put back %s", change.path)
        if isinstance(exc, ConnectError):
            raise ConnectError(f"{exc}; the files were put back as they were") from None
        raise ConnectError(f"cannot write {exc.filename or ''}: {exc.strerror or exc}; "
                           "the files were put back as they were") from None
