"""What agents are given: only facts that are valid or unverifiable.

A dream retires stale facts, but the code can move on between dreams; whatever copies memory to
an agent (the managed copies in AGENTS.md / GEMINI.md, session-start context) checks first and
leaves out the index-hook parts that state a stale fact. Read only: the memory itself changes
at the next dream, in a recorded run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from dataclasses import replace
from datetime import date
from pathlib import Path

from reverie.anchors.cache import CheckCache
from reverie.anchors.memory import (
    FactStatus,
    MemoryCheck,
    TopicFacts,
    check_memory,
    check_topics,
    read_topic_facts,
)
from reverie.memory.store import INDEX_NAME, IndexEntry, parse_index


def hook_without(text: str, stale: list[FactStatus]) -> str:
    """An index hook (``a; b; c``) without the parts that state one of ``stale``: its whole
    statement, one of its code spans, or the value of an anchor that went stale."""
    parts = [p.strip() for p in text.split(";")]
    whole = {_plain(s.fact.fact.display) for s in stale} | {_plain(s.fact.fact.text)
                                                            for s in stale}
    marks = {c.lower() for s in stale for c in re.findall(r"`[^`]+`", s.fact.fact.text)} | {
        c.anchor.value.lower() for s in stale for c in s.checks if c.status == "stale"}
    kept = [p for p in parts if p and _plain(p) not in whole
            and not any(m in p.lower() for m in marks)]
    return "; ".join(kept)


def _plain(text: str) -> str:
    return " ".join(text.lower().rstrip(". ").split())


def delivered_index(memory_dir: Path, workspace: Path, today: date,
                    check: MemoryCheck | None = None) -> str | None:
    """``MEMORY.md`` with stale facts left out of the hooks; None when it cannot be read."""
    try:
        text = (memory_dir / INDEX_NAME).read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    check = check or check_memory(memory_dir, workspace, today)
    stale: dict[str, list[FactStatus]] = {}
    for status in check.facts:
        if status.status == "stale":
            stale.setdefault(status.fact.topic, []).append(status)
    if not stale:
        return text
    parsed = parse_index(text)
    lines = list(parsed.lines)
    for entry in parsed.entries:
        gone = stale.get(entry.target_path)
        if gone and entry.hook:
            hook = hook_without(entry.hook, gone)
            if hook != entry.hook:
                entry.hook = hook
                lines[entry.line] = entry.render()
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def stale_lines(memory_dir: Path, workspace: Path, today: date,
                wanted: Mapping[str, Set[int]],
                cache: Path | None = None) -> set[tuple[str, int]]:
    """Of the memory lines ``wanted`` (file name -> 0-based lines: a topic's fact lines, or
    ``MEMORY.md`` entries), those that state a stale fact: what prompt-time recall leaves
    out. Only the facts on those lines (and the topics of those index entries) are checked.
    ``cache``: the workspace's check cache (``anchors.cache``)."""
    store = CheckCache(cache, workspace)
    try:
        return _stale_lines(memory_dir, workspace, today, wanted, store)
    finally:
        store.save()


def _stale_lines(memory_dir: Path, workspace: Path, today: date,
                 wanted: Mapping[str, Set[int]], store: CheckCache) -> set[tuple[str, int]]:
    entries: dict[int, IndexEntry] = {}
    if wanted.get(INDEX_NAME):
        try:
            index = (memory_dir / INDEX_NAME).read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            index = ""
        entries = {e.line: e for e in parse_index(index).entries
                   if e.line in wanted[INDEX_NAME] and e.hook}
    whole = {e.target_path for e in entries.values()}
    topics: list[TopicFacts] = []
    for name in sorted({n for n in wanted if n != INDEX_NAME} | whole):
        parsed = read_topic_facts(memory_dir, name, store)
        if parsed is None:
            continue
        lines = wanted.get(name, set())
        facts = parsed.facts if name in whole else [
            f for f in parsed.facts if any(f.line <= n < f.end for n in lines)]
        topics.append(replace(parsed, facts=facts))
    if not any(t.facts for t in topics):
        return set()
    stale: dict[str, list[FactStatus]] = {}
    for status in check_topics(topics, workspace, today, store):
        if status.status == "stale":
            stale.setdefault(status.fact.topic, []).append(status)
    out: set[tuple[str, int]] = set()
    for name, statuses in stale.items():
        for line in wanted.get(name, set()):
            if any(s.fact.line <= line < s.fact.end for s in statuses):
                out.add((name, line))
    for line, entry in entries.items():
        gone = stale.get(entry.target_path)
        if gone and hook_without(entry.hook, gone) != entry.hook:
            out.add((INDEX_NAME, line))
    return out
