"""What earlier checks established, kept between checks so an unchanged fact costs a ``stat``.

Two kinds of entries, in ``<project data>/check-cache.json`` (never in the workspace):

- **valid anchors**, each with the files its verdict read (a symbol's file, a script's
  manifest) and their signature at the time: device, inode, size, mtime and ctime in
  nanoseconds. While every file still has that signature the anchor is valid without reading
  anything. An edit in place always moves the ctime (no program can set it back), so an edit
  is seen even when it keeps the size and the mtime. The one blind spot, an edit within the
  file system's timestamp granularity of the read, is closed as git closes it ("racy git"): a
  file whose mtime or ctime is within ``RACY_NS`` of the read gets its content hash recorded
  too, and is read and hashed again next time instead of trusted on its signature.
- **history answers** (where a missing path went, which commit removed a script), keyed by
  the HEAD commit they were read at: the history below a commit never changes. Only removals
  are kept; "could not tell" answers (a budget run out, a shallow clone) are searched again.

Stale and unverifiable verdicts are never cached: what the working tree says now is always
read again; only the history behind a stale reason is reused. A missing, corrupt or foreign
file is an empty cache, rebuilt silently; the file is replaced atomically.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reverie.anchors.model import Anchor
from reverie.fsutil import atomic_write_text
from reverie.memory.store import TopicMeta

logger = logging.getLogger(__name__)

CACHE_VERSION = 1
#: a file changed this recently (or in the future) is "racy": its signature alone is not proof
#: (more than the coarsest timestamps in use: FAT's 2 s)
RACY_NS = 3_000_000_000
#: anchors kept at most (the oldest entries go first)
MAX_ENTRIES = 20_000

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True)
class FileSig:
    """A file as a check read it: ``stat`` fields, and the content hash when it was racy."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    digest: str = ""  # set only for a racy file

    def to_json(self) -> list[Any]:
        return [self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns, self.digest]

    @classmethod
    def from_json(cls, raw: Any) -> FileSig | None:
        if not isinstance(raw, list) or len(raw) != 6 or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in raw[:5]) or \
                not isinstance(raw[5], str):
            return None
        return cls(raw[0], raw[1], raw[2], raw[3], raw[4], raw[5])

    def same_stat(self, info: os.stat_result) -> bool:
        return (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns) == (
            info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def signature(info: os.stat_result, data: bytes, started_ns: int) -> FileSig:
    """The signature of ``data`` read from a file whose ``fstat`` (taken before the read) is
    ``info``; ``started_ns``: the wall clock before the ``fstat``."""
    racy = max(info.st_mtime_ns, info.st_ctime_ns) > started_ns - RACY_NS
    return FileSig(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                   digest(data) if racy else "")


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def anchor_key(anchor: Anchor) -> str:
    return json.dumps([anchor.kind, anchor.value, anchor.where or ""], ensure_ascii=False)


class CheckCache:
    """The cache of one workspace's checks (see the module doc). ``path`` None: a cache that
    remembers for this check only."""

    def __init__(self, path: Path | None, root: Path, *, whole_memory: bool = False) -> None:
        """``whole_memory``: this check reads every topic file, so the parsed topics it did
        not use are old versions and are dropped on save (a partial check keeps them)."""
        self.path = path
        self.whole_memory = whole_memory
        self.root = root
        self._root_text = str(root)
        self.valid: dict[str, dict[str, FileSig]] = {}
        self.head = ""
        self.history: dict[str, list[str | None]] = {}
        self.topics: dict[str, dict[str, Any]] = {}
        self._topics_used: set[str] = set()
        self._changed = False
        if path is not None:
            self._load(path)

    # --- the file --------------------------------------------------------------------------
    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            logger.debug("check cache %s unreadable, rebuilt: %s", path, exc)
            self._changed = True
            return
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or \
                data.get("root") != self._root_text:
            self._changed = True
            return
        valid = data.get("valid")
        for key, deps in (valid.items() if isinstance(valid, dict) else ()):
            if not isinstance(deps, dict) or not deps:
                continue
            sigs = {rel: FileSig.from_json(raw) for rel, raw in deps.items()}
            if all(isinstance(rel, str) and sig is not None and rel and not rel.startswith("/")
                   and ".." not in rel.split("/") for rel, sig in sigs.items()):
                self.valid[key] = {rel: sig for rel, sig in sigs.items() if sig is not None}
        topics = data.get("topics")
        for key, entry in (topics.items() if isinstance(topics, dict) else ()):
            if isinstance(entry, dict) and isinstance(entry.get("meta"), dict) and \
                    isinstance(entry.get("start"), int):
                self.topics[key] = entry
        head, history = data.get("head"), data.get("history")
        if isinstance(head, str) and isinstance(history, dict):
            self.head = head
            self.history = {k: v for k, v in history.items() if isinstance(v, list)
                            and len(v) == 2 and isinstance(v[0], str)
                            and (v[1] is None or isinstance(v[1], str))}

    def save(self) -> None:
        """Write the cache if anything changed (atomically; a failure only costs speed)."""
        if self.whole_memory and len(self.topics) > 2 * len(self._topics_used) + 100:
            self._changed = True  # topic files rewritten many times since: drop the old ones
        if self.path is None or not self._changed:
            return
        keep = list(self.valid.items())[-MAX_ENTRIES:]
        data = {"version": CACHE_VERSION, "root": self._root_text,
                "valid": {key: {rel: sig.to_json() for rel, sig in deps.items()}
                          for key, deps in keep},
                "head": self.head, "history": self.history,
                "topics": {k: v for k, v in self.topics.items()
                           if k in self._topics_used or not self.whole_memory}}
        try:
            atomic_write_text(self.path, json.dumps(data, ensure_ascii=False,
                                                    separators=(",", ":")))
            self._changed = False
        except OSError as exc:
            logger.debug("cannot write the check cache %s: %s", self.path, exc)

    # --- valid anchors ---------------------------------------------------------------------
    def holds(self, anchor: Anchor) -> bool:
        """``anchor`` was found valid and none of the files that showed it changed since."""
        key = anchor_key(anchor)
        deps = self.valid.get(key)
        if deps is None:
            return False
        fresh: dict[str, FileSig] = {}
        for rel, sig in deps.items():
            now = self._unchanged(rel, sig)
            if now is None:
                del self.valid[key]
                self._changed = True
                return False
            fresh[rel] = now
        if fresh != deps:
            self.valid[key] = fresh
            self._changed = True
        return True

    def _unchanged(self, rel: str, sig: FileSig) -> FileSig | None:
        """The file's signature now when it provably has the content ``sig`` saw, else None."""
        path = os.path.join(self._root_text, rel)
        try:
            info = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        if not sig.digest:
            return sig if sig.same_stat(info) else None
        if info.st_size != sig.size:
            return None
        started = time.time_ns()  # racy when recorded: the content decides
        try:
            fd = os.open(path, os.O_RDONLY | _NONBLOCK)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size != sig.size:
                return None
            chunks: list[bytes] = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if digest(data) != sig.digest:
            return None
        return signature(info, data, started)

    def remember(self, anchor: Anchor, deps: dict[str, FileSig]) -> None:
        key = anchor_key(anchor)
        if self.valid.get(key) != deps:
            self.valid.pop(key, None)  # re-inserted last: the newest survive the cap
            self.valid[key] = deps
            self._changed = True

    def forget(self, anchor: Anchor) -> None:
        if self.valid.pop(anchor_key(anchor), None) is not None:
            self._changed = True

    # --- topic files ----------------------------------------------------------------------
    def topic(self, content: str) -> tuple[TopicMeta, int] | None:
        """The front matter a topic file with this content hash parsed to, and the line its
        body starts on."""
        entry = self.topics.get(content)
        if entry is None:
            return None
        try:
            meta = TopicMeta.model_validate(entry["meta"])
        except ValueError:
            del self.topics[content]
            return None
        self._topics_used.add(content)
        return meta, entry["start"]

    def remember_topic(self, content: str, meta: TopicMeta, start: int) -> None:
        """Keep a parsed front matter when it survives the round trip through JSON exactly
        (a YAML date, an integer key would not: such a file is parsed every time)."""
        try:
            dumped = json.loads(json.dumps(meta.model_dump()))
            same = TopicMeta.model_validate(dumped) == meta
        except (TypeError, ValueError):
            return
        self._topics_used.add(content)
        if same:
            self.topics[content] = {"meta": dumped, "start": start}
            self._changed = True

    # --- history answers -------------------------------------------------------------------
    def removal(self, head: str, key: str) -> tuple[str, str | None] | None:
        """(commit, renamed to) recorded for ``key`` at commit ``head``."""
        if not head or head != self.head:
            return None
        hit = self.history.get(key)
        return (str(hit[0]), hit[1]) if hit else None

    def remember_removal(self, head: str, key: str, commit: str,
                         renamed_to: str | None) -> None:
        if not head:
            return
        if head != self.head:
            self.head, self.history = head, {}
        if self.history.get(key) != [commit, renamed_to]:
            self.history[key] = [commit, renamed_to]
            self._changed = True
