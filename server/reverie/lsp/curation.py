"""``reverie.server.curate``: the editor's Forget / Pin / Edit / Move of one memory entry.

The use case is ``reverie.services.curation``; this only parses the arguments, finds the
workspace's memory dir and refreshes what the editor shows afterwards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reverie.lsp.protocol import CurateArgs, CurateResult

if TYPE_CHECKING:
    from reverie.lsp.server import ReverieLanguageServer


async def curate_entry(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    from reverie.errors import UserError
    from reverie.lsp.handlers import RequestFailed as _Refused
    from reverie.lsp.handlers import parse_args
    from reverie.memory.lock import LockBusy
    from reverie.memory.transaction import TransactionError
    from reverie.services.curation import curate

    a = parse_args(CurateArgs, args)
    await ls.wait_ready()
    try:
        tracker = ls.tracker_for(a.workspace)
    except ValueError as exc:
        raise _Refused(message=str(exc)) from None
    memory_dir = tracker.memory_dir
    try:
        done = await curate(memory_dir, a.action, a.entry, expect=a.expect,
                            new_text=a.new_text, to_file=a.to_file)
    except UserError as exc:
        raise _Refused(message=str(exc)) from None
    except LockBusy:
        raise _Refused(message="a dream is consolidating this memory right now; try again "
                       "when it is done") from None
    except (OSError, TransactionError) as exc:
        raise _Refused(message=f"{a.action} failed, memory unchanged: {exc}") from None
    tracker.memory_written([memory_dir / name for name in done.files])
    tracker.lock_changed()
    return CurateResult(
        action=done.action, memory_dir=done.memory_dir, file=done.entry.file,
        line=done.entry.line, text=done.entry.text, new_text=done.new_text,
        to_file=done.to_file, run_id=done.run_id, files=done.files,
        removed_topic=done.removed_topic, message=done.message,
    ).wire()
