"""The working tree of a workspace, read for one check: what is at a path, a file's text (with
the signature the check cache keeps), the project's own files. Bounded and never raising: an
unreadable file, a FIFO, a symlink loop, a huge file or folder is an answer, not an error.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path, PurePosixPath
from typing import Literal

from reverie.anchors.cache import FileSig, signature

#: folders that hold what a build or an installer made, not the project's own files
GENERATED_DIRS = frozenset("""
.git node_modules .venv venv __pycache__ .mypy_cache .pytest_cache .ruff_cache .tox .nox dist
build out target .next .nuxt .svelte-kit coverage .turbo .cache .gradle .idea .vscode vendor
.terraform site-packages .parcel-cache""".split())
#: a file larger than this is not read for symbols, keys or scripts
MAX_FILE_BYTES = 2_000_000
#: at most this many files are listed for a symbol scan (a huge monorepo is scanned in part)
MAX_LISTED_FILES = 60_000

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
PathState = Literal["file", "dir", "missing", "loop", "unreadable", "outside", "special"]


class WorkingFiles:
    """The files of one workspace (reads cached for the check)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._root_text = str(root)
        self._text: dict[str, str | None] = {}
        self._sigs: dict[str, FileSig] = {}  # what each file read was, for the check cache
        self._listed: list[str] | None = None
        self._by_name: dict[str, list[str]] | None = None
        self._truncated = False

    def state(self, rel: str) -> PathState:
        """What is at ``rel`` in the working tree (never follows a path out of the workspace)."""
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            return "outside"
        try:  # (plain strings: a check stats every path anchor)
            info = os.stat(os.path.join(self._root_text, rel.rstrip("/")))
        except (FileNotFoundError, NotADirectoryError):
            return "missing"
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "loop"
            return "unreadable"
        if stat.S_ISDIR(info.st_mode):
            return "dir"
        if stat.S_ISREG(info.st_mode):
            return "file"
        return "special"

    def read_text(self, rel: str) -> str | None:
        """A workspace file's text (None when missing, unreadable, binary, too large or not a
        regular file: a FIFO is opened without blocking and never read)."""
        if rel in self._text:
            return self._text[rel]
        text: str | None = None
        parts = PurePosixPath(rel).parts
        if rel and not rel.startswith("/") and ".." not in parts:
            started = time.time_ns()
            try:
                fd = os.open(os.path.join(self._root_text, rel), os.O_RDONLY | _NONBLOCK)
            except OSError:
                fd = -1
            if fd >= 0:
                try:
                    info = os.fstat(fd)
                    if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES:
                        chunks: list[bytes] = []
                        size = 0
                        while size <= info.st_size:
                            chunk = os.read(fd, info.st_size + 1 - size)
                            if not chunk:
                                break
                            chunks.append(chunk)
                            size += len(chunk)
                        data = b"".join(chunks)
                        if b"\0" not in data[:8192]:
                            text = decode(data)
                            self._sigs[rel] = signature(info, data, started)
                except OSError:
                    text = None
                finally:
                    os.close(fd)
        self._text[rel] = text
        return text

    def signature(self, rel: str) -> FileSig | None:
        """The signature of ``rel`` as ``read_text`` read it (None when it gave no text)."""
        self.read_text(rel)
        return self._sigs.get(rel)

    def files(self) -> list[str]:
        """The workspace's own files on disk (tracked or not; generated and dot folders left
        out), at most ``MAX_LISTED_FILES``. A directory walk: faster than reading a large git
        index, and it sees a file not added yet."""
        if self._listed is None:
            self._listed = self._walk()
        return self._listed

    @property
    def files_truncated(self) -> bool:
        """The walk stopped at ``MAX_LISTED_FILES``: a name not found may be in a file not
        read (a huge monorepo), so "not found" establishes nothing."""
        self.files()
        return self._truncated

    def _walk(self) -> list[str]:
        found: list[str] = []
        seen: set[tuple[int, int]] = set()
        stack: list[tuple[str, str]] = [(str(self.root), "")]  # (folder, its relative prefix)
        self._truncated = False
        while stack and len(found) < MAX_LISTED_FILES:
            folder, prefix = stack.pop()
            try:
                info = os.stat(folder)
                if (info.st_dev, info.st_ino) in seen:
                    continue  # a symlink loop or a folder linked twice
                seen.add((info.st_dev, info.st_ino))
                with os.scandir(folder) as entries:
                    listed = list(entries)
            except OSError:
                continue
            for entry in listed:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in GENERATED_DIRS and not entry.name.startswith("."):
                            stack.append((entry.path, f"{prefix}{entry.name}/"))
                    elif entry.is_file(follow_symlinks=False):
                        found.append(prefix + entry.name)
                except OSError:
                    continue
        self._truncated = bool(stack) or len(found) > MAX_LISTED_FILES
        return found[:MAX_LISTED_FILES]

    def find_suffix(self, rel: str) -> list[str]:
        """Files whose path ends with ``/rel`` (``install.md`` -> ``docs/install.md``)."""
        if self._by_name is None:
            self._by_name = {}
            for path in self.files():
                self._by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
        tail = "/" + rel
        return [p for p in self._by_name.get(rel.rsplit("/", 1)[-1], []) if p.endswith(tail)]


def decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")
