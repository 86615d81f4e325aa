"""The editor's review before apply: list the staged change sets, accept all or some, discard.

The use cases are ``reverie.services.review``; this parses arguments and refreshes what the
editor shows once memory changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reverie.lsp.protocol import (
    ApplyReviewArgs,
    DiscardReviewArgs,
    ReviewOutcomeResult,
    ReviewsArgs,
    ReviewsResult,
    StagedReview,
)

if TYPE_CHECKING:
    from reverie.lsp.server import ReverieLanguageServer
    from reverie.lsp.tracking import WorkspaceTracker


async def _tracker(ls: ReverieLanguageServer, workspace: str | None) -> WorkspaceTracker:
    from reverie.lsp.handlers import RequestFailed

    await ls.wait_ready()
    try:
        return ls.tracker_for(workspace)
    except ValueError as exc:
        raise RequestFailed(message=str(exc)) from None


async def reviews(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    import asyncio

    from reverie.lsp.handlers import parse_args
    from reverie.services.review import list_reviews

    a = parse_args(ReviewsArgs, args)
    tracker = await _tracker(ls, a.workspace)
    found = await asyncio.to_thread(list_reviews, tracker.memory_dir,
                                    with_contents=a.with_contents)
    return ReviewsResult(
        memory_dir=str(tracker.memory_dir),
        reviews=[StagedReview.model_validate(r.model_dump()) for r in found],
    ).wire()


async def apply_review(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    from reverie.errors import UserError
    from reverie.lsp.handlers import RequestFailed, parse_args
    from reverie.memory.lock import LockBusy
    from reverie.memory.transaction import TransactionError
    from reverie.services.review import apply_review as apply

    a = parse_args(ApplyReviewArgs, args)
    tracker = await _tracker(ls, a.workspace)
    try:
        outcome = await apply(tracker.memory_dir, a.review_id, a.files)
    except UserError as exc:
        raise RequestFailed(message=str(exc)) from None
    except LockBusy:
        raise RequestFailed(message="a dream is consolidating this memory right now; try "
                            "again when it is done") from None
    except (OSError, TransactionError) as exc:
        raise RequestFailed(message=f"accepting failed, memory unchanged: {exc}") from None
    tracker.memory_written([tracker.memory_dir / name for name in outcome.accepted])
    tracker.lock_changed()
    return ReviewOutcomeResult.model_validate(outcome.model_dump()).wire()


async def discard_review(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    import asyncio

    from reverie.errors import UserError
    from reverie.lsp.handlers import RequestFailed, parse_args
    from reverie.services.review import discard_review as discard

    a = parse_args(DiscardReviewArgs, args)
    tracker = await _tracker(ls, a.workspace)
    try:
        outcome = await asyncio.to_thread(discard, tracker.memory_dir, a.review_id)
    except UserError as exc:
        raise RequestFailed(message=str(exc)) from None
    return ReviewOutcomeResult.model_validate(outcome.model_dump()).wire()
