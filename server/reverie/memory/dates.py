"""Deterministic relative-date normalisation for memory text.

"Yesterday" means nothing a week later. Relative expressions in new memory text become absolute
dates computed from the timestamp of the session the text came from. Inline code and fenced code
blocks are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}
_NUM = r"(?P<n>\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)"
_DAY = r"(?P<day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_PREP = r"(?:(?P<prep>\b(?:as of|on|since|until|till|by|from|before|after|of)\s+))?"


def _iso(day: date) -> str:
    return day.isoformat()


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _number(raw: str) -> int:
    return int(raw) if raw.isdigit() else _NUMBERS[raw.lower()]


def _rules(anchor: date) -> list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]]:
    """(pattern, replacement) pairs; each replacement gets the whole match."""

    def on(day: date) -> Callable[[re.Match[str]], str]:
        def replace(match: re.Match[str]) -> str:
            prep = match.group("prep")
            possessive = match.group("poss")
            if possessive:
                return f"{prep or ''}the {_iso(day)}"
            return f"{prep}{_iso(day)}" if prep else f"on {_iso(day)}"

        return replace

    def days_ago(match: re.Match[str]) -> str:
        return f"on {_iso(anchor - timedelta(days=_number(match['n'])))}"

    def weeks_ago(match: re.Match[str]) -> str:
        start = _monday(anchor - timedelta(weeks=_number(match["n"])))
        return f"in the week of {_iso(start)}"

    def weekday(match: re.Match[str], *, strictly_before: bool) -> str:
        target = _WEEKDAYS.index(match["day"].lower())
        back = (anchor.weekday() - target) % 7
        if back == 0 and strictly_before:
            back = 7
        day = anchor - timedelta(days=back)
        prep = match.group("prep") or "on "
        return f"{prep}{match['day'].capitalize()} {_iso(day)}"

    last_week = _monday(anchor) - timedelta(weeks=1)
    last_month_end = anchor.replace(day=1) - timedelta(days=1)
    poss = r"(?P<poss>'s)?"
    flags = re.IGNORECASE
    return [
        (re.compile(_PREP + r"\btoday\b" + poss, flags), on(anchor)),
        (re.compile(_PREP + r"\b(?:this morning|this afternoon|this evening|tonight)\b" + poss,
                    flags), on(anchor)),
        (re.compile(_PREP + r"\byesterday\b" + poss, flags), on(anchor - timedelta(days=1))),
        (re.compile(_PREP + r"\btomorrow\b" + poss, flags), on(anchor + timedelta(days=1))),
        (re.compile(r"\b" + _NUM + r"\s+days?\s+ago\b", flags), days_ago),
        (re.compile(r"\b" + _NUM + r"\s+weeks?\s+ago\b", flags), weeks_ago),
        (re.compile(r"\blast\s+week\b", flags),
         lambda _m: f"in the week of {_iso(last_week)}"),
        (re.compile(r"\bthis\s+week\b", flags),
         lambda _m: f"in the week of {_iso(_monday(anchor))}"),
        (re.compile(r"\blast\s+month\b", flags),
         lambda _m: f"in {last_month_end.strftime('%Y-%m')}"),
        (re.compile(r"\bthis\s+month\b", flags), lambda _m: f"in {anchor.strftime('%Y-%m')}"),
        (re.compile(r"\b(?P<prep>)last\s+" + _DAY + r"\b", flags),
         lambda m: weekday(m, strictly_before=True)),
        (re.compile(r"(?P<prep>\bon\s+)" + _DAY + r"\b(?!\s+\d{4}-\d{2}-\d{2})", flags),
         lambda m: weekday(m, strictly_before=False)),
    ]


_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)


def normalise_dates(text: str, anchor: datetime | date) -> str:
    """Replace relative dates in ``text`` with absolute ones computed from ``anchor``.

    ``anchor`` is the source session's timestamp (its local calendar day is used as "today").
    """
    day = anchor.date() if isinstance(anchor, datetime) else anchor
    rules = _rules(day)
    out: list[str] = []
    position = 0
    for code in _CODE.finditer(text):
        out.append(_apply(text[position:code.start()], rules))
        out.append(code.group(0))
        position = code.end()
    out.append(_apply(text[position:], rules))
    return "".join(out)


def _apply(
    chunk: str, rules: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]]
) -> str:
    for pattern, replace in rules:
        chunk = pattern.sub(replace, chunk)
    return chunk
