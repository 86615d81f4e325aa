"""Relative dates become absolute, computed from the source session's time."""

from __future__ import annotations

from datetime import datetime

import pytest

from reverie.memory.dates import normalise_dates

WEDNESDAY = datetime(2026, 11, 25, 15, 30)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fixed the build today.", "Fixed the build on 2026-11-25."),
        ("Since yesterday the tests fail", "Since 2026-11-24 the tests fail"),
        ("yesterday's deploy broke", "the 2026-11-24 deploy broke"),
        ("We chose SQLite last week", "We chose SQLite in the week of 2026-11-16"),
        ("3 days ago the cache broke", "on 2026-11-22 the cache broke"),
        ("two weeks ago", "in the week of 2026-11-09"),
        ("Met on Monday to decide", "Met on Monday 2026-11-23 to decide"),
        ("last Wednesday", "on Wednesday 2026-11-18"),
        ("on Wednesday", "on Wednesday 2026-11-25"),
        ("last month we migrated", "in 2026-10 we migrated"),
        ("deploy tomorrow", "deploy on 2026-11-26"),
    ],
)
def test_relative_dates_become_absolute(text: str, expected: str) -> None:
    assert normalise_dates(text, WEDNESDAY) == expected


def test_code_is_left_alone_and_text_without_dates_is_unchanged() -> None:
    text = "Run `make today` and\n```\necho yesterday\n```\nthen relax"
    assert normalise_dates(text, WEDNESDAY) == text
    assert normalise_dates("Todays and yesterdays are words", WEDNESDAY) == (
        "Todays and yesterdays are words")


def test_idempotent() -> None:
    once = normalise_dates("on Monday and yesterday", WEDNESDAY)
    assert normalise_dates(once, WEDNESDAY) == once
