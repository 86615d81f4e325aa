"""History of every applied memory run, kept as git objects through dulwich.

Why git (dulwich) rather than a home-made snapshot store: content-addressed blobs deduplicate
unchanged topic files across hundreds of runs, diffs and unified patches come for free
(``dulwich.diff_tree`` / ``dulwich.patch``), and a user can inspect or rescue their memory with
plain ``git --git-dir <memory>/.reverie/history.git log -p`` without Reverie. Only the object
store and one ref are used (a bare repository, no index or work tree), so there is no git index
to corrupt when a process is killed; stale ``*.lock`` files a kill may leave are swept during
recovery while the consolidation lock is held.

Each run is one commit whose tree is the memory dir after the run and whose parent is the memory
dir before it. Edits made by hand between runs are recorded first as a separate ``edit`` commit,
so "before this run" is always exact and a deleted topic file is always recoverable.

Retention (``prune``) drops runs older than a cutoff without losing memory: the newest dropped
commit's tree becomes a parentless ``edit`` commit (the baseline) and the kept commits are
re-created on top of it with the same trees and messages, so run ids, times, sources, file
lists, diffs and undo of every kept run stay as they were; only commit ids change.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import os
import secrets
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from dulwich.diff_tree import tree_changes
from dulwich.gc import find_reachable_objects
from dulwich.index import commit_tree
from dulwich.object_store import DiskObjectStore, iter_tree_contents
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.patch import write_tree_diff
from dulwich.refs import Ref
from dulwich.repo import Repo
from pydantic import BaseModel, Field

from reverie.errors import UserError
from reverie.fsutil import ensure_private_dir
from reverie.memory import nofollow
from reverie.memory.paths import history_git_dir, journal_path, state_dir
from reverie.memory.store import visible_files
from reverie.redact import redact_value

logger = logging.getLogger(__name__)

RunSource = Literal["auto", "manual", "sleep", "undo", "edit", "curate"]
REF = Ref(b"refs/heads/memory")
_AUTHOR = b"Reverie <reverie@localhost>"
_FILE_MODE = 0o100644
_HEX = frozenset("0123456789abcdef")
#: ``core.sharedRepository`` as an explicit mode: owner-only files and directories
_SHARED = "0600"


def _owner_only(path: Path) -> None:
    """Drop group and other bits (0700 dirs; 0600 / 0400 files); never follow a symlink."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode):
        return
    mode = stat.S_IMODE(info.st_mode)
    wanted = 0o700 if stat.S_ISDIR(info.st_mode) else mode & 0o700
    if mode != wanted:
        try:
            os.chmod(path, wanted)
        except OSError:
            logger.debug("could not chmod %s", path)


_F = TypeVar("_F", bound=Callable[..., Any])


def _clear_errors(method: _F) -> _F:
    """A missing object (``KeyError`` from dulwich) becomes a ``HistoryError`` that says so."""

    @functools.wraps(method)
    def wrapper(self: MemoryHistory, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except KeyError as exc:
            raise HistoryError(_missing(self.git_dir, str(exc.args[0] if exc.args else "?")
                                        .encode("ascii", "replace"))) from None

    return cast(_F, wrapper)


def _missing(git_dir: Path, sha: bytes) -> str:
    return (f"the memory history {git_dir} refers to commit {sha.decode('ascii', 'replace')}, "
            "which is missing or damaged; the memory files themselves are unaffected. Move "
            "the history aside (it is a git repository) to start a fresh one")


class RunRecord(BaseModel):
    """One applied run as ``reverie history`` lists it."""

    run_id: str
    at: datetime
    source: RunSource
    added: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    sessions: list[str] = Field(default_factory=list)
    summary: str = ""
    undoes: str | None = None
    commit: str = ""
    parent: str | None = None

    @property
    def files_touched(self) -> list[str]:
        return sorted({*self.added, *self.changed, *self.removed})


class FileChange(BaseModel):
    """One file of a run: its bytes before and after (None where it did not exist)."""

    path: str
    before: bytes | None
    after: bytes | None


class HistoryError(UserError):
    """A run id that does not exist, or a history that cannot be read."""


def new_run_id(now: datetime | None = None) -> str:
    moment = now or datetime.now(UTC)
    return f"{moment.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


class MemoryHistory:
    """The git history of one memory dir (``.reverie/history.git``)."""

    def __init__(self, memory_dir: Path) -> None:
        self.memory_dir = memory_dir
        self.git_dir = history_git_dir(memory_dir)

    # --- repository ----------------------------------------------------------------------
    def _repo(self) -> Repo:
        if (self.git_dir / "objects").is_dir():
            try:
                return Repo(str(self.git_dir))
            except (OSError, ValueError, KeyError) as exc:
                raise HistoryError(f"the memory history {self.git_dir} cannot be opened: "
                                   f"{exc}") from None
        state = state_dir(self.memory_dir)
        ensure_private_dir(state)
        state.chmod(0o700)
        if not self.git_dir.exists():
            self.git_dir.mkdir(mode=0o700)
        # core.sharedRepository=0600: dulwich then creates every object and directory
        # owner-only (0400 objects, 0700 dirs) whatever the umask
        try:
            repo = Repo.init_bare(str(self.git_dir), shared_repository=_SHARED)
        except TypeError:  # a dulwich without the parameter: _tighten records and applies it
            repo = Repo.init_bare(str(self.git_dir))
        self._tighten()
        return repo

    def _tighten(self) -> None:
        """Owner-only modes on what dulwich writes outside ``objects/`` (HEAD, config, refs),
        and everywhere in a history made before the setting existed (once)."""
        if not self.git_dir.is_dir() or self.git_dir.is_symlink():
            return
        try:
            with Repo(str(self.git_dir)) as repo:
                legacy = repo.get_config().get((b"core",), b"sharedRepository") != \
                    _SHARED.encode()
        except (OSError, ValueError, KeyError):
            legacy = True
        for root, dirs, files in os.walk(self.git_dir):
            top = Path(root)
            if not legacy and top == self.git_dir:
                dirs[:] = [d for d in dirs if d != "objects"]
            for name in [*dirs, *files]:
                _owner_only(top / name)
        _owner_only(self.git_dir)
        if legacy:
            try:
                with Repo(str(self.git_dir)) as repo:
                    config = repo.get_config()
                    config.set((b"core",), b"sharedRepository", _SHARED.encode())
                    config.write_to_path()
            except (OSError, ValueError, KeyError):
                logger.debug("could not record sharedRepository in %s", self.git_dir)
            _owner_only(self.git_dir / "config")

    def _commit(self, repo: Repo, commit_id: ObjectID | str | bytes) -> Commit:
        """The commit ``commit_id``; a clear ``HistoryError`` when it is missing or not a
        commit (a ref or record pointing at an object that is gone)."""
        sha = ObjectID(commit_id.encode() if isinstance(commit_id, str) else commit_id)
        try:
            commit = repo[sha]
        except (KeyError, ValueError, OSError):
            raise HistoryError(_missing(self.git_dir, sha)) from None
        if not isinstance(commit, Commit):
            raise HistoryError(_missing(self.git_dir, sha))
        return commit

    def exists(self) -> bool:
        return (self.git_dir / "objects").is_dir()

    def head(self) -> ObjectID | None:
        if not self.exists():
            return None
        with self._repo() as repo:
            try:
                return ObjectID(repo.refs[REF])
            except (KeyError, ValueError):
                return None

    def sweep_stale_locks(self) -> int:
        """Remove ``*.lock`` files a killed writer left (call only under the consolidation lock)."""
        removed = 0
        if not self.git_dir.is_dir():
            return 0
        for path in self.git_dir.rglob("*.lock"):
            try:
                path.unlink()
                removed += 1
            except OSError:
                continue
        return removed

    # --- writing -------------------------------------------------------------------------
    def snapshot_tree(self, root: Path) -> ObjectID:
        """Store the visible files under ``root`` and return their tree id."""
        with self._repo() as repo:
            blobs: list[tuple[bytes, ObjectID, int]] = []
            for name in visible_files(root):
                blob = Blob.from_string(nofollow.read_bytes(root, name))
                repo.object_store.add_object(blob)
                blobs.append((name.encode("utf-8", "surrogateescape"), blob.id, _FILE_MODE))
            return commit_tree(repo.object_store, blobs)

    def _tree_of(self, repo: Repo, commit_id: ObjectID | None) -> ObjectID | None:
        if commit_id is None:
            return None
        return ObjectID(self._commit(repo, commit_id).tree)

    def _make_commit(self, repo: Repo, tree: ObjectID, parent: ObjectID | None, record: RunRecord,
                     ) -> ObjectID:
        commit = Commit()
        commit.tree = tree
        commit.parents = [parent] if parent else []
        commit.author = commit.committer = _AUTHOR
        stamp = int(record.at.timestamp())
        commit.author_time = commit.commit_time = stamp
        commit.author_timezone = commit.commit_timezone = 0
        commit.encoding = b"UTF-8"
        headline = (
            f"{record.source}: +{len(record.added)} ~{len(record.changed)} "
            f"-{len(record.removed)}"
        )
        # a run's summary can quote what the model said: redacted, field by field (valid JSON)
        meta, _ = redact_value(record.model_dump(mode="json", exclude={"commit", "parent"}))
        commit.message = f"{headline}\n\n{json.dumps(meta, sort_keys=True)}\n".encode()
        repo.object_store.add_object(commit)
        return commit.id

    def _diff(self, repo: Repo, old: ObjectID | None, new: ObjectID) -> tuple[list[str], ...]:
        added: list[str] = []
        changed: list[str] = []
        removed: list[str] = []
        for change in tree_changes(repo.object_store, old, new):
            if change.type == "add" and change.new is not None:
                added.append(change.new.path.decode("utf-8", "surrogateescape"))
            elif change.type == "delete" and change.old is not None:
                removed.append(change.old.path.decode("utf-8", "surrogateescape"))
            elif change.new is not None:
                changed.append(change.new.path.decode("utf-8", "surrogateescape"))
        return sorted(added), sorted(changed), sorted(removed)

    @_clear_errors
    def baseline(self, live_dir: Path) -> ObjectID | None:
        """The commit holding the live dir as it is now (records hand edits as an ``edit``)."""
        tree = self.snapshot_tree(live_dir)
        with self._repo() as repo:
            head = repo.refs[REF] if REF in repo.refs else None
            if self._tree_of(repo, head) == tree:
                return head
            if head is None and not visible_files(live_dir):
                return None
            old = self._tree_of(repo, head)
            added, changed, removed = self._diff(repo, old, tree)
            record = RunRecord(
                run_id=new_run_id(), at=datetime.now(UTC), source="edit",
                added=added, changed=changed, removed=removed,
                summary="changes made outside Reverie",
            )
            commit = self._make_commit(repo, tree, head, record)
            if not repo.refs.set_if_equals(REF, head, commit):
                raise HistoryError("memory history moved while recording a baseline")
        self._tighten()
        return commit

    @_clear_errors
    def prepare(self, parent: ObjectID | None, new_root: Path, record: RunRecord) -> RunRecord:
        """Write the run's objects (not yet visible in the history). Fills the file lists."""
        tree = self.snapshot_tree(new_root)
        with self._repo() as repo:
            added, changed, removed = self._diff(repo, self._tree_of(repo, parent), tree)
            record = record.model_copy(update={"added": added, "changed": changed,
                                               "removed": removed})
            commit = self._make_commit(repo, tree, parent, record)
        return record.model_copy(update={
            "commit": commit.decode(), "parent": parent.decode() if parent else None,
        })

    @_clear_errors
    def advance(self, parent: str | None, commit: str) -> None:
        """Publish a prepared run (idempotent, so recovery can repeat it)."""
        with self._repo() as repo:
            head = repo.refs[REF] if REF in repo.refs else None
            if head == commit.encode():
                return
            old = ObjectID(parent.encode()) if parent else None
            if not repo.refs.set_if_equals(REF, old, ObjectID(commit.encode())):
                raise HistoryError("memory history moved while publishing a run")
        self._tighten()

    # --- reading -------------------------------------------------------------------------
    @_clear_errors
    def _records(self, include_edits: bool) -> list[RunRecord]:
        if not self.exists():
            return []
        out: list[RunRecord] = []
        with self._repo() as repo:
            current = repo.refs[REF] if REF in repo.refs else None
            seen: set[bytes] = set()
            while current is not None and current not in seen:
                seen.add(current)
                commit = self._commit(repo, current)
                record = _parse_record(commit)
                if record is not None and (include_edits or record.source != "edit"):
                    out.append(record)
                current = commit.parents[0] if commit.parents else None
        return out

    def runs(self, *, include_edits: bool = False) -> list[RunRecord]:
        """Runs, newest first."""
        return self._records(include_edits)

    def find(self, run_id: str | None) -> RunRecord:
        """A run by id or unique id prefix; ``None`` is the latest run."""
        runs = self.runs()
        if not runs:
            raise HistoryError("no memory runs recorded yet")
        if run_id is None:
            return runs[0]
        matches = [r for r in runs if r.run_id == run_id] or [
            r for r in runs if r.run_id.startswith(run_id)
        ]
        if len(matches) != 1:
            raise HistoryError(
                f"no run {run_id!r}" if not matches else f"run id {run_id!r} is ambiguous"
            )
        return matches[0]

    @_clear_errors
    def materialize(self, commit: str | None, target: Path) -> None:
        """Make the visible files of ``target`` exactly the tree of ``commit`` (None = empty)."""
        wanted: dict[str, bytes] = {}
        with self._repo() as repo:
            tree = self._tree_of(repo, ObjectID(commit.encode())) if commit else None
            if tree is not None:
                for entry in iter_tree_contents(repo.object_store, tree):
                    if entry.path is None or entry.sha is None:
                        continue
                    blob = repo[entry.sha]
                    assert isinstance(blob, Blob)
                    wanted[entry.path.decode("utf-8", "surrogateescape")] = blob.as_raw_string()
        for name in visible_files(target):
            if name not in wanted:
                nofollow.unlink(target, name)
        for name, data in wanted.items():
            try:
                current: bytes | None = nofollow.read_bytes(target, name)
            except (FileNotFoundError, nofollow.UnsafePath):
                current = None
            if current != data:
                nofollow.write_bytes(target, name, data)

    @_clear_errors
    def diff(self, run_id: str | None) -> str:
        """The unified diff a run made."""
        record = self.find(run_id)
        with self._repo() as repo:
            old = self._tree_of(repo, ObjectID(record.parent.encode())) if record.parent else None
            new = self._tree_of(repo, ObjectID(record.commit.encode()))
            buffer = io.BytesIO()
            write_tree_diff(buffer, repo.object_store, old, new)
        return buffer.getvalue().decode("utf-8", "replace")

    def changes(self, run_id: str | None) -> list[FileChange]:
        """Each file a run added, changed or removed, with its bytes before and after."""
        record = self.find(run_id)
        out: list[FileChange] = []
        for name in [*record.added, *record.changed, *record.removed]:
            before = self.file_at(record.parent, name) if record.parent else None
            after = self.file_at(record.commit, name)
            out.append(FileChange(path=name, before=before, after=after))
        return out

    @_clear_errors
    def file_at(self, commit: str, name: str) -> bytes | None:
        """A file's bytes at a commit (to recover a deleted topic file)."""
        with self._repo() as repo:
            tree_id = self._tree_of(repo, ObjectID(commit.encode()))
            tree = repo[tree_id] if tree_id else None
            if not isinstance(tree, Tree):
                return None
            for entry in iter_tree_contents(repo.object_store, tree.id):
                if entry.path == name.encode() and entry.sha is not None:
                    blob = repo[entry.sha]
                    return blob.as_raw_string() if isinstance(blob, Blob) else None
        return None


    # --- retention -----------------------------------------------------------------------
    @_clear_errors
    def prune(self, before: datetime) -> tuple[int, int]:
        """Drop the runs recorded before ``before``; returns (runs removed, bytes reclaimed).

        The memory is never lost: the newest dropped commit's tree becomes a parentless
        baseline (an ``edit`` record, hidden from ``runs()``) under the oldest kept run, so
        undoing any kept run still restores its exact "before". ``edit`` records are not
        counted as runs. Crash-safe: new commits are written first, the ref moves atomically
        (compare-and-swap) last, and only then are unreachable loose objects deleted; a kill
        at any point leaves a valid history, and the next prune deletes what a kill left.
        Call under the consolidation lock (it refuses while an interrupted apply is pending).
        """
        if not self.exists():
            return 0, 0
        if journal_path(self.memory_dir).exists():
            raise HistoryError("an interrupted memory apply is pending; not pruning history")
        with self._repo() as repo:
            removed = self._drop_older_than(repo, before.timestamp())
            freed = self._delete_unreachable(repo)
        self._tighten()
        if removed or freed:
            logger.info("pruned %d memory runs before %s (%d bytes) in %s",
                        removed, before.isoformat(), freed, self.git_dir)
        return removed, freed

    def _drop_older_than(self, repo: Repo, cutoff: float) -> int:
        """Rewrite the chain without the commits older than ``cutoff``; the runs dropped."""
        head = repo.refs[REF] if REF in repo.refs else None
        if head is None:
            return 0
        chain: list[Commit] = []  # newest first, along first parents
        current: ObjectID | None = head
        while current is not None:
            commit = self._commit(repo, current)
            chain.append(commit)
            current = commit.parents[0] if commit.parents else None
        split = next((i for i, c in enumerate(chain) if _moment(c) < cutoff), None)
        if split is None:
            return 0
        kept, dropped = chain[:split], chain[split:]
        newest_dropped = dropped[0]
        if len(dropped) == 1 and not newest_dropped.parents and not _is_run(newest_dropped):
            return 0  # only the baseline (or a first hand-edit snapshot) is that old
        runs = sum(1 for c in dropped if _is_run(c))
        at = datetime.fromtimestamp(_moment(newest_dropped), UTC)
        added, _, _ = self._diff(repo, None, ObjectID(newest_dropped.tree))
        baseline = RunRecord(
            run_id=new_run_id(at), at=at, source="edit", added=added,
            summary=f"baseline: the memory as of {at.isoformat()}; older runs were pruned",
        )
        parent = self._make_commit(repo, ObjectID(newest_dropped.tree), None, baseline)
        for commit in reversed(kept):
            copy = commit.copy()
            assert isinstance(copy, Commit)
            copy.parents = [parent]
            repo.object_store.add_object(copy)
            parent = copy.id
        if not repo.refs.set_if_equals(REF, head, parent):
            raise HistoryError("memory history moved while pruning")
        return runs

    def _delete_unreachable(self, repo: Repo) -> int:
        """Delete loose objects no ref reaches; the bytes freed on disk.

        Packed objects (only present if someone ran ``git gc`` by hand) are left alone.
        """
        store = repo.object_store
        if not isinstance(store, DiskObjectStore):
            return 0
        reachable = find_reachable_objects(store, repo.refs)
        freed = 0
        objects_dir = self.git_dir / "objects"
        for fan_out in sorted(objects_dir.iterdir()):
            if len(fan_out.name) != 2 or not _HEX.issuperset(fan_out.name):
                continue  # "info", "pack"
            for path in sorted(fan_out.iterdir()):
                sha = ObjectID((fan_out.name + path.name).encode("ascii", "replace"))
                if len(sha) != 40 or not _HEX.issuperset(sha.decode()) or sha in reachable:
                    continue
                try:
                    size = path.stat().st_size
                    store.delete_loose_object(sha)
                except OSError as exc:
                    logger.warning("could not delete unreachable object %s: %s", path, exc)
                    continue
                freed += size
        return freed


def _moment(commit: Commit) -> float:
    """When a commit's run happened (the record's time; the commit time for foreign ones)."""
    record = _parse_record(commit)
    return record.at.timestamp() if record is not None else float(commit.commit_time)


def _is_run(commit: Commit) -> bool:
    """A run ``reverie history`` lists (not a hand-edit snapshot or a foreign commit)."""
    record = _parse_record(commit)
    return record is not None and record.source != "edit"


def _parse_record(commit: Commit) -> RunRecord | None:
    text = commit.message.decode("utf-8", "replace")
    _, _, body = text.partition("\n\n")
    try:
        data = json.loads(body.strip())
        record = RunRecord.model_validate(data)
    except ValueError:
        logger.debug("skipping foreign commit %s", commit.id)
        return None
    parent = commit.parents[0].decode() if commit.parents else None
    return record.model_copy(update={"commit": commit.id.decode(), "parent": parent})

