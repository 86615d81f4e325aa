"""When the nightly cycle should run: pure functions the language server calls, plus the file
that remembers the last run.

Rules: the cycle runs once per local day at ``sleep_time``. If that time passed while the editor
was closed (a previous day's run is recorded but not today's), it runs once as soon as possible
(catch-up) and then resumes the normal schedule; missing several nights still gives one run. A
project that has never run waits for the next slot rather than starting at first launch.
"""

from __future__ import annotations

import json
import logging
from datetime import date as Date
from datetime import datetime, time, timedelta
from pathlib import Path

from pydantic import BaseModel, ValidationError

from reverie.config import ProjectPaths
from reverie.fsutil import atomic_write_text

logger = logging.getLogger(__name__)


def parse_sleep_time(sleep_time: str) -> time:
    """``"HH:MM"`` (24-hour) to a ``time``; raises ``ValueError`` otherwise."""
    hours, sep, minutes = sleep_time.partition(":")
    if not sep or len(hours) != 2 or len(minutes) != 2:
        raise ValueError(f"sleep time must be HH:MM, got {sleep_time!r}")
    return time(int(hours), int(minutes))


def _slot(day: Date, at: time, now: datetime) -> datetime:
    return datetime.combine(day, at, tzinfo=now.tzinfo)


def next_run_at(now: datetime, sleep_time: str, last_run_date: Date | None) -> datetime:
    """The moment the next cycle should start (``now`` itself when a catch-up is due)."""
    at = parse_sleep_time(sleep_time)
    today = now.date()
    today_slot = _slot(today, at, now)
    if last_run_date is not None and last_run_date >= today:
        return _slot(today + timedelta(days=1), at, now)
    if now < today_slot:
        return today_slot
    if last_run_date is None:
        return _slot(today + timedelta(days=1), at, now)
    return now


def catch_up_due(now: datetime, sleep_time: str, last_run_date: Date | None) -> bool:
    """True when today's slot passed without a run and an earlier run is on record."""
    return next_run_at(now, sleep_time, last_run_date) <= now


def seconds_until_next_run(now: datetime, sleep_time: str, last_run_date: Date | None) -> float:
    return max(0.0, (next_run_at(now, sleep_time, last_run_date) - now).total_seconds())


class SleepState(BaseModel):
    """What is kept between runs, per project: ``<project data dir>/sleep-state.json``."""

    last_run_date: Date | None = None
    last_run_at: datetime | None = None
    last_run_id: str | None = None
    last_error: str | None = None


def state_path(paths: ProjectPaths) -> Path:
    return paths.root / "sleep-state.json"


def load_state(paths: ProjectPaths) -> SleepState:
    """The saved state; a missing or unreadable file counts as "never ran" (and is logged)."""
    path = state_path(paths)
    try:
        return SleepState.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return SleepState()
    except (OSError, ValueError, ValidationError) as exc:
        logger.warning("ignoring unreadable sleep state %s: %s", path, exc)
        return SleepState()


def save_state(paths: ProjectPaths, state: SleepState) -> None:
    atomic_write_text(state_path(paths), json.dumps(state.model_dump(mode="json"), indent=2))
