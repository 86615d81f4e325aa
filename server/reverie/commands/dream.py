"""Consolidate recent sessions into the workspace's memory dir (gated unless --manual).

``reverie dream [--workspace DIR] [--manual] [--extra TEXT] [--logs] [--review] [--json]``.
``--json`` prints ``{"ran", "skipped_reason", "sessions_reviewed", "files_touched", "turns",
"tokens_in", "tokens_out", "duration_ms", "run_id", "memory_dir"}``. Exit code 0 when the dream
ran or was skipped, 1 when it failed (the memory dir is then unchanged).

``--review`` stages the change set instead of applying it (printed as diffs with each change's
reason and sessions; with ``--json`` the result gains ``review``), for ``reverie apply RUN`` /
``reverie discard RUN``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path

from reverie.cli import (
    add_workspace_argument,
    fail,
    job_event_logger,
    load_settings,
    resolve_workspace,
)

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--manual", action="store_true",
                        help="run now, bypassing the time, throttle and session gates")
    parser.add_argument("--extra", default="", metavar="TEXT",
                        help="extra context for this dream (what to focus on)")
    parser.add_argument("--logs", action="store_true",
                        help="daily-log mode: consolidate unconsolidated log entries")
    parser.add_argument("--review", action="store_true",
                        help="stage the changes for review instead of applying them (then "
                             "reverie apply RUN / reverie discard RUN)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _review(args: argparse.Namespace) -> int:
    from reverie.services.review import format_review, list_reviews, stage_dream

    if args.logs:
        return fail("a daily-log dream cannot be reviewed (it consumes the log entries)")
    settings = load_settings()
    workspace = resolve_workspace(args)
    review, result = asyncio.run(stage_dream(settings, workspace, manual=args.manual,
                                             extra=args.extra,
                                             events=job_event_logger(logger)))
    error = getattr(result, "error", None)
    if review is not None:  # with the texts, for the diff
        review = next(r for r in list_reviews(Path(review.memory_dir), with_contents=True)
                      if r.review_id == review.review_id)
    if args.json:
        payload = result.as_json()  # type: ignore[attr-defined]
        payload["review"] = review.as_json() if review else None
        print(json.dumps(payload, indent=2))
    elif review is not None:
        print(format_review(review))
    elif not error:
        reason = getattr(result, "skipped_reason", None)
        print(f"dream skipped: {reason}" if reason else "nothing to review: the dream changed "
              "nothing")
    return fail(f"dream failed: {error}") if error else 0


def run(args: argparse.Namespace) -> int:
    from reverie.dream.models import DreamRequest
    from reverie.dream.runner import DreamRunner
    from reverie.services.wiring import memory_writer

    if args.review:
        return _review(args)
    settings = load_settings()
    workspace = resolve_workspace(args)
    runner = DreamRunner(settings, job_event_logger(logger), writer=memory_writer())
    request = DreamRequest(workspace=workspace, manual=args.manual, extra=args.extra,
                           logs=args.logs)
    result = asyncio.run(runner.run(request))
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
    elif result.error:
        pass
    elif result.skipped_reason:
        print(f"dream skipped: {result.skipped_reason} (memory dir {result.memory_dir})")
    else:
        print(f"dream {result.run_id}: reviewed {result.sessions_reviewed} sessions, "
              f"touched {len(result.files_touched)} files in {result.memory_dir}")
        for path in result.files_touched:
            print(f"  {path}")
        if result.summary:
            print(result.summary)
    if result.error:
        return fail(f"dream failed: {result.error}")
    return 0
