"""File access below a memory dir that never follows a symbolic link.

A path check followed by a plain ``open(path)`` is a race: between the two, a directory can be
swapped for a symlink and the write lands wherever it points. Here every access walks from the
memory dir one component at a time with directory file descriptors (``openat``-style:
``os.open(name, O_DIRECTORY | O_NOFOLLOW, dir_fd=parent)``), so a component that is (or
becomes) a symlink fails the open instead of being followed, and the final create / rename /
unlink happens relative to the directory descriptor that was checked. Writes are atomic (temp
file created with ``O_EXCL | O_NOFOLLOW`` in the same directory, fsync, rename).

Names are relative POSIX paths (``"topic.md"``, ``"nested/x.md"``) without ``.``/``..`` or
empty parts; anything else is refused. Where the platform has no ``dir_fd`` support (Windows)
the same checks run with ``lstat`` on each component (not race-free there; see
``docs/security.md``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from reverie.errors import ReverieError
from reverie.fsutil import atomic_write_bytes

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
#: ``openat`` and friends are available (every POSIX system Reverie runs on)
HAS_DIR_FD = (
    os.open in os.supports_dir_fd
    and os.mkdir in os.supports_dir_fd
    and os.unlink in os.supports_dir_fd
    and os.rename in os.supports_dir_fd
    and _NOFOLLOW != 0
)


class UnsafePath(OSError, ReverieError):
    """A path below the memory dir that is a symlink, not a directory / regular file, or not a
    plain relative name. ``str()`` names the offending path and says what to do."""


def split_name(name: str) -> list[str]:
    """The components of a relative memory path; ``UnsafePath`` for anything else."""
    if not name or "\x00" in name or "\\" in name:
        raise UnsafePath(errno.EINVAL, f"not a plain relative path: {name!r}")
    pure = PurePosixPath(name)
    parts = list(pure.parts)
    if pure.is_absolute() or not parts or any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(errno.EINVAL, f"not a plain relative path: {name!r}")
    if name.split("/") != parts:  # "a//b", "a/./b", trailing "/"
        raise UnsafePath(errno.EINVAL, f"not a plain relative path: {name!r}")
    return parts


def _refused(root: Path, parts: list[str], what: str) -> UnsafePath:
    shown = root.joinpath(*parts) if parts else root
    return UnsafePath(errno.ELOOP, f"{shown} {what}; Reverie never writes or reads through "
                                   "it (replace it with a real directory or file)")


def _open_root(root: Path) -> int:
    try:
        return os.open(root, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refused(root, [], "is a symlink or not a directory") from None
        raise


@contextlib.contextmanager
def open_dir(root: Path, parts: list[str], *, create: bool = False) -> Iterator[int]:
    """A descriptor of ``root/parts...`` reached without following a symlink (created 0700 when
    ``create``). Closed on exit."""
    fd = _open_root(root)
    try:
        for depth, part in enumerate(parts):
            flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
            try:
                child = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=fd)
                try:
                    child = os.open(part, flags, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise _refused(root, parts[: depth + 1],
                                       "is a symlink or not a directory") from None
                    raise
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refused(root, parts[: depth + 1],
                                   "is a symlink or not a directory") from None
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _check_components(root: Path, parts: list[str], *, create: bool) -> Path:
    """The ``lstat`` walk used where ``dir_fd`` is missing: refuse symlinked components."""
    current = root
    if current.is_symlink() or (current.exists() and not current.is_dir()):
        raise _refused(root, [], "is a symlink or not a directory")
    for depth, part in enumerate(parts):
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            if not create:
                raise
            current.mkdir(mode=0o700, exist_ok=True)
            info = os.lstat(current)
        if not stat.S_ISDIR(info.st_mode):
            raise _refused(root, parts[: depth + 1], "is a symlink or not a directory")
    return current


def read_bytes(root: Path, name: str) -> bytes:
    """The bytes of the regular file ``root/name`` (``UnsafePath`` for a symlink, FIFO, device
    or directory anywhere on the way; ``FileNotFoundError`` when it is missing)."""
    parts = split_name(name)
    flags = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC | _BINARY
    if HAS_DIR_FD:
        with open_dir(root, parts[:-1]) as dfd:
            try:
                fd = os.open(parts[-1], flags, dir_fd=dfd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refused(root, parts, "is a symlink") from None
                raise
    else:
        parent = _check_components(root, parts[:-1], create=False)
        if (parent / parts[-1]).is_symlink():
            raise _refused(root, parts, "is a symlink")
        fd = os.open(parent / parts[-1], flags)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise _refused(root, parts, "is not a regular file")
        return handle.read()


def read_file(path: Path) -> bytes:
    """The bytes of the regular file ``path`` when its last component is neither a symlink nor
    a FIFO / device (``UnsafePath``); for callers that have a path rather than a root."""
    flags = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC | _BINARY
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(errno.ELOOP, f"{path} is a symlink; Reverie never reads through "
                                          "it") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UnsafePath(errno.EINVAL, f"{path} is not a regular file")
        return handle.read()


def kind(root: Path, name: str) -> str | None:
    """What ``root/name`` is, without following links: ``"file"``, ``"dir"``, ``"symlink"``,
    ``"other"``, or None when missing. A symlinked or non-directory parent is ``"symlink"``."""
    parts = split_name(name)
    current = root
    for part in parts[:-1]:
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return None
        if not stat.S_ISDIR(info.st_mode):
            return "symlink"
    try:
        info = os.lstat(root.joinpath(*parts))
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "symlink"
    if stat.S_ISREG(info.st_mode):
        return "file"
    if stat.S_ISDIR(info.st_mode):
        return "dir"
    return "other"


def write_bytes(root: Path, name: str, data: bytes, mode: int = 0o600) -> None:
    """Atomically replace ``root/name`` with ``data``; missing parents are created 0700.

    The temp file is created ``O_EXCL | O_NOFOLLOW`` and renamed within the directory
    descriptor that was reached without following links, so a parent swapped for a symlink
    at any moment makes the write fail, never land elsewhere. A symlink *at* ``name`` is
    refused (it is never written through).
    """
    parts = split_name(name)
    leaf = parts[-1]
    tmp = f".{leaf[:200]}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY
    if not HAS_DIR_FD:
        parent = _check_components(root, parts[:-1], create=True)
        if (parent / leaf).is_symlink():
            raise _refused(root, parts, "is a symlink")
        atomic_write_bytes(parent / leaf, data, mode)
        return
    with open_dir(root, parts[:-1], create=True) as dfd:
        try:
            info = os.stat(leaf, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise _refused(root, parts, "is a symlink or not a regular file")
        fd = os.open(tmp, flags, mode, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.chmod(handle.fileno(), mode)  # fchmod
                os.fsync(handle.fileno())
            os.rename(tmp, leaf, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
        with contextlib.suppress(OSError):
            os.fsync(dfd)


def unlink(root: Path, name: str) -> bool:
    """Remove the file ``root/name`` (a symlink there is removed, never followed); then remove
    parents left empty, up to ``root``. False when it was already gone."""
    parts = split_name(name)
    if not HAS_DIR_FD:
        parent = _check_components(root, parts[:-1], create=False)
        try:
            (parent / parts[-1]).unlink()
        except FileNotFoundError:
            return False
        for depth in range(len(parts) - 1, 0, -1):
            try:
                root.joinpath(*parts[:depth]).rmdir()
            except OSError:
                break
        return True
    try:
        with open_dir(root, parts[:-1]) as dfd:
            try:
                info = os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            if stat.S_ISDIR(info.st_mode):
                raise _refused(root, parts, "is a directory")
            os.unlink(parts[-1], dir_fd=dfd)
            with contextlib.suppress(OSError):
                os.fsync(dfd)
    except FileNotFoundError:
        return False
    for depth in range(len(parts) - 1, 0, -1):
        try:
            with open_dir(root, parts[: depth - 1]) as dfd:
                os.rmdir(parts[depth - 1], dir_fd=dfd)
        except OSError:
            break
    return True
