"""Refresh the managed copies of MEMORY.md after the memory changed.

Called at the end of every apply of a memory dir (dream, sleep, undo, and a recovery that
finishes an interrupted apply), so agents that hold a copy (Codex, Gemini CLI) see the same
memory as the ones that import it. Only an existing, intact block is rewritten: a block the
user deleted stays deleted, a damaged one is left alone. Never raises: a refresh must not turn
an applied run into a failed one.
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Callable
from pathlib import Path

from reverie.agents.blocks import BlockError, replace_body
from reverie.agents.changes import linked_parent
from reverie.agents.ledger import load_ledger
from reverie.agents.shared import file_locks
from reverie.agents.specs import refresh_body
from reverie.errors import UserError
from reverie.fsutil import atomic_write_bytes

logger = logging.getLogger(__name__)


#: (memory dir, workspace) -> MEMORY.md as agents should get it, or None for the file as it is
IndexSource = Callable[[Path, Path], str | None]


def refresh_copies(memory_dir: Path, index_for: IndexSource | None = None) -> list[Path]:
    """Rewrite every managed copy of ``memory_dir``'s index; return the files changed.
    ``index_for`` gives the index text to copy (the services pass one that leaves out facts
    the code no longer supports)."""
    try:
        ledger = load_ledger(memory_dir)
    except Exception:  # never let a refresh break an apply
        logger.exception("cannot read the connections of %s", memory_dir)
        return []
    changed: list[Path] = []
    for connection in ledger.connections:
        if connection.mode != "copy":
            continue
        labelled = connection.scope == "personal" and connection.agent != "claude-code"
        workspace = Path(connection.workspace)
        index = None
        if index_for is not None:
            try:
                index = index_for(memory_dir, workspace)
            except Exception:  # the copy as it is, rather than none
                logger.exception("cannot check the memory of %s before copying it", memory_dir)
        body = refresh_body("copy", memory_dir, workspace, labelled, index)
        for record in connection.files:
            if record.role != "memory" or record.kind != "block":
                continue
            path = Path(record.path)
            try:
                with file_locks([path]):  # a connect may be rewriting the same file
                    done = _refresh_one(path, record.block_id, body, workspace)
                if done:
                    changed.append(path)
            except (OSError, UnicodeDecodeError, BlockError, UserError) as exc:
                logger.warning("cannot refresh Reverie's copy in %s: %s", path, exc)
    return changed


def _refresh_one(path: Path, block_id: str, body: str, workspace: Path) -> bool:
    if path.is_symlink() or linked_parent(path, (workspace,)) is not None:
        return False
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return False
    new = replace_body(text, block_id, body, "html")
    if new is None or new == text:
        return False
    atomic_write_bytes(path, new.encode("utf-8"), stat.S_IMODE(path.stat().st_mode))
    return True
