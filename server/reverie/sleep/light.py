"""Light sleep: pick the sessions worth reviewing tonight.

The review date is the day being reviewed: by default yesterday, as a cycle that runs in the
night looks back on the day before. A session qualifies when its transcript last changed inside
the review window: from the midnight that starts the review date (local time) up to five minutes
ago, so a session the agent is still writing is left for the next night, and work done after
midnight before the cycle ran is not missed. For an older review date the window also closes two
midnights later, so re-running an old night is reproducible.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import date as Date
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Protocol, TypeVar

logger = logging.getLogger(__name__)

IDLE_GRACE = timedelta(minutes=5)


class SessionLike(Protocol):
    """What light sleep needs from a discovered session (``SessionRef`` fits)."""

    @property
    def path(self) -> Path: ...

    @property
    def updated_at(self) -> datetime | None: ...

    @property
    def parent_session_id(self) -> str | None: ...


S = TypeVar("S", bound=SessionLike)


def review_window(review_date: Date, now: datetime) -> tuple[datetime, datetime]:
    """``[start, end]`` of the window, in ``now``'s timezone (``now`` must be aware)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    tz = now.tzinfo
    start = datetime.combine(review_date, time(0), tzinfo=tz)
    end_of_run_day = datetime.combine(review_date + timedelta(days=2), time(0), tzinfo=tz)
    end = min(now - IDLE_GRACE, end_of_run_day)
    return start, end


def last_changed(ref: SessionLike) -> datetime | None:
    """When the session last changed: what discovery recorded (the file's mtime, or for one of
    many Aider runs in a file, when that run ended), else the file's mtime now."""
    if ref.updated_at is not None:
        return ref.updated_at
    try:
        return datetime.fromtimestamp(ref.path.stat().st_mtime).astimezone()
    except OSError:
        return None


def default_review_date(now: datetime) -> Date:
    """The day a cycle run at ``now`` reviews when none is given: the day before."""
    return now.date() - timedelta(days=1)


def select_sessions(
    refs: Iterable[S], review_date: Date, now: datetime, *, include_subagents: bool = False
) -> list[S]:
    """The sessions whose transcript changed inside the window, oldest first.

    Sub-agent sessions are left out by default: their work is part of the parent's story.
    """
    start, end = review_window(review_date, now)
    picked: list[tuple[datetime, S]] = []
    for ref in refs:
        if ref.parent_session_id and not include_subagents:
            continue
        changed = last_changed(ref)
        if changed is None:
            continue
        if start <= changed <= end:
            picked.append((changed, ref))
    picked.sort(key=lambda pair: pair[0])
    logger.debug("light sleep: %d sessions in %s .. %s", len(picked), start, end)
    return [ref for _, ref in picked]

