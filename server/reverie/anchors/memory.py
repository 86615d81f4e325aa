"""The facts of a memory dir, their recorded anchors, and their status against the workspace.

Anchors live in each topic file's front matter, beside the other metadata and out of the text
the agent reads::

    anchors:
      3f2a1c9d0e: {uses: [{script: build, in: package.json}], verified: '2026-12-01'}

keyed by a hash of the fact's statement (so an edited fact is extracted again). A fact without an
entry (a person's edit, a file written by another tool) is extracted when it is checked.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from reverie.anchors.bullets import Bullet, read_bullets
from reverie.anchors.cache import CheckCache, digest
from reverie.anchors.extract import Extractor, path_words
from reverie.anchors.model import Anchor, AnchorCheck, Status, combine
from reverie.anchors.symbols import SymbolIndex
from reverie.anchors.tree import WorkTree
from reverie.anchors.validate import Validator
from reverie.memory import nofollow
from reverie.memory.store import TopicMeta, parse_topic, read_topic, topic_names

logger = logging.getLogger(__name__)

ANCHORS_KEY = "anchors"
_PINNED = re.compile(r"📌|\(pinned\b|<!--\s*pinned\s*-->|\bpinned:\s*true\b", re.IGNORECASE)


@dataclass
class Recorded:
    """What the front matter holds for one fact."""

    anchors: list[Anchor]
    verified: date | None = None


@dataclass
class MemoryFact:
    """One live fact of a topic file, positioned in the file (0-based lines, end exclusive)."""

    topic: str
    key: str
    fact: Bullet
    line: int
    end: int
    lines: list[str]
    recorded: Recorded | None
    pinned: bool

    @property
    def text(self) -> str:
        return self.fact.display

    @property
    def confirmed(self) -> date | None:
        """The last date a session stated it (its provenance), or a check found it valid."""
        days = [d for d in (self.fact.day, self.recorded.verified if self.recorded else None)
                if d]
        return max(days) if days else None


@dataclass
class TopicFacts:
    """A parsed topic file: its meta, body offset and live facts."""

    name: str
    meta: TopicMeta
    text: str
    body_start: int
    facts: list[MemoryFact] = field(default_factory=list)
    #: the anchors its front matter records, by fact key
    recorded: dict[str, Recorded] = field(default_factory=dict)


def recorded_anchors(meta: TopicMeta) -> dict[str, Recorded]:
    raw = (meta.model_extra or {}).get(ANCHORS_KEY)
    out: dict[str, Recorded] = {}
    if not isinstance(raw, dict):
        return out
    for key, value in raw.items():
        if not isinstance(value, dict):
            continue
        items = value.get("uses", [])
        anchors = [a for a in (Anchor.from_yaml(i) for i in items) if a is not None] \
            if isinstance(items, list) else []
        out[str(key)] = Recorded(anchors=anchors, verified=_date(value.get("verified")))
    return out


def anchors_block(entries: dict[str, Recorded]) -> dict[str, Any]:
    return {key: {"uses": [a.to_yaml() for a in rec.anchors],
                  **({"verified": rec.verified.isoformat()} if rec.verified else {})}
            for key, rec in entries.items()}


def _date(value: Any) -> date | None:
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            return None
    return None


def read_topic_facts(memory_dir: Path, name: str,
                     cache: CheckCache | None = None) -> TopicFacts | None:
    """A topic file's live facts; None when it cannot be read or its front matter is broken
    (a file the user broke is theirs to fix). ``cache``: front matter parsed before, by the
    file's content hash (every fact's anchors live there: parsing YAML is the dear part)."""
    path = memory_dir / name
    parsed = _parsed_topic(path, cache)
    if parsed is None:
        return None
    meta, raw, start = parsed
    lines = raw.splitlines()
    recorded = recorded_anchors(meta)
    topic_pinned = (meta.model_extra or {}).get("pinned") is True
    out = TopicFacts(name=name, meta=meta, text=raw, body_start=start, recorded=recorded)
    for bullet in read_bullets(lines[start:]):
        pinned = topic_pinned or any(_PINNED.search(line) for line in bullet.lines)
        out.facts.append(MemoryFact(
            topic=name, key=bullet.key, fact=bullet, line=start + bullet.start,
            end=start + bullet.end, lines=bullet.lines, recorded=recorded.get(bullet.key),
            pinned=pinned))
    return out


def _parsed_topic(path: Path, cache: CheckCache | None) -> tuple[TopicMeta, str, int] | None:
    """A topic's front matter, text and first body line (None: unreadable or broken)."""
    if cache is not None:
        try:
            data = nofollow.read_file(path)
        except OSError as exc:
            logger.info("check: skipping unreadable topic %s: %s", path.name, exc)
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass  # parsed as always below (replacement characters, the error reported)
        else:
            content = digest(data)
            hit = cache.topic(content)
            if hit is not None:
                return hit[0], text, hit[1]
            parsed = parse_topic(path, text)
            if parsed.error:
                return None
            start = _body_start(text.splitlines(), parsed.body, parsed.has_front_matter)
            cache.remember_topic(content, parsed.meta, start)
            return parsed.meta, text, start
    try:
        topic = read_topic(path)
        raw = path.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        logger.info("check: skipping unreadable topic %s: %s", path.name, exc)
        return None
    if topic.error:
        return None
    return topic.meta, raw, _body_start(raw.splitlines(), topic.body, topic.has_front_matter)


def _body_start(lines: list[str], body: str, has_front_matter: bool) -> int:
    if not has_front_matter:
        return 0
    closing = next((n for n in range(1, len(lines)) if lines[n].strip() == "---"), 0)
    first = next((line for line in body.splitlines() if line.strip()), None)
    for number in range(closing + 1, len(lines)):
        if first is None or lines[number] == first:
            return number if first is not None else closing + 1
    return closing + 1


def memory_facts(memory_dir: Path, cache: CheckCache | None = None) -> list[TopicFacts]:
    topics = []
    for name in topic_names(memory_dir):
        parsed = read_topic_facts(memory_dir, name, cache)
        if parsed is not None:
            topics.append(parsed)
    return topics


@dataclass
class FactStatus:
    """One fact checked: the ``reverie check --json`` element."""

    fact: MemoryFact
    status: Status
    reason: str
    checks: list[AnchorCheck]
    anchors: list[Anchor]
    verified: date | None
    aging: bool = False
    #: the latest day a session the dream read confirmed it (``anchors.confirm``)
    confirmed_on: date | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.fact.topic,
            "text": self.fact.text,
            "status": self.status,
            "reason": self.reason,
            "anchors": [c.as_json() for c in self.checks],
            "verified": self.verified.isoformat() if self.verified else None,
        }


@dataclass
class MemoryCheck:
    """Every live fact of a memory dir with its status."""

    memory_dir: Path
    workspace: Path
    topics: list[TopicFacts]
    facts: list[FactStatus]

    def count(self, status: Status) -> int:
        return sum(1 for f in self.facts if f.status == status)

    def as_json(self) -> dict[str, Any]:
        return {"facts": [f.as_json() for f in self.facts], "stale": self.count("stale"),
                "valid": self.count("valid"), "unverifiable": self.count("unverifiable")}


def check_memory(memory_dir: Path, workspace: Path, today: date,
                 aging_days: int = 0, cache: Path | None = None) -> MemoryCheck:
    """Check every live fact of ``memory_dir`` against ``workspace`` (the memory is only
    read). ``cache``: the workspace's check cache (``anchors.cache``, in the project's data
    dir), read and updated; None checks everything from scratch."""
    store = CheckCache(cache, workspace, whole_memory=True)
    try:
        topics = memory_facts(memory_dir, store)
        with WorkTree(workspace) as tree:
            facts = _check_with(topics, tree, today, aging_days, store)
    finally:
        store.save()
    return MemoryCheck(memory_dir=memory_dir, workspace=workspace, topics=topics, facts=facts)


def check_topics(topics: list[TopicFacts], workspace: Path, today: date,
                 cache: CheckCache | None = None) -> list[FactStatus]:
    """Check only the facts of ``topics`` (a subset a caller picked: prompt-time recall),
    through ``cache`` when given (the caller saves it)."""
    with WorkTree(workspace) as tree:
        return _check_with(topics, tree, today, 0,
                           cache if cache is not None else CheckCache(None, workspace))


def _check_with(topics: list[TopicFacts], tree: WorkTree, today: date,
                aging_days: int, cache: CheckCache) -> list[FactStatus]:
    symbols = SymbolIndex(tree)
    facts = [f for t in topics for f in t.facts]
    fresh = [f for f in facts if f.recorded is None]
    extractor = Extractor(tree, symbols)
    extracted = extractor.extract_many([f.fact.text for f in fresh])
    anchors: dict[int, list[Anchor]] = {id(f): a for f, a in zip(fresh, extracted, strict=True)}
    unresolved = {id(f): u for f, u in zip(fresh, extractor.unresolved, strict=True)}
    for fact in facts:
        if fact.recorded is not None:
            anchors[id(fact)] = fact.recorded.anchors
    groups = [anchors[id(f)] for f in facts]
    checked = Validator(tree, symbols, cache).check_many(groups)
    out: list[FactStatus] = []
    for fact, group, checks in zip(facts, groups, checked, strict=True):
        status, reason = combine(checks)
        missing = unresolved.get(id(fact)) if id(fact) in unresolved else (
            path_words(fact.fact.text) if not checks else [])
        if status == "unverifiable" and not checks and missing:
            why = tree.history_limit_reason() or "it is not in this branch's history"
            reason = f"`{missing[0]}` is not in the workspace, and {why}"
        verified = today if status == "valid" else (
            fact.recorded.verified if fact.recorded else None)
        confirmed = today if status == "valid" else fact.confirmed
        aging = (aging_days > 0 and status != "stale" and not fact.pinned and not fact.fact.user
                 and confirmed is not None and confirmed < today - timedelta(days=aging_days))
        out.append(FactStatus(fact=fact, status=status, reason=reason, checks=checks,
                              anchors=group, verified=verified, aging=aging))
    return out
