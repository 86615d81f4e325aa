"""Scheduling and light-sleep selection: pure functions over an explicit clock."""

from __future__ import annotations

import os
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import BaseModel

from reverie.config import ProjectPaths, Settings
from reverie.sleep.light import default_review_date, review_window, select_sessions
from reverie.sleep.schedule import (
    SleepState,
    catch_up_due,
    load_state,
    next_run_at,
    save_state,
    state_path,
)

TZ = timezone(timedelta(hours=2))


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=TZ)


def test_before_the_slot_runs_at_todays_slot() -> None:
    assert next_run_at(at(10, 1, 30), "03:00", date(2026, 11, 9)) == at(10, 3)


def test_already_ran_today_waits_for_tomorrow() -> None:
    assert next_run_at(at(10, 4), "03:00", date(2026, 11, 10)) == at(11, 3)
    assert not catch_up_due(at(10, 4), "03:00", date(2026, 11, 10))


def test_missed_slot_catches_up_once_even_after_several_nights() -> None:
    now = at(10, 9, 15)
    assert next_run_at(now, "03:00", date(2026, 11, 6)) == now
    assert catch_up_due(now, "03:00", date(2026, 11, 6))
    # once it ran today, the next run is tomorrow's slot: one catch-up, not one per missed night
    assert next_run_at(now, "03:00", now.date()) == at(11, 3)


def test_never_ran_waits_for_the_next_slot() -> None:
    assert next_run_at(at(10, 9), "03:00", None) == at(11, 3)
    assert next_run_at(at(10, 2), "03:00", None) == at(10, 3)
    assert not catch_up_due(at(10, 9), "03:00", None)


def test_bad_sleep_time_is_an_error() -> None:
    with pytest.raises(ValueError):
        next_run_at(at(10, 1), "3am", None)


def test_state_round_trips_and_bad_file_means_never_ran(tmp_path: Path) -> None:
    paths = ProjectPaths(Settings(), tmp_path)
    assert load_state(paths).last_run_date is None
    save_state(paths, SleepState(last_run_date=date(2026, 11, 10), last_run_id="abc"))
    assert load_state(paths).last_run_date == date(2026, 11, 10)
    assert oct(state_path(paths).stat().st_mode & 0o777) == "0o600"
    state_path(paths).write_text("{not json")
    assert load_state(paths) == SleepState()


class Ref(BaseModel):
    session_id: str
    path: Path
    updated_at: datetime | None = None
    parent_session_id: str | None = None


def _touch(path: Path, when: datetime) -> Path:
    path.write_text("x")
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


def test_window_starts_at_the_midnight_before_and_ends_five_minutes_ago() -> None:
    now = at(10, 3)
    assert default_review_date(now) == at(9, 0).date()  # a night's run reviews the day before
    start, end = review_window(default_review_date(now), now)
    assert start == at(9, 0)
    assert end == now - timedelta(minutes=5)


def test_light_sleep_picks_changed_idle_sessions(tmp_path: Path) -> None:
    now = datetime(2026, 11, 10, 3, 0).astimezone()
    local = now.tzinfo
    refs = [
        Ref(session_id="old", path=_touch(tmp_path / "old", now - timedelta(days=2))),
        Ref(
            session_id="yesterday",
            path=_touch(tmp_path / "y", datetime(2026, 11, 9, 0, 5, tzinfo=local)),
        ),
        Ref(session_id="tonight", path=_touch(tmp_path / "t", now - timedelta(minutes=30))),
        Ref(session_id="active", path=_touch(tmp_path / "a", now - timedelta(minutes=2))),
        Ref(
            session_id="sub",
            parent_session_id="tonight",
            path=_touch(tmp_path / "s", now - timedelta(minutes=40)),
        ),
        Ref(session_id="gone", path=tmp_path / "missing"),
    ]
    reviewed = default_review_date(now)
    picked = [r.session_id for r in select_sessions(refs, reviewed, now)]
    assert picked == ["yesterday", "tonight"]
    with_subs = select_sessions(refs, reviewed, now, include_subagents=True)
    assert [r.session_id for r in with_subs] == ["yesterday", "sub", "tonight"]


def test_past_review_date_window_is_closed_two_midnights_later(tmp_path: Path) -> None:
    """Reviewing 9 November again: that day and the small hours before its night's run (the
    10th), never what came after (the 11th) or before (the 8th)."""
    now = datetime(2026, 11, 20, 12, 0).astimezone()
    local = now.tzinfo
    before = _touch(tmp_path / "before", datetime(2026, 11, 8, 23, 0, tzinfo=local))
    inside = _touch(tmp_path / "in", datetime(2026, 11, 10, 22, 0, tzinfo=local))
    after = _touch(tmp_path / "after", datetime(2026, 11, 11, 1, 0, tzinfo=local))
    refs = [Ref(session_id="before", path=before), Ref(session_id="in", path=inside),
            Ref(session_id="after", path=after)]
    assert [r.session_id for r in select_sessions(refs, date(2026, 11, 9), now)] == ["in"]
