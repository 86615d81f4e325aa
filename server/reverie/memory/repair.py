"""Post-run validation and repair of a (staged) memory dir.

A model, or the offline engine, may leave an index over the limits, a dangling link, a duplicate
or an unindexed topic, or a topic file without ``updated`` / ``sources``. ``repair_memory`` fixes
what can be fixed without losing anything (long lines are shortened and the detail moves into
the topic file; excess entries are demoted to an overflow topic linked from the index);
``new_blocking_problems`` tells the run what is still wrong so it can fail cleanly instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date
from pathlib import Path

from pydantic import BaseModel, Field

from reverie.fsutil import atomic_write_text
from reverie.memory.store import (
    INDEX_NAME,
    MAX_ENTRY_CHARS,
    MAX_INDEX_BYTES,
    MAX_INDEX_LINES,
    IndexEntry,
    MemoryProblem,
    TopicMeta,
    blocking_problems,
    check_index,
    parse_index,
    reachable_topics,
    read_topic,
    render_topic,
    topic_names,
)

OVERFLOW_NAME = "more-memories.md"
NOTES_NAME = "index-notes.md"


class RepairReport(BaseModel):
    """What ``repair_memory`` changed, for events and tests."""

    actions: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)

    def note(self, action: str, file: str) -> None:
        self.actions.append(action)
        if file not in self.files:
            self.files.append(file)


def _slug_title(name: str) -> str:
    return re.sub(r"[-_]+", " ", name.removesuffix(".md")).strip().capitalize() or name


def fill_front_matter(path: Path, *, today: date, sources: Sequence[str]) -> bool:
    """Give a topic file the front matter Reverie promises (updated, sources, name, ...)."""
    topic = read_topic(path)
    if topic.error:
        return False
    meta = topic.meta.model_copy()
    first_line = next((ln.strip("# ").strip() for ln in topic.body.splitlines() if ln.strip()), "")
    meta.name = meta.name or _slug_title(path.name)
    meta.description = meta.description or (first_line[:120] or meta.name)
    meta.type = meta.type or "project"
    meta.updated = today.isoformat() if not topic.has_front_matter or not meta.updated else (
        meta.updated
    )
    if not meta.sources:  # the writer named no sources: credit the run's sessions
        meta.sources = list(sources)
    new_text = render_topic(meta, topic.body)
    if new_text == path.read_text("utf-8", errors="replace"):
        return False
    atomic_write_text(path, new_text)
    return True


def _same_text(live: Path, staged: Path) -> bool:
    """Both files exist and read, and their bodies (after the front matter) are the same."""
    try:
        before, after = read_topic(live), read_topic(staged)
    except OSError:
        return False
    return not before.error and not after.error and before.body == after.body


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)].rsplit(" ", 1)[0].rstrip(" ,;:-")
    return f"{cut}…"


def _entry_for_topic(memory_dir: Path, name: str) -> IndexEntry:
    topic = read_topic(memory_dir / name)
    title = (topic.meta.name or _slug_title(name)).replace("]", ")")
    hook = (topic.meta.description or "").replace("\n", " ")
    return IndexEntry(title=title, target=name, hook=hook)


def _move_detail(memory_dir: Path, entry: IndexEntry, report: RepairReport) -> None:
    """Keep the text a long index line carried: append it to the topic file it points at."""
    path = memory_dir / entry.target_path
    if not entry.is_local or not path.is_file() or not entry.hook:
        return
    text = path.read_text("utf-8", errors="replace")
    if entry.hook in text:
        return
    atomic_write_text(path, text.rstrip("\n") + f"\n\n> From the index: {entry.hook}\n")
    report.note(f"moved index detail into {entry.target_path}", entry.target_path)


def repair_memory(
    memory_dir: Path,
    *,
    touched: Iterable[str] = (),
    sources: Sequence[str] = (),
    today: date | None = None,
    live_dir: Path | None = None,
) -> RepairReport:
    """Repair ``memory_dir`` in place (run on the staged copy, before applying). ``live_dir``:
    the memory the run started from; a topic whose text the run left as it was there (only its
    front matter changed: the check's anchors and dates) is not credited to the run."""
    report = RepairReport()
    day = today or date.today()
    for name in touched:
        if "/" in name or not name.endswith(".md") or name == INDEX_NAME:
            continue
        path = memory_dir / name
        if live_dir is not None and _same_text(live_dir / name, path):
            continue
        if path.is_file() and fill_front_matter(path, today=day, sources=sources):
            report.note(f"filled front matter of {name}", name)
    topics = topic_names(memory_dir)
    index_path = memory_dir / INDEX_NAME
    if not index_path.is_file() and not topics:
        return report
    text = index_path.read_text("utf-8", errors="replace") if index_path.is_file() else "# Memory\n"
    parsed = parse_index(text)
    entry_lines = {e.line: e for e in parsed.entries}
    kept: list[IndexEntry] = []
    seen: set[str] = set()
    for entry in parsed.entries:
        if entry.is_local:
            target = entry.target_path
            if not (memory_dir / target).is_file():
                report.note(f"dropped broken link {entry.target}", INDEX_NAME)
                continue
            if target in seen:
                report.note(f"dropped duplicate entry {entry.target}", INDEX_NAME)
                continue
            seen.add(target)
        kept.append(entry)
    for entry in kept:
        if len(entry.render()) > MAX_ENTRY_CHARS:
            _move_detail(memory_dir, entry, report)
            room = MAX_ENTRY_CHARS - len(entry.render()) + len(entry.hook)
            entry.hook = _shorten(entry.hook, max(0, room))
            if len(entry.render()) > MAX_ENTRY_CHARS:
                entry.title = _shorten(entry.title, 60)
                room = MAX_ENTRY_CHARS - len(entry.render()) + len(entry.hook)
                entry.hook = _shorten(entry.hook, max(0, room))
            report.note(f"shortened the index line for {entry.target}", INDEX_NAME)
    reachable = reachable_topics(memory_dir, parse_index("\n".join(e.render() for e in kept)))
    for name in topics:
        if name not in reachable and name not in seen:
            entry = _entry_for_topic(memory_dir, name)
            entry.hook = _shorten(entry.hook, max(0, MAX_ENTRY_CHARS - len(entry.render())
                                                 + len(entry.hook)))
            kept.append(entry)
            seen.add(name)
            report.note(f"indexed {name}", INDEX_NAME)
    # rebuild: other lines stay where they were, entries in their (repaired) order
    other = [(n, line) for n, line in enumerate(parsed.lines) if n not in entry_lines]
    lines = _assemble(other, parsed.lines, entry_lines, kept)
    lines = _enforce_limits(memory_dir, lines, kept, report, day=day)
    new_text = "\n".join(lines).rstrip("\n") + "\n"
    if new_text != text:
        atomic_write_text(index_path, new_text)
        if INDEX_NAME not in report.files:
            report.note("rewrote the index", INDEX_NAME)
    return report


def _assemble(other: list[tuple[int, str]], original: list[str],
              entry_lines: dict[int, IndexEntry], kept: list[IndexEntry]) -> list[str]:
    """Put entries back at the position of the first entry, other lines where they were."""
    if not entry_lines:
        head = [line for _, line in other] or ["# Memory"]
        if head and head[-1].strip():
            head.append("")
        return head + [e.render() for e in kept]
    first = min(entry_lines)
    before = [line for n, line in other if n < first]
    after = [line for n, line in other if n > first and original[n].strip()]
    return before + [e.render() for e in kept] + (["", *after] if after else [])


def _fits(lines: list[str]) -> bool:
    size = sum(len(line.encode("utf-8")) + 1 for line in lines)
    return len(lines) <= MAX_INDEX_LINES and size <= MAX_INDEX_BYTES


def _enforce_limits(memory_dir: Path, lines: list[str], kept: list[IndexEntry],
                    report: RepairReport, *, day: date) -> list[str]:
    if _fits(lines):
        return lines
    rendered = {e.render() for e in kept}
    # 1. prose in the index belongs in a topic file
    prose = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")
             and ln not in rendered]
    if prose:
        path = memory_dir / NOTES_NAME
        body = read_topic(path).body if path.is_file() else ""
        meta = TopicMeta(name="Index notes", description="Text that was written into MEMORY.md",
                         type="reference", updated=day.isoformat())
        atomic_write_text(path, render_topic(meta, (body + "\n\n" + "\n".join(prose)).strip()))
        lines = [ln for ln in lines if ln not in prose]
        report.note(f"moved {len(prose)} prose lines out of the index", NOTES_NAME)
        if NOTES_NAME not in {e.target_path for e in kept}:
            entry = IndexEntry(title="Index notes", target=NOTES_NAME,
                               hook="notes moved out of the index")
            kept.append(entry)
            lines.append(entry.render())
        if _fits(lines):
            return lines
    # 2. demote the excess entries (the last ones) into an overflow topic
    rendered = {e.render() for e in kept}
    overflow_entry = IndexEntry(title="More memories", target=OVERFLOW_NAME,
                                hook="older and less central topics")
    entries = [e for e in kept if e.target_path != OVERFLOW_NAME]
    non_entry = [ln for ln in lines if ln not in rendered and ln != overflow_entry.render()]
    keep_count = len(entries)
    while keep_count > 0:
        candidate = non_entry + [e.render() for e in entries[:keep_count]] + [
            overflow_entry.render()]
        if _fits(candidate):
            break
        keep_count -= 1
    demoted = entries[keep_count:]
    path = memory_dir / OVERFLOW_NAME
    existing = read_topic(path).body if path.is_file() else ""
    listed = [ln for ln in existing.splitlines() if ln.strip()]
    listed += [e.render() for e in demoted if e.render() not in listed]
    meta = TopicMeta(name="More memories", description="Topics demoted from the index",
                     type="reference", updated=day.isoformat())
    atomic_write_text(path, render_topic(meta, "\n".join(listed)))
    report.note(f"demoted {len(demoted)} entries to {OVERFLOW_NAME}", OVERFLOW_NAME)
    return non_entry + [e.render() for e in entries[:keep_count]] + [overflow_entry.render()]


def new_blocking_problems(
    memory_dir: Path, before: Iterable[MemoryProblem]
) -> list[MemoryProblem]:
    """Blocking problems that were not already there before the run (a run is not blamed for
    a broken file the user left, but must not add one)."""
    old = {(p.file.name, p.code) for p in before}
    return [p for p in blocking_problems(check_index(memory_dir))
            if (p.file.name, p.code) not in old]
