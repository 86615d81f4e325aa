"""The editor's review before apply: list the staged change sets, accept all or some, discard.

The use cases are ``reverie.services.review``; accepting writes through the server's memory
writer and refreshes what the editor shows. Refusals are ``UserError``s.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from reverie.errors import UserError
from reverie.lsp.protocol import (
    ApplyReviewArgs,
    DiscardReviewArgs,
    ReviewOutcomeResult,
    ReviewsArgs,
    ReviewsResult,
    StagedReview,
)

if TYPE_CHECKING:
    from reverie.lsp.context import ServerContext, WorkspaceContext


async def reviews(tracker: WorkspaceContext, a: ReviewsArgs) -> dict[str, Any]:
    from reverie.services.review import list_reviews

    found = await asyncio.to_thread(list_reviews, tracker.memory_dir,
                                    with_contents=a.with_contents)
    return ReviewsResult(
        memory_dir=str(tracker.memory_dir),
        reviews=[StagedReview.model_validate(r.model_dump()) for r in found],
    ).wire()


async def apply_review(ls: ServerContext, tracker: WorkspaceContext,
                       a: ApplyReviewArgs) -> dict[str, Any]:
    from reverie.memory.lock import LockBusy
    from reverie.services.review import apply_review as apply

    try:
        outcome = await apply(tracker.memory_dir, a.review_id, a.files, writer=ls.memory_writer)
    except LockBusy:
        raise UserError("a dream is consolidating this memory right now; try again when it is "
                        "done") from None
    except OSError as exc:
        raise UserError(f"accepting failed, memory unchanged: {exc}") from None
    tracker.memory_written([tracker.memory_dir / name for name in outcome.accepted])
    tracker.lock_changed()
    return ReviewOutcomeResult.model_validate(outcome.model_dump()).wire()


async def discard_review(tracker: WorkspaceContext, a: DiscardReviewArgs) -> dict[str, Any]:
    from reverie.services.review import discard_review as discard

    outcome = await asyncio.to_thread(discard, tracker.memory_dir, a.review_id)
    return ReviewOutcomeResult.model_validate(outcome.model_dump()).wire()
