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

from reverie.fsutil import atomic_write_bytes, atomic_write_text, fsync_dir
from reverie.memory.history import MemoryHistory, RunRecord
from reverie.memory.lock import ConsolidationLock, state_dir
from reverie.memory.store import visible_files

logger = logging.getLogger(__name__)

#: temp files ``reverie.fsutil`` creates (".<name>.<8 random chars>.tmp"), left by a kill.
_ATOMIC_TEMP = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


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


class TransactionError(Exception):
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
        self.staging_root = state_dir(memory_dir) / "staging"
        self.staging_dir = self.staging_root / self.txid
        self.journal_path = state_dir(memory_dir) / "journal.json"

    # --- staging -------------------------------------------------------------------------
    def begin(self) -> Path:
        """Copy the live memory into a fresh staging dir and return it."""
        check_memory_dir(self.memory_dir)
        self.memory_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.staging_dir.mkdir(mode=0o700, parents=True)
        for name in visible_files(self.memory_dir):
            target = self.staging_dir / name
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            shutil.copyfile(self.memory_dir / name, target)
            target.chmod(0o600)
        return self.staging_dir

    def changes(self) -> ChangeSet:
        """Compare the staged copy with the live dir."""
        live = set(visible_files(self.memory_dir))
        staged = set(visible_files(self.staging_dir))
        changed = [
            name for name in sorted(live & staged)
            if (self.memory_dir / name).read_bytes() != (self.staging_dir / name).read_bytes()
        ]
        return ChangeSet(added=sorted(staged - live), changed=changed,
                         removed=sorted(live - staged))

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
        prepared: RunRecord | None = None
        if history is not None and record is not None:
            parent = history.baseline(self.memory_dir)
            prepared = history.prepare(parent, self.staging_dir, record)
        ops = [
            JournalOp(path=name, action="write",
                      sha256=_sha((self.staging_dir / name).read_bytes()))
            for name in [*changes.added, *changes.changed]
        ] + [JournalOp(path=name, action="delete") for name in changes.removed]
        journal = Journal(txid=self.txid, ops=ops, record=prepared)
        atomic_write_text(self.journal_path, journal.model_dump_json())  # commit point
        self._replay(journal, history)
        return changes, prepared

    def _replay(self, journal: Journal, history: MemoryHistory | None) -> None:
        staging = self.staging_root / journal.txid
        # test-only: widen the apply window so kill tests can land inside it
        delay = float(os.environ.get("REVERIE_TEST_SLOW_APPLY_SECONDS") or 0)
        for op in journal.ops:
            if delay > 0:
                time.sleep(delay)
            live = self.memory_dir / op.path
            if op.action == "delete":
                live.unlink(missing_ok=True)
                _prune_empty_parents(live.parent, self.memory_dir)
                continue
            data = (staging / op.path).read_bytes()
            if _sha(data) != op.sha256:
                raise TransactionError(f"staged copy of {op.path} changed after the commit point")
            if live.is_file() and not live.is_symlink() and live.read_bytes() == data:
                continue
            atomic_write_bytes(live, data)
        fsync_dir(self.memory_dir)
        if history is not None and journal.record is not None:
            history.advance(journal.record.parent, journal.record.commit)
        # the run consolidated: its fresh last-consolidated time must survive a kill from here
        ConsolidationLock(self.memory_dir).forget_prior()
        self.journal_path.unlink(missing_ok=True)
        fsync_dir(self.journal_path.parent)
        shutil.rmtree(staging, ignore_errors=True)
        from reverie.agents.refresh import refresh_copies  # agents import memory: not at top

        refresh_copies(self.memory_dir)  # agents holding a copy of MEMORY.md see the new one


def _prune_empty_parents(directory: Path, stop: Path) -> None:
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def recover(memory_dir: Path) -> bool:
    """Finish or discard whatever a killed process left. Call only with no live holder.

    Returns True when an interrupted apply was completed (that run did consolidate).
    """
    if not memory_dir.is_dir():
        return False
    history = MemoryHistory(memory_dir)
    history.sweep_stale_locks()
    completed = False
    journal_path = state_dir(memory_dir) / "journal.json"
    if journal_path.exists():
        try:
            journal = Journal.model_validate_json(journal_path.read_bytes())
        except (OSError, ValueError) as exc:
            raise TransactionError(f"cannot read the apply journal {journal_path}: {exc}") from exc
        logger.warning("completing an interrupted memory apply (%s)", journal.txid)
        MemoryTransaction(memory_dir, journal.txid)._replay(journal, history)
        completed = True
    shutil.rmtree(state_dir(memory_dir) / "staging", ignore_errors=True)
    _sweep_temp_files(memory_dir)
    return completed


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
