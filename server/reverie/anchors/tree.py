"""A read-only, bounded view of a workspace: its files and, when it is a git repository, what
HEAD and its history say about them (through dulwich, no ``git`` binary).

Everything here answers "could not tell" rather than raise: an unreadable file, a symlink loop,
a shallow or empty repository, a huge file. Reads are cached for one check, so 200 facts that
name the same ``package.json`` read it once.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from reverie.anchors.files import GENERATED_DIRS as GENERATED_DIRS
from reverie.anchors.files import MAX_FILE_BYTES as MAX_FILE_BYTES
from reverie.anchors.files import MAX_LISTED_FILES as MAX_LISTED_FILES
from reverie.anchors.files import PathState as PathState
from reverie.anchors.files import WorkingFiles
from reverie.anchors.files import decode as _decode

logger = logging.getLogger(__name__)

#: commits looked at when searching history (first parent, newest first)
MAX_HISTORY_COMMITS = 400
HISTORY_BUDGET_SECONDS = 1.5


@dataclass(frozen=True)
class Removal:
    """Where history says a path or a piece of a file went."""

    commit: str  # short id of the commit that removed or renamed it; "" when not committed yet
    renamed_to: str | None = None


@dataclass(frozen=True)
class HistoryAnswer:
    """The outcome of a history search: a removal, or why none could be established."""

    removal: Removal | None = None
    unknown: str = ""  # why it could not be established ("" with a removal)


class WorkTree(WorkingFiles):
    """One workspace, read for one check: its files, and its git history."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._blobs: dict[tuple[Any, str], bytes | None] = {}
        self.repo: Any = None
        self.git_error = ""
        self.prefix = ""  # the workspace's path inside the repository ("" at its root)
        self._head_tree: Any = None
        self._ignore: Any = None
        self._index_paths: dict[str, bytes] | None = None
        self._deletions: tuple[dict[str, tuple[str, Any, Any]], str] | None = None
        self._versions: dict[str, list[str]] = {}
        self._head_paths: set[str] | None = None
        self._past_names: dict[str, str] = {}
        self._past_scanned: set[str] = set()
        self._history_spent = 0.0
        self._trees: dict[bytes, Any] = {}
        self._walked: list[tuple[str, Any, Any, bool]] = []  # the first-parent walk so far
        self._walk_next: Any = ...  # the next commit to read (None: the walk's end)
        self._shallow: set[Any] = set()
        self._open_repo()

    # --- git -----------------------------------------------------------------------------
    def _open_repo(self) -> None:
        if not self.root.is_dir():
            self.git_error = "the workspace folder does not exist"
            return
        try:
            from dulwich.errors import NotGitRepository
            from dulwich.repo import Repo
        except ImportError:  # pragma: no cover - dulwich is a dependency
            self.git_error = "git support is not installed"
            return
        try:
            repo = Repo.discover(str(self.root))
        except NotGitRepository:
            self.git_error = "not a git repository"
            return
        except (OSError, ValueError, KeyError) as exc:
            self.git_error = f"the git repository cannot be read ({exc})"
            return
        self.repo = repo
        try:
            rel = os.path.relpath(os.path.realpath(self.root), os.path.realpath(repo.path))
            self.prefix = "" if rel == "." else PurePosixPath(Path(rel).as_posix()).as_posix()
        except ValueError:
            self.prefix = ""
        try:
            head = repo.head()
            self._head_tree = getattr(repo[head], "tree", None)
        except Exception as exc:  # no commit yet (an unborn branch), or a corrupt store
            logger.debug("cannot read HEAD of %s: %s", repo.path, exc)
            self._head_tree = None

    def close(self) -> None:
        """Release the repository's open pack files (idempotent)."""
        if self.repo is not None:
            try:
                self.repo.close()
            except Exception:
                logger.debug("closing the repository failed", exc_info=True)

    def __enter__(self) -> WorkTree:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def is_git(self) -> bool:
        return self.repo is not None

    @property
    def has_commits(self) -> bool:
        return self._head_tree is not None

    @property
    def head_id(self) -> str:
        """HEAD's commit id ("" without git or commits): what history answers are keyed by."""
        try:
            return self.repo.head().decode("ascii") if self._head_tree is not None else ""
        except Exception:
            return ""

    def _repo_path(self, rel: str) -> bytes:
        full = f"{self.prefix}/{rel}" if self.prefix else rel
        return full.encode("utf-8", "surrogateescape")

    def _from_repo_path(self, raw: bytes) -> str | None:
        text = raw.decode("utf-8", "surrogateescape")
        if not self.prefix:
            return text
        if text.startswith(self.prefix + "/"):
            return text[len(self.prefix) + 1:]
        return None

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        """The path is git-ignored or inside a generated folder (``node_modules``, ``dist``)."""
        parts = PurePosixPath(rel).parts
        if any(part in GENERATED_DIRS for part in parts[:-1]) or (
                is_dir and parts and parts[-1] in GENERATED_DIRS):
            return True
        if self.repo is None:
            return False
        try:
            if self._ignore is None:
                from dulwich.ignore import IgnoreFilterManager

                self._ignore = IgnoreFilterManager.from_repo(self.repo)
            path = self._repo_path(rel).decode("utf-8", "surrogateescape")
            return bool(self._ignore.is_ignored(path + ("/" if is_dir else "")))
        except Exception:  # a broken ignore file must not break the check
            return False

    def index_paths(self) -> dict[str, bytes]:
        """Workspace-relative path -> blob id of what the git index tracks."""
        if self._index_paths is None:
            found: dict[str, bytes] = {}
            if self.repo is not None:
                try:
                    index = self.repo.open_index()
                    for raw in index.paths():
                        rel = self._from_repo_path(raw)
                        if rel is not None:
                            entry = index[raw]
                            sha = getattr(entry, "sha", None)
                            found[rel] = sha if isinstance(sha, bytes) else b""
                except Exception as exc:  # no index yet, or a corrupt one
                    logger.debug("cannot read the git index: %s", exc)
            self._index_paths = found
        return self._index_paths

    def head_blob(self, rel: str) -> bytes | None:
        """The content of ``rel`` at HEAD, or None."""
        return self._blob_at(self._head_tree, rel)

    def _blob_at(self, tree: Any, rel: str) -> bytes | None:
        if tree is None or self.repo is None:
            return None
        if (tree, rel) not in self._blobs:  # many anchors of one manifest: the same history
            self._blobs[(tree, rel)] = self._read_blob(tree, rel)
        return self._blobs[(tree, rel)]

    def _read_blob(self, tree: Any, rel: str) -> bytes | None:
        try:
            from dulwich.object_store import tree_lookup_path

            mode, sha = tree_lookup_path(self._object, tree, self._repo_path(rel))
            if stat.S_ISDIR(mode):
                return None
            blob = self.repo[sha]
            data = blob.as_raw_string()
            return data if isinstance(data, bytes) and len(data) <= MAX_FILE_BYTES else None
        except Exception:  # a missing or corrupt object
            return None

    def _exists_at(self, tree: Any, rel: str) -> bool:
        if tree is None or self.repo is None:
            return False
        try:
            from dulwich.object_store import tree_lookup_path

            tree_lookup_path(self._object, tree, self._repo_path(rel))
            return True
        except Exception:
            return False

    def _object(self, sha: bytes) -> Any:
        """A git object; trees are kept for the check (every search walks the same ones)."""
        found = self._trees.get(sha)
        if found is None:
            found = self.repo[sha]
            if getattr(found, "type_name", b"") == b"tree" and len(self._trees) < 50_000:
                self._trees[sha] = found
        return found

    def _first_parent_commits(self) -> Iterator[tuple[str, Any, Any, bool]]:
        """(short id, tree, parent tree, parent missing because the clone is shallow) from
        HEAD backwards along first parents, bounded in count and time. The commits read are
        kept: the next search of the check replays them before reading further."""
        if self.repo is None or self._head_tree is None:
            return
        if self._walk_next is ...:
            try:
                self._walk_next, self._shallow = self.repo.head(), self.repo.get_shallow()
            except Exception:
                self._walk_next = None
        started = time.monotonic()  # one budget for all the history searches of a check
        try:
            for index in range(MAX_HISTORY_COMMITS):
                if self._history_spent + time.monotonic() - started > HISTORY_BUDGET_SECONDS:
                    return
                if index == len(self._walked):
                    step = None if self._walk_next is None else self._history_step(
                        self._walk_next, self._shallow)
                    if step is None:
                        self._walk_next = None
                        return
                    self._walked.append(step[0])
                    self._walk_next = step[1]
                yield self._walked[index]
        finally:
            self._history_spent += time.monotonic() - started

    def _history_step(self, sha: Any, shallow: set[Any]) -> tuple[tuple[str, Any, Any, bool],
                                                                   Any] | None:
        """One commit of the first-parent walk and the next commit's id (None at the end)."""
        try:
            commit = self.repo[sha]
        except Exception:
            return None
        parents = list(commit.parents)
        parent_tree: Any = None
        cut = sha in shallow
        if parents and not cut:
            try:
                parent_tree = self.repo[parents[0]].tree
            except Exception:
                cut = True
        item = (sha.decode("ascii")[:7], commit.tree, parent_tree, cut)
        return item, (parents[0] if parents and not cut else None)

    def history_limit_reason(self) -> str:
        if self.repo is None:
            return self.git_error or "not a git repository"
        if self._head_tree is None:
            return "the git repository has no commits yet"
        return ""

    def _deletion_index(self) -> tuple[dict[str, tuple[str, Any, Any]], str]:
        """Path -> (short id, parent tree, tree) of the newest commit that deleted it, over the
        first-parent history searched once per check; and why the search stopped short
        ("" when it reached the root commit)."""
        if self._deletions is not None:
            return self._deletions
        deleted: dict[str, tuple[str, Any, Any]] = {}
        stopped = "the history searched is longer than Reverie looks (recent commits only)"
        try:
            from dulwich.diff_tree import CHANGE_DELETE, CHANGE_RENAME, tree_changes

            store = self.repo.object_store
            for short, tree, parent_tree, cut in self._first_parent_commits():
                if parent_tree is None:
                    stopped = ("a shallow clone: older history is not here" if cut else "")
                    break
                for change in tree_changes(store, parent_tree, tree):
                    if change.type in (CHANGE_DELETE, CHANGE_RENAME) and change.old is not None:
                        rel = self._from_repo_path(change.old.path)
                        if rel is not None:
                            deleted.setdefault(rel, (short, parent_tree, tree))
        except Exception as exc:  # a corrupt object: what was found so far stands
            logger.debug("history search stopped: %s", exc)
            stopped = "the git history cannot be read in full"
        self._deletions = (deleted, stopped)
        return self._deletions

    def deleted_with_suffix(self, rel: str) -> list[str]:
        """Paths history deleted or renamed away that end with ``/rel``, and are gone now."""
        if self.repo is None or self._head_tree is None:
            return []
        deleted, _ = self._deletion_index()
        tail = "/" + rel
        found = {p for p in deleted if p.endswith(tail)}
        found |= {p for p in self.head_paths() if p.endswith(tail)}  # deleted, not committed
        return sorted(p for p in found if self.state(p) == "missing")

    def head_paths(self) -> set[str]:
        """Every file path of HEAD's tree (read once, when a lookup needs it)."""
        if self._head_paths is None:
            paths: set[str] = set()
            try:
                for entry in self.repo.object_store.iter_tree_contents(self._head_tree):
                    rel = self._from_repo_path(entry.path)
                    if rel is not None:
                        paths.add(rel)
            except Exception as exc:
                logger.debug("cannot list HEAD: %s", exc)
            self._head_paths = paths
        return self._head_paths

    def path_removal(self, rel: str) -> HistoryAnswer:
        """Where ``rel`` (missing from the working tree) went, according to git."""
        limit = self.history_limit_reason()
        if limit:
            return HistoryAnswer(unknown=limit)
        if self._exists_at(self._head_tree, rel):
            renamed = self._staged_rename(rel)
            return HistoryAnswer(Removal(commit="", renamed_to=renamed))
        deleted, stopped = self._deletion_index()
        hit = deleted.get(rel)
        if hit is None:
            inside = [v for k, v in deleted.items() if k.startswith(rel + "/")]
            if inside:
                hit = inside[0]  # a folder: the newest commit that emptied part of it
                for candidate in inside:
                    if self._exists_at(candidate[1], rel) and \
                            not self._exists_at(candidate[2], rel):
                        hit = candidate
                        break
        if hit is not None:
            short, parent_tree, tree = hit
            return HistoryAnswer(Removal(commit=short,
                                         renamed_to=self._renamed_in(parent_tree, tree, rel)))
        if stopped:
            return HistoryAnswer(unknown=stopped)
        return HistoryAnswer(unknown=f"`{rel}` is not in this branch's history "
                                     "(another branch or checkout?)")

    def content_removal(self, rel: str, present: Callable[[str], bool]) -> HistoryAnswer:
        """The commit after which ``present`` stopped holding for ``rel``'s content."""
        limit = self.history_limit_reason()
        if limit:
            return HistoryAnswer(unknown=limit)
        head = self.head_blob(rel)
        if head is not None and present(_decode(head)):
            return HistoryAnswer(Removal(commit=""))
        newer = ""
        shallow = False
        previous: bytes | None = None
        for short, tree, parent_tree, cut in self._first_parent_commits():
            blob = self._blob_at(tree, rel)
            if blob is not None and blob != previous and present(_decode(blob)):
                return HistoryAnswer(Removal(commit=newer or short))
            previous = blob
            newer = short
            shallow = shallow or cut
            if parent_tree is None and not cut:
                break
        if shallow:
            return HistoryAnswer(unknown="a shallow clone: the history that would show the "
                                         "change is not here")
        return HistoryAnswer(unknown="never seen on this branch (another branch or checkout?)")

    def versions(self, rel: str) -> list[str]:
        """The distinct past contents of ``rel`` along first-parent history, newest first
        (HEAD's included; at most 60): what a manifest or config file used to say."""
        if rel in self._versions:
            return self._versions[rel]
        out: list[str] = []
        seen: set[bytes] = set()
        for _short, tree, _parent, _cut in self._first_parent_commits():
            blob = self._blob_at(tree, rel)
            if blob is not None and blob not in seen:
                seen.add(blob)
                out.append(_decode(blob))
                if len(out) >= 60:
                    break
        self._versions[rel] = out
        return out

    def past_occurrences(self, names: set[str], wanted: Callable[[str], bool]) -> dict[str, str]:
        """Names found in the old content of files history changed or deleted (path of the
        file they were in): what a symbol looked like before it was renamed away."""
        todo = {n for n in names if n not in self._past_scanned}
        if todo and self.repo is not None and self._head_tree is not None:
            import re as _re

            pattern = _re.compile(r"(?<![\w$])(" + "|".join(
                _re.escape(n) for n in sorted(todo, key=len, reverse=True)) + r")(?![\w$])")
            try:
                from dulwich.diff_tree import CHANGE_ADD, tree_changes

                store = self.repo.object_store
                for _short, tree, parent_tree, _cut in self._first_parent_commits():
                    if parent_tree is None:
                        break
                    for change in tree_changes(store, parent_tree, tree):
                        if change.type == CHANGE_ADD or change.old is None:
                            continue
                        rel = self._from_repo_path(change.old.path)
                        if rel is None or not wanted(rel):
                            continue
                        blob = self.repo[change.old.sha].as_raw_string()
                        if len(blob) > MAX_FILE_BYTES:
                            continue
                        for name in set(pattern.findall(_decode(blob))):
                            self._past_names.setdefault(name, rel)
            except Exception as exc:
                logger.debug("history scan stopped: %s", exc)
            self._past_scanned |= todo
        return {n: self._past_names[n] for n in names if n in self._past_names}

    def _staged_rename(self, rel: str) -> str | None:
        """A path missing from the working tree whose HEAD content is staged under a new name."""
        head = self.head_blob(rel)
        if head is None:
            return None
        try:
            from dulwich.objects import Blob

            sha = Blob.from_string(head).id
        except Exception:
            return None
        for path, blob in self.index_paths().items():
            if blob == sha and path != rel and not self._exists_at(self._head_tree, path) and \
                    self.state(path) == "file":
                return path
        return None

    def _renamed_in(self, old_tree: Any, new_tree: Any, rel: str) -> str | None:
        try:
            from dulwich.diff_tree import CHANGE_RENAME, RenameDetector, tree_changes

            store = self.repo.object_store
            target = self._repo_path(rel)
            moves: list[tuple[bytes, bytes]] = []
            for change in tree_changes(store, old_tree, new_tree,
                                       rename_detector=RenameDetector(store)):
                if change.type != CHANGE_RENAME or change.old is None or change.new is None:
                    continue
                old, new = change.old.path, change.new.path
                if old == target:
                    renamed = self._from_repo_path(new)
                    return renamed
                if old.startswith(target + b"/"):
                    moves.append((old, new))
            return self._renamed_dir(target, moves)
        except Exception as exc:
            logger.debug("rename detection failed for %s: %s", rel, exc)
            return None

    def _renamed_dir(self, target: bytes, moves: list[tuple[bytes, bytes]]) -> str | None:
        """A folder renamed: the new folder most of its files moved to."""
        counts: dict[bytes, int] = {}
        for old, new in moves:
            tail = old[len(target):]
            if new.endswith(tail):
                counts[new[: len(new) - len(tail)]] = counts.get(new[: len(new) - len(tail)],
                                                                 0) + 1
        if not counts:
            return None
        best = max(counts, key=lambda k: counts[k])
        return self._from_repo_path(best)

