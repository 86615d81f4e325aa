"""Where things live inside a memory dir: the one leaf every memory module (and the agents'
ledger) takes its names from, so knowing a path never means importing the lock or the store."""

from __future__ import annotations

from pathlib import Path

#: the memory's index, the file agents load (everything else is a topic file)
INDEX_NAME = "MEMORY.md"
#: the consolidation lock (its content is the holder's PID; its mtime "last consolidated at")
LOCK_NAME = ".consolidate-lock"
#: Reverie's bookkeeping inside a memory dir (a dot-directory: never part of the memory)
STATE_DIR_NAME = ".reverie"


def state_dir(memory_dir: Path) -> Path:
    """Reverie's bookkeeping inside a memory dir."""
    return memory_dir / STATE_DIR_NAME


def staging_root(memory_dir: Path) -> Path:
    """Where transactions stage their private copies (``staging/<txid>``)."""
    return state_dir(memory_dir) / "staging"


def journal_path(memory_dir: Path) -> Path:
    """The apply journal: its atomic write is a transaction's commit point."""
    return state_dir(memory_dir) / "journal.json"


def history_git_dir(memory_dir: Path) -> Path:
    """The memory's git history (``git log -p`` reads it)."""
    return state_dir(memory_dir) / "history.git"


__all__ = [
    "INDEX_NAME",
    "LOCK_NAME",
    "STATE_DIR_NAME",
    "history_git_dir",
    "journal_path",
    "staging_root",
    "state_dir",
]
