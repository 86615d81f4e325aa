"""What several connections share: one inter-process lock, and who uses each shared file.

Connections of different workspaces can write the same file (Codex's personal
``~/.codex/hooks.json``), while each workspace keeps its own ledger. Without a count, the first
disconnect removed the hooks every other workspace still relied on; without a lock, two connects
at once read the same file and one lost the other's change (13 of 20 concurrent runs lost a
block). ``connection_lock`` serialises every read-modify-write of agents' files and ledgers on
this machine (portalocker: flock / LockFileEx); ``SharedFiles`` records which connections use a
shared file, so only the last one takes Reverie's part out of it, and the file's text before the
first of them changed it, so the last one can put it back byte for byte (each connection's own
ledger only knows the text it found, which already held the first one's part).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from reverie.config import Settings
from reverie.fsutil import atomic_write_text, ensure_private_dir

__all__ = ["SharedFiles", "connection_lock"]

LOCK_NAME = "connections.lock"
REGISTRY_NAME = "shared-files.json"
ORIGINALS_NAME = "shared-originals.json"


@contextlib.contextmanager
def connection_lock(settings: Settings, timeout: float = 60.0) -> Iterator[None]:
    """Hold the machine-wide lock around a connect, disconnect or refresh of connections."""
    import portalocker

    directory = ensure_private_dir(settings.data_dir)
    path = directory / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "r+b") as handle:
        portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE)
        try:
            yield
        finally:
            portalocker.unlock(handle)


class SharedFiles:
    """``{file path: [connection ids]}`` in Reverie's data dir; call under ``connection_lock``."""

    def __init__(self, settings: Settings) -> None:
        self._path = settings.data_dir / REGISTRY_NAME
        self._originals = settings.data_dir / ORIGINALS_NAME

    def _load(self) -> dict[str, list[str]]:
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): [str(u) for u in v] for k, v in data.items() if isinstance(v, list)}

    def _save(self, data: dict[str, list[str]]) -> None:
        ensure_private_dir(self._path.parent)
        atomic_write_text(self._path, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def users(self, path: Path) -> set[str]:
        return set(self._load().get(str(path), []))

    def add(self, path: Path, user: str) -> None:
        data = self._load()
        users = data.setdefault(str(path), [])
        if user not in users:
            users.append(user)
            self._save(data)

    def remove(self, path: Path, user: str) -> None:
        data = self._load()
        users = [u for u in data.get(str(path), []) if u != user]
        if users:
            data[str(path)] = users
        else:
            data.pop(str(path), None)
        self._save(data)

    # -- the text before the first connection changed a shared file --------------------------

    def file_users(self, path: Path) -> set[str]:
        """Every connection using ``path`` or an entry in it."""
        prefix = f"{path}#"
        return {u for key, users in self._load().items()
                if key == str(path) or key.startswith(prefix) for u in users}

    def _load_originals(self) -> dict[str, str | None]:
        try:
            data = json.loads(self._originals.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): v for k, v in data.items() if v is None or isinstance(v, str)}

    def original(self, path: Path) -> tuple[bool, str | None]:
        """``(known, text)``: the text ``path`` had before the first connection wrote to it
        (None: it did not exist); ``known`` is False when nothing was recorded."""
        data = self._load_originals()
        return (str(path) in data, data.get(str(path)))

    def keep_original(self, path: Path, text: str | None) -> None:
        """Record ``text`` for ``path`` unless one is recorded already (the first wins)."""
        data = self._load_originals()
        if str(path) not in data:
            data[str(path)] = text
            self._save_originals(data)

    def forget_original(self, path: Path) -> None:
        data = self._load_originals()
        if str(path) in data:
            del data[str(path)]
            self._save_originals(data)

    def _save_originals(self, data: dict[str, str | None]) -> None:
        if not data:
            self._originals.unlink(missing_ok=True)
            return
        ensure_private_dir(self._originals.parent)
        atomic_write_text(self._originals, json.dumps(data, indent=2, sort_keys=True) + "\n")
