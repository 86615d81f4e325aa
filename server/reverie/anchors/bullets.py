"""The fact bullets of a topic file, read the way ``curation.topics`` reads them (a bullet and
its indented continuation lines; a bold label; the trailing provenance; nothing under a
``## Retired`` heading), without the curation machinery: a check only needs each fact's text,
position and dates, and ``reverie check`` starts faster without the analysis modules.
``tests/unit/anchors/test_bullets.py`` keeps the two readers in step."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date

BULLET = re.compile(r"^[-*+]\s+(?P<body>.*)$")
LABEL = re.compile(r"^\*\*(?P<label>[^*:]{1,60}):\*\*\s*(?P<text>.*)$")
PROVENANCE = re.compile(
    r"\s*_\((?:session (?P<sid>[^,\s]+), (?P<day>\d{4}-\d{2}-\d{2})"
    r"|(?P<count>\d+) sessions, latest (?P<sid2>\S+) (?P<day2>\d{4}-\d{2}-\d{2}), "
    r"first (?P<first>\d{4}-\d{2}-\d{2})"
    r"|(?P<other>log|user|daily log|note)[^)]*?(?P<day3>\d{4}-\d{2}-\d{2}))\)_\s*$"
)
RETIRED_HEADING = re.compile(r"^#{2,6}\s+Retired\b", re.IGNORECASE)
#: what ``remember`` (MCP, CLI) writes after a fact: the person's own words, dated
ASKED = re.compile(r"\s*_\(asked by the user in (?:session \S+|a session), "
                   r"(?P<day>\d{4}-\d{2}-\d{2})\)_\s*$")


@dataclass
class Bullet:
    """One fact bullet: 0-based ``start``/``end`` (exclusive) in the lines it was read from."""

    start: int
    end: int
    label: str
    text: str
    user: bool  # no provenance: a person wrote it
    day: date | None  # the latest session that stated it
    lines: list[str] = field(default_factory=list)

    @property
    def body(self) -> str:
        """The bullet's first line without the ``- `` (what ``parse_fact`` reads)."""
        match = BULLET.match(self.lines[0])
        return match["body"] if match else self.lines[0]

    @property
    def display(self) -> str:
        return f"{self.label}: {self.text}" if self.label else self.text

    @property
    def key(self) -> str:
        """A stable id for the statement (label included), for its front-matter entry."""
        text = " ".join(re.sub(r"[^a-z0-9`]+", " ", f"{self.label} {self.text}".lower()).split())
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def read_bullets(lines: list[str]) -> list[Bullet]:
    out: list[Bullet] = []
    number = 0
    while number < len(lines):
        if RETIRED_HEADING.match(lines[number]):
            break
        match = BULLET.match(lines[number])
        if not match:
            number += 1
            continue
        start = number
        number += 1
        while number < len(lines) and lines[number].startswith((" ", "\t")) and \
                lines[number].strip():
            number += 1
        body = match["body"]
        prov = PROVENANCE.search(body)
        asked = ASKED.search(body) if prov is None else None
        end = prov.start() if prov else asked.start() if asked else len(body)
        text = body[:end].rstrip()
        label = ""
        labelled = LABEL.match(text)
        if labelled:
            label, text = labelled["label"].strip(), labelled["text"].strip()
        out.append(Bullet(start=start, end=number, label=label, text=text, user=prov is None,
                          day=_day(prov) or _asked_day(asked), lines=lines[start:number]))
    return out


def _asked_day(asked: re.Match[str] | None) -> date | None:
    try:
        return date.fromisoformat(asked["day"]) if asked else None
    except ValueError:
        return None


def _day(prov: re.Match[str] | None) -> date | None:
    if prov is None:
        return None
    raw = prov["day2"] or prov["day"] or prov["day3"]
    try:
        return date.fromisoformat(raw) if raw else None
    except ValueError:
        return None
