"""``reverie.server.curate``: the editor's Forget / Pin / Edit / Move of one memory entry.

The use case is ``reverie.services.curation``; this finds the workspace's memory dir, writes
through the server's memory writer (so its after-apply hooks run) and refreshes what the editor
shows afterwards. Refusals are ``UserError``s (the handler answers them as ``RequestFailed``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reverie.errors import UserError
from reverie.lsp.protocol import CurateArgs, CurateResult

if TYPE_CHECKING:
    from reverie.lsp.context import ServerContext, WorkspaceContext


async def curate_entry(ls: ServerContext, tracker: WorkspaceContext,
                       a: CurateArgs) -> dict[str, Any]:
    from reverie.memory.lock import LockBusy
    from reverie.services.curation import curate

    memory_dir = tracker.memory_dir
    try:
        done = await curate(memory_dir, a.action, a.entry, expect=a.expect, new_text=a.new_text,
                            to_file=a.to_file, writer=ls.memory_writer)
    except LockBusy:
        raise UserError("a dream is consolidating this memory right now; try again when it is "
                        "done") from None
    except OSError as exc:
        raise UserError(f"{a.action} failed, memory unchanged: {exc}") from None
    tracker.memory_written([memory_dir / name for name in done.files])
    tracker.lock_changed()
    return CurateResult(
        action=done.action, memory_dir=done.memory_dir, file=done.entry.file,
        line=done.entry.line, text=done.entry.text, new_text=done.new_text,
        to_file=done.to_file, run_id=done.run_id, files=done.files,
        removed_topic=done.removed_topic, message=done.message,
    ).wire()
