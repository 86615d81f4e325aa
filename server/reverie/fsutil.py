"""Crash-safe file writing shared by every job: temp file in the same directory, fsync, rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never a mix."""
    if not path.parent.is_dir():
        ensure_private_dir(path.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, mode: int = 0o600) -> None:
    """``atomic_write_bytes`` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort where the OS does not allow it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 for the directories Reverie creates."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):  # ``mkdir(parents=True)`` would ignore ``mode`` here
        directory.mkdir(mode=0o700, exist_ok=True)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
