"""The permission gate every tool call passes: which paths a job may read and write.

A gate is built per job from allowed read roots and at most one write target (one file or one
directory). A path is checked *after* it is made absolute (relative to ``base_dir``) and fully
resolved (symlinks, ``..``), so a symlink inside an allowed directory that points outside it is
denied. NUL bytes, over-long paths, device files and other non-regular files, and files over
``max_bytes`` are denied too.

``path_map`` (real path -> staged path) lets a job show the model real paths while every read
and write lands in a staging copy: paths (and the allow-lists) under a real key are translated
to the staged location before resolution, and ``display`` turns a staged path back into the real
one for anything the model sees.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from reverie.errors import ReverieError
from reverie.memory.names import name_problem

DEFAULT_MAX_BYTES = 2 * 1024 * 1024
MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255
#: new files one job may create in its write directory (a model once wrote 3,000 in a turn)
MAX_NEW_FILES = 50

Access = Literal["read", "write", "list"]


class PathDenied(ReverieError):
    """A tool tried to touch a path its job does not allow. ``str()`` is safe to show the model."""

    def __init__(self, path: str, access: Access, reason: str) -> None:
        super().__init__(f"{access} denied for {path!r}: {reason}")
        self.path = path
        self.access = access
        self.reason = reason


@dataclass(frozen=True)
class Denial:
    """One refused tool call, kept in the loop result and sent as a ``denied`` event."""

    tool: str
    path: str
    reason: str


def _case_twin(path: Path) -> str | None:
    """An entry beside ``path`` whose name differs from its name only in case."""
    try:
        siblings = os.listdir(path.parent)
    except OSError:
        return None
    folded = path.name.casefold()
    return next((s for s in siblings if s != path.name and s.casefold() == folded), None)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class PathGate:
    """Allow-lists for one job. All checks return the physical path the tool must use."""

    def __init__(
        self,
        read_roots: list[Path],
        write_file: Path | None = None,
        write_dir: Path | None = None,
        base_dir: Path | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        path_map: Mapping[Path, Path] | None = None,
    ) -> None:
        if write_file is not None and write_dir is not None:
            raise ValueError("a gate allows one write target: a file or a directory, not both")
        self.max_bytes = max_bytes
        self.base_dir = Path(os.path.abspath(base_dir or Path.cwd()))
        # real -> staged, both made absolute; the resolved form of each real key too, so a
        # real directory reached through a symlink still maps
        self._map: list[tuple[Path, Path]] = []
        for real, staged in (path_map or {}).items():
            real_abs = Path(os.path.abspath(real))
            staged_abs = Path(os.path.abspath(staged)).resolve()
            self._map.append((real_abs, staged_abs))
            if real_abs.resolve() != real_abs:
                self._map.append((real_abs.resolve(), staged_abs))
        self._map.sort(key=lambda pair: len(pair[0].parts), reverse=True)
        self.read_roots = [self._physical(Path(r)).resolve() for r in read_roots]
        self.write_file = self._physical(write_file).resolve() if write_file else None
        self.write_dir = self._physical(write_dir).resolve() if write_dir else None
        #: files this job created in its write directory (shared with ``with_path_map`` twins)
        self._created: set[Path] = set()

    def __repr__(self) -> str:
        return (f"PathGate(read_roots={[str(r) for r in self.read_roots]}, "
                f"write_file={self.write_file}, write_dir={self.write_dir})")

    def with_path_map(self, path_map: Mapping[Path, Path]) -> PathGate:
        """The same allow-lists, seen through an extra real -> staged mapping."""
        merged = {real: staged for real, staged in self._map}
        merged.update(path_map)
        gate = PathGate([], base_dir=self.base_dir, max_bytes=self.max_bytes, path_map=merged)
        gate.read_roots = [gate._physical(r).resolve() for r in self.read_roots]
        gate.write_file = gate._physical(self.write_file).resolve() if self.write_file else None
        gate.write_dir = gate._physical(self.write_dir).resolve() if self.write_dir else None
        gate._created = self._created
        return gate

    # ---- mapping -------------------------------------------------------------------------------
    def _physical(self, path: Path) -> Path:
        """Absolute, lexically normalised, then moved from a real prefix to its staged twin."""
        absolute = Path(os.path.normpath(path if path.is_absolute() else self.base_dir / path))
        for real, staged in self._map:
            if _within(absolute, real):
                return staged.joinpath(*absolute.parts[len(real.parts):])
        return absolute

    def display(self, path: Path) -> str:
        """How the model sees ``path``: staged locations shown as their real paths."""
        for real, staged in self._map:
            if _within(path, staged):
                return str(real.joinpath(*path.parts[len(staged.parts):]))
        return str(path)

    # ---- checks --------------------------------------------------------------------------------
    def _resolve(self, raw: str, access: Access) -> Path:
        if not isinstance(raw, str) or raw == "":
            raise PathDenied(str(raw), access, "empty path")
        if "\x00" in raw:
            raise PathDenied(raw.replace("\x00", "\\0"), access, "NUL byte in path")
        if len(raw) > MAX_PATH_CHARS:
            raise PathDenied(raw[:80] + "…", access, "path too long")
        try:
            encoded_parts = [p.encode("utf-8", "surrogateescape") for p in Path(raw).parts]
        except UnicodeEncodeError:
            raise PathDenied(raw, access, "path is not valid text") from None
        if any(len(part) > MAX_NAME_BYTES for part in encoded_parts):
            raise PathDenied(raw[:80] + "…", access, "a path component is too long")
        self._check_live(Path(raw), raw, access)
        try:
            return self._physical(Path(raw)).resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            raise PathDenied(raw, access, f"cannot resolve ({type(exc).__name__})") from None

    def _check_live(self, path: Path, raw: str, access: Access) -> None:
        """A path under a mapped (real) dir is checked against the *live* dir too: the staged
        copy has no symlinks, but the apply writes the live one, so a component that is a
        symlink (or not a directory) there is refused here already."""
        absolute = Path(os.path.normpath(path if path.is_absolute() else self.base_dir / path))
        for real, _staged in self._map:
            if not _within(absolute, real):
                continue
            current = real
            for part in absolute.parts[len(real.parts):]:
                current = current / part
                try:
                    info = os.lstat(current)
                except FileNotFoundError:
                    return
                except OSError as exc:
                    reason = exc.strerror or type(exc).__name__
                    raise PathDenied(raw, access, f"cannot access ({reason})") from None
                if stat.S_ISLNK(info.st_mode):
                    raise PathDenied(raw, access, "a symlink in the live directory")
                if current != absolute and not stat.S_ISDIR(info.st_mode):
                    raise PathDenied(raw, access, "a parent is not a directory")
            return

    def _may_read(self, path: Path) -> bool:
        if any(_within(path, root) for root in self.read_roots):
            return True
        return self._may_write(path)

    def _may_write(self, path: Path) -> bool:
        if self.write_file is not None and path == self.write_file:
            return True
        if self.write_dir is None:
            return False
        return _within(path, self.write_dir) and path != self.write_dir

    def check_read(self, raw: str) -> Path:
        """The physical regular file to read for ``raw``; ``PathDenied`` otherwise."""
        return self._verify_read(self._resolve(raw, "read"), raw)

    def verify_read(self, physical: Path) -> Path:
        """``check_read`` for a physical path a tool found itself (a glob or grep hit)."""
        return self._verify_read(self._resolve_physical(physical, "read"), str(physical))

    def check_list(self, raw: str) -> Path:
        """The physical directory to list or search for ``raw``."""
        return self._verify_list(self._resolve(raw, "list"), raw)

    def check_write(self, raw: str) -> Path:
        """The physical file to (over)write for ``raw``: the job's write file or a regular file
        (or a new one) inside its write directory."""
        path = self._resolve(raw, "write")
        if not self._may_write(path):
            raise PathDenied(raw, "write", "this job may not write there")
        info = self._stat(path, raw, "write")
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise PathDenied(raw, "write", "not a regular file")
        if self.write_dir is not None and path != self.write_file:
            self._check_new_name(path, raw, exists=info is not None)
        return path

    def _check_new_name(self, path: Path, raw: str, *, exists: bool) -> None:
        """The apply's path rules and the per-job limits, per call: a name the apply would
        refuse fails this call only, never the whole run at its end."""
        assert self.write_dir is not None
        name = path.relative_to(self.write_dir).as_posix()
        problem = name_problem(name)
        if problem is not None:
            raise PathDenied(raw, "write", problem)
        if exists:
            return
        twin = _case_twin(path)
        if twin is not None:
            raise PathDenied(raw, "write", f"differs from the existing {twin!r} only in case")
        if path not in self._created and len(self._created) >= MAX_NEW_FILES:
            raise PathDenied(raw, "write", f"more than {MAX_NEW_FILES} new files in one run")
        self._created.add(path)

    def _resolve_physical(self, physical: Path, access: Access) -> Path:
        try:
            return physical.resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            reason = f"cannot resolve ({type(exc).__name__})"
            raise PathDenied(str(physical), access, reason) from None

    def _verify_read(self, path: Path, raw: str) -> Path:
        if not self._may_read(path):
            raise PathDenied(raw, "read", "outside the directories this job may read")
        info = self._stat(path, raw, "read")
        if info is None:
            raise PathDenied(raw, "read", "no such file")
        if not stat.S_ISREG(info.st_mode):
            raise PathDenied(raw, "read", "not a regular file")
        if info.st_size > self.max_bytes:
            raise PathDenied(raw, "read", f"file larger than {self.max_bytes} bytes")
        return path

    def _verify_list(self, path: Path, raw: str) -> Path:
        if not self._may_read(path):
            raise PathDenied(raw, "list", "outside the directories this job may read")
        info = self._stat(path, raw, "list")
        if info is None:
            raise PathDenied(raw, "list", "no such directory")
        if not stat.S_ISDIR(info.st_mode):
            raise PathDenied(raw, "list", "not a directory")
        return path

    def allows_read(self, path: Path) -> bool:
        """For listings: would a read of this (physical) path pass?"""
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):
            return False
        return self._may_read(resolved)

    @staticmethod
    def _stat(path: Path, raw: str, access: Access) -> os.stat_result | None:
        try:
            return path.stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise PathDenied(raw, access, f"cannot access ({reason})") from None
