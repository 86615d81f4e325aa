"""Keep memory true: retire stale facts, record anchors, mark facts nobody confirmed lately.

Run on a staged copy of the memory dir inside a dream (or the sleep cycle's REM), so what it does
is part of that run: recorded in history, undoable, applied atomically or not at all.

- A **stale** fact (an anchor the check established is gone) leaves its place and the index
  hook and moves, lines unchanged, under the topic's ``## Retired`` heading with
  ``(retired on DATE: reason)``; a pinned fact is never retired.
- Every live fact's anchors are recorded in the front matter (``anchors``), with the date a
  check last found it valid (``verified``, refreshed at most weekly to keep history quiet).
- A fact Reverie wrote that nothing confirmed for ``aging_days`` (no session restated it, no
  anchor to check) gets ``(aging: not confirmed since DATE)`` under it; it is not deleted, and
  the mark goes when a session confirms it again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import frontmatter

from reverie.anchors.confirm import Confirmations
from reverie.anchors.delivery import hook_without
from reverie.anchors.extract import Extractor
from reverie.anchors.memory import (
    ANCHORS_KEY,
    FactStatus,
    MemoryCheck,
    Recorded,
    TopicFacts,
    anchors_block,
    check_memory,
    read_topic_facts,
    recorded_anchors,
)
from reverie.anchors.tree import WorkTree
from reverie.curation.facts import Fact
from reverie.curation.topics import AGING_MARK, index_entry, parse_fact, statement
from reverie.fsutil import atomic_write_text
from reverie.memory.store import INDEX_NAME, IndexEntry, TopicMeta, parse_index

logger = logging.getLogger(__name__)

RETIRED_TITLE = "## Retired"
VERIFIED_REFRESH_DAYS = 7
_AGING = AGING_MARK
_RETIRED_NOTE = re.compile(r"^\s+\(retired on \d{4}-\d{2}-\d{2}: .*\)\s*$")


@dataclass
class Retired:
    topic: str
    text: str
    reason: str


@dataclass
class MaintainResult:
    retired: list[Retired] = field(default_factory=list)
    aging: int = 0
    recorded: int = 0
    files: list[str] = field(default_factory=list)
    check: MemoryCheck | None = None

    @property
    def summary(self) -> str:
        parts = []
        if self.retired:
            parts.append(f"retired {len(self.retired)} stale fact"
                         f"{'s' if len(self.retired) != 1 else ''}")
        if self.aging:
            parts.append(f"{self.aging} aging")
        return ", ".join(parts)


def maintain_memory(memory_dir: Path, workspace: Path, today: date,
                    aging_days: int = 0,
                    confirmations: Confirmations | None = None,
                    cache: Path | None = None) -> MaintainResult:
    """Validate every fact of ``memory_dir`` (a staged copy) against ``workspace`` and write
    what follows: retirements, anchors, aging marks, index hooks. ``confirmations``: what the
    run's sessions confirmed (a command run again successfully, a file edited again), which
    refreshes a fact's ``verified`` date and takes it out of aging. ``cache``: the workspace's
    check cache (``anchors.cache``)."""
    check = check_memory(memory_dir, workspace, today, aging_days, cache)
    if confirmations:
        _confirm(check, confirmations, today, aging_days)
    return _apply(memory_dir, check, today, lambda s: s.status == "stale", {}, mark_aging=True,
                  record=workspace.is_dir())


def _confirm(check: MemoryCheck, confirmations: Confirmations, today: date,
             aging_days: int) -> None:
    for status in check.facts:
        if status.status == "stale":
            continue  # the working tree now outweighs what a session saw
        day = confirmations.day_for(status.fact.fact.text, status.anchors)
        if day is None:
            continue
        status.confirmed_on = day
        if status.verified is None or day > status.verified:
            status.verified = day
        if status.aging and day >= today - timedelta(days=aging_days):
            status.aging = False


def record_anchors(memory_dir: Path, workspace: Path, names: Iterable[str]) -> list[str]:
    """Record the anchors of facts just written (``remember``) in their topic's front matter,
    in the writer's own run; facts recorded before keep their entry. Nothing is validated or
    retired here: the next check or dream does that. Returns the files changed."""
    if not workspace.is_dir():
        return []  # what resolves nowhere would be recorded as "no anchor"
    changed: list[str] = []
    for name in names:
        topic = read_topic_facts(memory_dir, name)
        if topic is None or not _has_front_matter(topic.text):
            continue
        fresh = [f for f in topic.facts if f.recorded is None]
        if not fresh:
            continue
        with WorkTree(workspace) as tree:
            found = Extractor(tree).extract_many([f.fact.text for f in fresh])
        entries = dict(recorded_anchors(topic.meta))
        for fact, anchors in zip(fresh, found, strict=True):
            entries[fact.key] = Recorded(anchors=anchors)
        meta = topic.meta.model_copy(deep=True)
        setattr(meta, ANCHORS_KEY, anchors_block(entries))
        atomic_write_text(memory_dir / name,
                          _with_body(_front_matter(meta), _after_front_matter(topic.text)))
        changed.append(name)
    return changed


def curate_facts(memory_dir: Path, workspace: Path, today: date, *,
                 retire: Iterable[str] = (), keep: Iterable[str] = ()) -> MaintainResult:
    """A person's decision on facts (by key), on a staged copy: ``retire`` moves them to the
    retired section now (with the check's reason, or "retired by hand"); ``keep`` keeps them
    and records only the anchors that still hold (a stale anchor is dropped from the record,
    the fact verified today), so the next check no longer reports them stale."""
    check = check_memory(memory_dir, workspace, today)
    retire_keys, keep_keys = set(retire), set(keep)
    overrides = {
        s.fact.key: Recorded(anchors=[c.anchor for c in s.checks if c.status != "stale"],
                             verified=today)
        for s in check.facts if s.fact.key in keep_keys}
    for status in check.facts:
        if status.fact.key in retire_keys and status.status != "stale":
            status.reason = "retired by hand"
    return _apply(memory_dir, check, today, lambda s: s.fact.key in retire_keys, overrides,
                  mark_aging=False, record=workspace.is_dir())


def _apply(memory_dir: Path, check: MemoryCheck, today: date,
           retiring: Callable[[FactStatus], bool], overrides: dict[str, Recorded], *,
           mark_aging: bool, record: bool) -> MaintainResult:
    """``record``: write anchors to the front matter (not when the workspace is not here: what
    resolves nowhere would be recorded as "no anchor")."""
    result = MaintainResult(check=check)
    by_topic: dict[str, list[FactStatus]] = {}
    for status in check.facts:
        by_topic.setdefault(status.fact.topic, []).append(status)
    retired_topics: dict[str, list[FactStatus]] = {}
    for topic in check.topics:
        statuses = by_topic.get(topic.name, [])
        retire = [s for s in statuses if retiring(s) and not s.fact.pinned]
        new_text, retired, aging = _rewrite(topic, statuses, today, retire, overrides,
                                            mark_aging, record)
        if new_text != topic.text:
            try:
                atomic_write_text(memory_dir / topic.name, new_text)
            except OSError as exc:
                logger.warning("cannot update %s: %s", topic.name, exc)
                continue
            result.files.append(topic.name)
        result.aging += aging
        result.recorded += sum(1 for s in statuses if s.fact.recorded is None)
        if retired:
            retired_topics[topic.name] = retired
            result.retired += [Retired(topic.name, s.fact.text, s.reason) for s in retired]
    if retired_topics and _update_index(memory_dir, check, retired_topics):
        result.files.append(INDEX_NAME)
    return result


def _rewrite(topic: TopicFacts, statuses: list[FactStatus], today: date,
             retire: list[FactStatus], overrides: dict[str, Recorded],
             mark_aging: bool, record: bool) -> tuple[str, list[FactStatus], int]:
    lines = topic.text.splitlines()
    trailing = topic.text.endswith("\n")
    keep = [s for s in statuses if s not in retire]
    aging_count = 0
    # body edits, bottom-up so line numbers stay right
    moved: list[list[str]] = []
    for status in sorted(statuses, key=lambda s: -s.fact.line):
        fact = status.fact
        block = [line for line in lines[fact.line:fact.end]
                 if not mark_aging or not _AGING.match(line) or fact.fact.user]
        if status in retire:
            del lines[fact.line:fact.end]
            moved.insert(0, [*block, f"  (retired on {today.isoformat()}: "
                                     f"{_one_line(status.reason)})"])
            continue
        if mark_aging and status.aging and not fact.fact.user:
            aging_count += 1
            since = (fact.confirmed or today).isoformat()
            block.append(f"  (aging: not confirmed since {since})")
        if block != lines[fact.line:fact.end]:
            lines[fact.line:fact.end] = block
    if moved:
        lines = _add_retired(lines, moved)
    body_changed = moved or lines != topic.text.splitlines()
    text = "\n".join(lines) + ("\n" if trailing or not lines else "")
    # the front matter: anchors of the facts still live, verified dates
    old = {key: rec for key, rec in _recorded(topic).items()}
    entries: dict[str, Recorded] = {}
    for status in keep:
        previous = old.get(status.fact.key)
        verified = previous.verified if previous else None
        if status.status == "valid" and (verified is None or verified <= today - timedelta(
                days=VERIFIED_REFRESH_DAYS)):
            verified = today
        if status.confirmed_on and (verified is None or status.confirmed_on > verified):
            verified = status.confirmed_on  # a session ran it (or edited it) again
        entries[status.fact.key] = overrides.get(
            status.fact.key, Recorded(anchors=status.anchors, verified=verified))
    changed_anchors = {k: v.anchors for k, v in entries.items()} != \
        {k: v.anchors for k, v in old.items()}
    changed_dates = {k: v.verified for k, v in entries.items()} != \
        {k: v.verified for k, v in old.items() if k in entries}
    if not record:
        changed_anchors = changed_dates = False
    if topic.meta is not None and (body_changed or changed_anchors or changed_dates) and \
            _has_front_matter(topic.text):
        meta = topic.meta.model_copy(deep=True)
        extra = dict(meta.model_extra or {})
        if record:
            extra[ANCHORS_KEY] = anchors_block(entries)
        for key, value in extra.items():
            setattr(meta, key, value)
        if moved and meta.description:
            meta.description = _without_retired(meta.description, retire) or meta.name
        text = _with_body(_front_matter(meta), _after_front_matter(text))
    return text, retire, aging_count


def _recorded(topic: TopicFacts) -> dict[str, Recorded]:
    return topic.recorded


def _has_front_matter(text: str) -> bool:
    return text.startswith("---")


def _front_matter(meta: TopicMeta) -> str:
    """The front matter block alone (``render_topic``'s key order; empty values left out)."""
    data = {k: v for k, v in meta.model_dump(exclude_none=True).items() if v not in ("", [])}
    known = ("name", "description", "type", "updated", "sources")
    ordered: dict[str, Any] = {k: data.pop(k) for k in known if k in data}
    ordered.update(data)
    return frontmatter.dumps(frontmatter.Post("", **ordered), sort_keys=False,
                             allow_unicode=True)


def _after_front_matter(text: str) -> str:
    """Everything after the front matter's closing ``---`` line, byte for byte."""
    lines = text.splitlines(keepends=True)
    closing = next((n for n in range(1, len(lines)) if lines[n].strip() == "---"), None)
    return "".join(lines[closing + 1:]) if closing is not None else text


def _with_body(front: str, body: str) -> str:
    """Front matter rendered anew, then the body as it was."""
    head = front.rstrip("\n")
    return f"{head}\n{body}" if body else f"{head}\n"


def _add_retired(lines: list[str], blocks: list[list[str]]) -> list[str]:
    heading = next((n for n, line in enumerate(lines)
                    if re.match(r"^#{2,6}\s+Retired\b", line, re.IGNORECASE)), None)
    if heading is None:
        while lines and not lines[-1].strip():
            lines.pop()
        lines = [*lines, "", RETIRED_TITLE, ""]
        heading = len(lines) - 2
    section_end = next((n for n in range(heading + 1, len(lines))
                        if re.match(r"^#{1,6}\s", lines[n])), len(lines))
    section = lines[heading + 1:section_end]
    for block in blocks:
        first = block[0]
        if first in section:  # retired before (a restatement came back): newest reason wins
            at = section.index(first)
            end = at + 1
            while end < len(section) and section[end].startswith((" ", "\t")) and \
                    section[end].strip():
                end += 1
            section[at:end] = block
        else:
            while section and not section[-1].strip():
                section.pop()
            section = [*section, *block] if section else ["", *block]
    if section and section[0].strip():
        section = ["", *section]
    return [*lines[:heading + 1], *section, *lines[section_end:]]


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace(")", "]").replace("(", "[")


def _without_retired(text: str, retired: list[FactStatus]) -> str:
    """A hook or description with the parts that state a retired fact taken out."""
    parts = hook_without(text, retired)
    gone = {statement(_as_fact(s)).lower() for s in retired}
    return "; ".join(p for p in parts.split("; ") if p and p.lower() not in gone)


def _update_index(memory_dir: Path, check: MemoryCheck,
                  retired: dict[str, list[FactStatus]]) -> bool:
    path = memory_dir / INDEX_NAME
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    parsed = parse_index(text)
    lines = list(parsed.lines)
    changed = False
    for entry in parsed.entries:
        gone = retired.get(entry.target_path)
        if not gone or not entry.hook:
            continue
        hook = _without_retired(entry.hook, gone)
        if hook == entry.hook:
            continue
        fresh = IndexEntry(title=entry.title, target=entry.target, hook=hook)
        if not hook:  # nothing of the old hook is left: the topic's live facts make one
            live = [_as_fact(s) for s in check.facts if s.fact.topic == entry.target_path
                    and s not in gone and not s.fact.fact.user]
            fresh = index_entry(entry.title, entry.target, live)
            if _without_retired(fresh.hook, gone) != fresh.hook:
                fresh.hook = ""
        lines[entry.line] = fresh.render()
        changed = True
    if not changed:
        return False
    atomic_write_text(path, "\n".join(lines) + ("\n" if text.endswith("\n") else ""))
    return True


def _as_fact(status: FactStatus) -> Fact:
    """The curation model of a checked fact (for index hooks, ranked as the dream ranks)."""
    return parse_fact(status.fact.fact.body, status.fact.topic)


def _codes(statuses: list[FactStatus]) -> set[str]:
    return {c for s in statuses for c in re.findall(r"`[^`]+`", s.fact.fact.text)}
