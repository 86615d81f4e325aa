"""An agent proposes a change to one memory entry; the person decides.

The MCP server's ``propose_memory_change`` lands here. The change (forget, edit, pin, unpin or
move one entry, as ``reverie.services.curation`` names them) is carried out on a shadow copy of
the memory dir and kept as a pending change set of source ``agent`` beside the dreams' (see
``reverie.services.review``): the live memory, which every agent loads, does not change. The
person sees it in the editor (Review) or with ``reverie review``, and accepts it
(``reverie apply ID``: one recorded, undoable run, like their own curation) or discards it.

An agent's words are data: the reason and any new text are redacted, bounded to one line, and
shown to the person; nothing an agent sends becomes memory without that person's accept.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
from datetime import UTC, datetime
from pathlib import Path

from reverie.errors import UserError
from reverie.hazards import hazard_of
from reverie.services.curation import (
    Action,
    apply_to,
    check_args,
    find_entry,
    summary_of,
)
from reverie.services.review import (
    Review,
    ReviewChange,
    file_sha,
    file_text,
    list_reviews,
    publish_review,
    reviews_root,
    seed_shadow,
)

#: proposals waiting at once; past it an agent is told to let the person catch up
MAX_PENDING = 20
MAX_REASON_CHARS = 300


def _clean_reason(reason: str) -> str:
    from reverie.redact import redact

    folded = " ".join(reason.split())
    if not folded:
        raise UserError("say why: the reason is shown to the user, who decides")
    if len(folded) > MAX_REASON_CHARS:
        folded = folded[: MAX_REASON_CHARS - 1].rstrip() + "…"
    return redact(folded)[0]


def _stage(memory_dir: Path, staging: Path, action: Action, query: str, new_text: str | None,
           to_file: str | None) -> tuple[str, list[ReviewChange]]:
    """The change carried out on a shadow in ``staging``: its summary and the files it
    changes (reasons filled in by the caller)."""
    from reverie.memory.repair import new_blocking_problems
    from reverie.memory.store import check_index, visible_files

    entry = find_entry(memory_dir, query)
    new_text, to_file = check_args(memory_dir, entry, action, new_text, to_file)
    shadow = staging / "memory"
    seed_shadow(memory_dir, shadow)
    before = check_index(shadow)
    apply_to(shadow, entry, action, new_text, to_file)
    problems = new_blocking_problems(shadow, before)
    if problems:
        p = problems[0]
        raise UserError(f"that would break the memory: {p.file.name}:{p.line + 1} {p.message}")
    names = sorted(set(visible_files(memory_dir)) | set(visible_files(shadow)))
    changes = []
    for name in names:
        old, new = file_text(memory_dir / name), file_text(shadow / name)
        if old == new:
            continue
        changes.append(ReviewChange(
            path=name, action="add" if old is None else "remove" if new is None else "change",
            base=file_sha(memory_dir / name), reason=""))
    return summary_of(entry, action, to_file), changes


async def propose_change(memory_dir: Path, action: Action, query: str, *, reason: str,
                         agent: str | None = None, session_id: str | None = None,
                         new_text: str | None = None, to_file: str | None = None) -> Review:
    """Stage ``action`` on the entry ``query`` names as a proposal; the live memory is not
    touched. Raises ``UserError`` for what the agent must fix (the message says what)."""
    why = _clean_reason(reason)
    pending = await asyncio.to_thread(list_reviews, memory_dir)
    if sum(r.source == "agent" for r in pending) >= MAX_PENDING:
        raise UserError(f"{MAX_PENDING} proposals already wait for the user; let them decide "
                        "before proposing more")
    review_id = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-p{secrets.token_hex(3)}"
    staging = reviews_root(memory_dir) / f".staging-{review_id}"
    try:
        summary, changes = await asyncio.to_thread(
            _stage, memory_dir, staging, action, query, new_text, to_file)
        if not changes:
            raise UserError("that change would leave the memory as it is")
        who = agent or "an agent"
        # memory is loaded by every agent: a proposed rule that runs code from the network,
        # deletes outside the project or sends credentials is flagged for a careful read
        hazard = hazard_of(new_text) if action == "edit" and new_text else None
        for change in changes:
            change.reason = f"{who}: {why}" + (f" (careful: the new text {hazard})"
                                               if hazard else "")
            change.sessions = [session_id] if session_id else []
        review = Review(
            review_id=review_id, memory_dir=str(memory_dir), created_at=datetime.now(UTC),
            source="agent", summary=summary, proposed_by=agent, hazard=hazard,
            sessions=[session_id] if session_id else [], changes=changes)
        await asyncio.to_thread(publish_review, staging, review)
    except BaseException:
        await asyncio.to_thread(shutil.rmtree, staging, True)
        raise
    return review
