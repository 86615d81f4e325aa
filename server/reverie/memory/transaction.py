"""Transactional changes to a memory dir: stage, then apply atomically and recoverably.

A run edits a private copy (``.reverie/staging/<txid>``); the live dir is untouched until the
run succeeded. Applying is write-ahead: the journal (``.reverie/journal.json``, the list of
files to write or delete with their hashes, plus the prepared history commit) is written
atomically first; that write is the commit point. Each file is then replaced atomically. If the
process dies before the journal exists, recovery just discards the staging copy (the live dir
was never touched). If it dies after, recovery replays the journal from the staging copy, which
is removed only after the journal. Either way the live dir ends byte-identical to before or
after, never a mix and never a partial file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import shutil
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from reverie.errors import UserError
from reverie.fsutil import atomic_write_text, ensure_private_dir, fsync_dir
from reverie.memory import nofollow
from reverie.memory.history import HistoryError, MemoryHistory, RunRecord
from reverie.memory.lock import ConsolidationLock
from reverie.memory.paths import journal_path, staging_root, state_dir
from reverie.memory.store import is_hidden, visible_files

logger = logging.getLogger(__name__)

#: temp files ``reverie.fsutil`` creates (".<name>.<8 random chars>.tmp"), left by a kill.
_ATOMIC_TEMP = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
#: a transaction id (``secrets.token_hex(6)``); a journal naming anything else is refused
_TXID = re.compile(r"^[0-9a-f]{6,64}$")


class JournalOp(BaseModel):
    path: str
    action: Literal["write", "delete"]
    sha256: str | None = None


class Journal(BaseModel):
    """The intent of one apply: written before the live dir changes."""

    txid: str
    ops: list[JournalOp] = Field(default_factory=list)
    record: RunRecord | None = None


class ChangeSet(BaseModel):
    """What a transaction changes in the live dir (relative POSIX paths)."""

    added: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    @property
    def touched(self) -> list[str]:
        return sorted({*self.added, *self.changed, *self.removed})


class TransactionError(UserError):
    """The memory dir cannot be staged or applied (reported as a clean run error)."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_memory_dir(memory_dir: Path) -> None:
    """Refuse a memory dir Reverie cannot safely manage."""
    if memory_dir.is_symlink():
        raise TransactionError(
            f"memory dir {memory_dir} is a symlink; refusing to write through it")
    if memory_dir.exists() and not memory_dir.is_dir():
        raise TransactionError(f"memory dir {memory_dir} is not a directory")


class MemoryTransaction:
    """Stage, apply and recover changes of one memory dir. Hold the consolidation lock."""

    def __init__(self, memory_dir: Path, txid: str | None = None) -> None:
        self.memory_dir = memory_dir
        self.txid = txid or secrets.token_hex(6)
        self.staging_root = staging_root(memory_dir)
        self.staging_dir = self.staging_root / self.txid
        self.journal_path = journal_path(memory_dir)

    # --- staging -------------------------------------------------------------------------
    def begin(self) -> Path:
        """Copy the live memory into a fresh staging dir and return it.

        Live files are read without following links (``reverie.memory.nofollow``): a file
        outside the memory dir never becomes part of the staged copy, whatever is swapped.
        """
        check_memory_dir(self.memory_dir)
        ensure_private_dir(self.memory_dir)
        ensure_private_dir(self.staging_root)
        self.staging_dir.mkdir(mode=0o700)
        try:
            for name in visible_files(self.memory_dir):
                data = nofollow.read_bytes(self.memory_dir, name)
                nofollow.write_bytes(self.staging_dir, name, data)
        except BaseException:
            self.abort()
            raise
        return self.staging_dir

    def changes(self) -> ChangeSet:
        """Compare the staged copy with the live dir."""
        live = set(visible_files(self.memory_dir))
        staged = set(visible_files(self.staging_dir))
        changed = [
            name for name in sorted(live & staged)
            if nofollow.read_bytes(self.memory_dir, name)
            != nofollow.read_bytes(self.staging_dir, name)
        ]
        return ChangeSet(added=sorted(staged - live), changed=changed,
                         removed=sorted(live - staged))

    def _preflight(self, changes: ChangeSet) -> None:
        """Refuse, before the commit point, an apply that would meet a symlink (or a
        non-directory parent, or a non-file target) in the live dir: nothing is written."""
        for name in changes.touched:
            nofollow.split_name(name)
            parts = name.split("/")
            for depth in range(1, len(parts)):
                what = nofollow.kind(self.memory_dir, "/".join(parts[:depth]))
                if what not in (None, "dir"):
                    raise TransactionError(
                        f"{self.memory_dir / '/'.join(parts[:depth])} is a symlink or not a "
                        "directory; Reverie never writes through it. Replace it with a real "
                        "directory (or remove it) and run again")
            what = nofollow.kind(self.memory_dir, name)
            if what not in (None, "file"):
                raise TransactionError(
                    f"{self.memory_dir / name} is a {what}, not a regular file; Reverie never "
                    "writes through it. Remove it and run again")

    def abort(self) -> None:
        """Drop the staged copy; the live dir was never touched."""
        shutil.rmtree(self.staging_dir, ignore_errors=True)

    # --- apply ---------------------------------------------------------------------------
    def commit(self, history: MemoryHistory | None = None,
               record: RunRecord | None = None) -> tuple[ChangeSet, RunRecord | None]:
        """Apply the staged changes to the live dir and publish the history record."""
        changes = self.changes()
        if changes.empty:
            self.abort()
            return changes, None
        self._preflight(changes)
        prepared: RunRecord | None = None
        if history is not None and record is not None:
            parent = history.baseline(self.memory_dir)
            prepared = history.prepare(parent, self.staging_dir, record)
        ops = [
            JournalOp(path=name, action="write",
                      sha256=_sha(nofollow.read_bytes(self.staging_dir, name)))
            for name in [*changes.added, *changes.changed]
        ] + [JournalOp(path=name, action="delete") for name in changes.removed]
        journal = Journal(txid=self.txid, ops=ops, record=prepared)
        atomic_write_text(self.journal_path, journal.model_dump_json())  # commit point
        self._replay(journal, history)
        return changes, prepared

    def _replay(self, journal: Journal, history: MemoryHistory | None) -> None:
        _check_journal(journal)
        staging = self.staging_root / journal.txid
        # test-only: widen the apply window so kill tests can land inside it
        delay = float(os.environ.get("REVERIE_TEST_SLOW_APPLY_SECONDS") or 0)
        for op in journal.ops:
            if delay > 0:
                time.sleep(delay)
            if op.action == "delete":
                nofollow.unlink(self.memory_dir, op.path)
                continue
            data = self._staged_bytes(staging, op, journal, history)
            try:
                current: bytes | None = nofollow.read_bytes(self.memory_dir, op.path)
            except FileNotFoundError:
                current = None
            except nofollow.UnsafePath:
                current = None  # a symlink at the target: replaced (never followed) below
            if current == data:
                continue
            nofollow.write_bytes(self.memory_dir, op.path, data)
        fsync_dir(self.memory_dir)
        if history is not None and journal.record is not None:
            history.advance(journal.record.parent, journal.record.commit)
        # the run consolidated: its fresh last-consolidated time must survive a kill from here
        ConsolidationLock(self.memory_dir).forget_prior()
        self.journal_path.unlink(missing_ok=True)
        fsync_dir(self.journal_path.parent)
        shutil.rmtree(staging, ignore_errors=True)

    def _staged_bytes(self, staging: Path, op: JournalOp, journal: Journal,
                      history: MemoryHistory | None) -> bytes:
        """The bytes an op writes: from the staged copy, or (when that is gone) from the run's
        prepared history commit; either must match the hash the journal recorded."""
        try:
            data: bytes | None = nofollow.read_bytes(staging, op.path)
        except (FileNotFoundError, nofollow.UnsafePath):
            data = None
        if data is not None and _sha(data) == op.sha256:
            return data
        if history is not None and journal.record is not None and journal.record.commit:
            try:
                data = history.file_at(journal.record.commit, op.path)
            except HistoryError:
                data = None
            if data is not None and _sha(data) == op.sha256:
                return data
        raise TransactionError(
            f"cannot complete the interrupted apply {journal.txid}: the new content of "
            f"{op.path} is gone (staged copy missing or changed)")
def _check_journal(journal: Journal) -> None:
    """A journal is input from disk: refuse one that names anything but plain, visible paths
    of the memory dir and a real transaction id (it could otherwise steer a replay outside)."""
    if not _TXID.match(journal.txid):
        raise TransactionError(f"the apply journal names an invalid transaction {journal.txid!r}")
    for op in journal.ops:
        try:
            nofollow.split_name(op.path)
        except nofollow.UnsafePath:
            raise TransactionError(
                f"the apply journal names a path outside the memory dir: {op.path!r}") from None
        if is_hidden(Path(op.path)):
            raise TransactionError(f"the apply journal names a hidden path: {op.path!r}")
        if op.action == "write" and not (op.sha256 and re.fullmatch(r"[0-9a-f]{64}", op.sha256)):
            raise TransactionError(f"the apply journal has no valid hash for {op.path!r}")


def recover(memory_dir: Path) -> bool:
    """Finish or discard whatever a killed process left. Call only with no live holder.

    Returns True when an interrupted apply was completed (that run did consolidate).
    """
    if not memory_dir.is_dir():
        return False
    history = MemoryHistory(memory_dir)
    history.sweep_stale_locks()
    completed = False
    journal_file = journal_path(memory_dir)
    if journal_file.exists() or journal_file.is_symlink():
        journal = _load_journal(journal_file)
        logger.warning("completing an interrupted memory apply (%s)", journal.txid)
        try:
            MemoryTransaction(memory_dir, journal.txid)._replay(journal, history)
        except (TransactionError, nofollow.UnsafePath) as exc:
            if isinstance(exc, nofollow.UnsafePath):
                raise TransactionError(f"cannot complete the interrupted apply "
                                       f"{journal.txid}: {exc.strerror or exc}") from None
            aside = _set_aside(journal_file)
            raise TransactionError(
                f"{exc}. The journal was moved to {aside} and the memory dir left as it is "
                "(some files may already hold the run's new content); `reverie history` and "
                "`reverie undo` restore any earlier state. Run again to continue.") from None
        completed = True
    shutil.rmtree(staging_root(memory_dir), ignore_errors=True)
    _sweep_temp_files(memory_dir)
    return completed


def _load_journal(journal_path: Path) -> Journal:
    """The apply journal, or (unreadable, tampered) a clear error after setting it aside, so
    one bad file cannot make every later run fail."""
    try:
        if journal_path.is_symlink() or not journal_path.is_file():
            raise ValueError("not a regular file")
        journal = Journal.model_validate_json(nofollow.read_bytes(journal_path.parent,
                                                                  journal_path.name))
        _check_journal(journal)
        return journal
    except (OSError, ValueError, TransactionError) as exc:
        aside = _set_aside(journal_path)
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TransactionError(
            f"the apply journal {journal_path} could not be used ({detail[:200]}); it was "
            f"moved to {aside} and nothing was replayed from it. The memory dir is as the "
            "interrupted run left it: check it with `reverie history --diff` and restore an "
            "earlier state with `reverie undo` if needed. Run again to continue.") from None


def _set_aside(journal_path: Path) -> Path:
    """Rename a journal that cannot be replayed to ``journal.broken-<time>.json``."""
    aside = journal_path.with_name(f"journal.broken-{time.strftime('%Y%m%dT%H%M%S')}-"
                                   f"{secrets.token_hex(2)}.json")
    try:
        os.rename(journal_path, aside)
    except OSError:
        journal_path.unlink(missing_ok=True)
    return aside


def _sweep_temp_files(memory_dir: Path) -> None:
    """Remove atomic-write temp files a kill left in the memory dir and its state dir."""
    dirs = [state_dir(memory_dir)]
    for root, subdirs, _files in os.walk(memory_dir):
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]
        dirs.append(Path(root))
    for directory in dirs:
        try:
            children = list(directory.iterdir())
        except OSError:
            continue
        for child in children:
            if _ATOMIC_TEMP.match(child.name) and child.is_file() and not child.is_symlink():
                child.unlink(missing_ok=True)
