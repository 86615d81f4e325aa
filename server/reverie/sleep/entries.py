"""How REM entries map onto the memory directory that dream also writes.

One entry is one top-level topic file ``<key>.md``:

- front matter ``name`` = title, ``description`` = the one-line hook, ``type`` = entry type,
  ``updated`` = the recorded date (ISO); other front-matter keys (``sources`` ...) are kept;
- the body = content;
- one ``MEMORY.md`` line ``- [title](<key>.md) - description``, at most 150 characters wide
  (a long title or hook is shortened; the whole text stays in the topic file).

Reading goes the other way: every top-level topic file (except ``MEMORY.md``) is an entry, keyed
by its file stem; a missing ``updated`` falls back to the file's modification date. Files REM
does not own (sub-directories such as ``logs/``, dot-files, non-markdown files) are never touched,
and index lines that link elsewhere (sub-directories, URLs) are kept after the entries.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date as Date
from datetime import datetime
from pathlib import Path

from reverie.curation.topics import fit_entry
from reverie.memory.store import (
    INDEX_NAME,
    TOPIC_TYPES,
    IndexEntry,
    TopicMeta,
    parse_index,
    read_topic,
    render_index,
    render_topic,
    topic_names,
)
from reverie.sleep.models import EntryType, MemoryEntry, normalise_key

logger = logging.getLogger(__name__)

MAX_HOOK_CHARS = 110


def _as_date(raw: str | None) -> Date | None:
    if not raw:
        return None
    try:
        return Date.fromisoformat(raw[:10])
    except ValueError:
        return None


def _entry_type(raw: str | None) -> EntryType:
    if raw in TOPIC_TYPES:
        return raw  # type: ignore[return-value]
    return "project"


def load_entries(memory_dir: Path) -> list[MemoryEntry]:
    """The memory as REM sees it, in index order, then unindexed topics by name."""
    index_path = memory_dir / INDEX_NAME
    index = parse_index(index_path.read_text("utf-8", errors="replace")) if (
        index_path.is_file()
    ) else parse_index("")
    by_target = {e.target_path: e for e in index.entries if e.is_local}
    names = topic_names(memory_dir)
    ordered = [t for t in by_target if t in names] + [n for n in names if n not in by_target]
    entries: list[MemoryEntry] = []
    for name in ordered:
        path = memory_dir / name
        key = normalise_key(path.stem)
        if not key:
            continue
        try:
            topic = read_topic(path)
            mtime_day = datetime.fromtimestamp(path.stat().st_mtime).date()
        except OSError as exc:
            logger.warning("skipping unreadable topic %s: %s", path, exc)
            continue
        line = by_target.get(name)
        title = topic.meta.name or (line.title if line else "") or key
        description = topic.meta.description or (line.hook if line else "")
        content = topic.body.strip() or title
        entries.append(MemoryEntry(
            key=key,
            title=title[:120],
            description=description[:200],
            type=_entry_type(topic.meta.type),
            content=content[:8000],
            recorded=_as_date(topic.meta.updated) or mtime_day,
        ))
    return entries


def _hook(entry: MemoryEntry) -> str:
    text = entry.description or entry.content.splitlines()[0]
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_HOOK_CHARS else flat[: MAX_HOOK_CHARS - 1].rstrip() + "…"


def render_files(
    memory_dir: Path, entries: Sequence[MemoryEntry], before: Sequence[MemoryEntry] = ()
) -> tuple[dict[str, str], list[str]]:
    """(files to write: relative name -> text, topic files to delete) for the new memory.

    Topic files of entries unchanged since ``before`` are left byte-for-byte as they are.
    """
    previous = {e.key: e for e in before}
    index_path = memory_dir / INDEX_NAME
    old_index = parse_index(index_path.read_text("utf-8", errors="replace")) if (
        index_path.is_file()
    ) else parse_index("")
    writes: dict[str, str] = {}
    lines: list[IndexEntry] = []
    for entry in entries:
        name = f"{entry.key}.md"
        path = memory_dir / name
        link_text = entry.title.replace("]", ")")
        # every index line within the spec's width, however long the model made title and hook
        lines.append(fit_entry(IndexEntry(title=link_text, target=name, hook=_hook(entry))))
        prior = previous.get(entry.key)
        if prior is not None and unchanged(prior, entry) and path.is_file():
            continue
        meta = TopicMeta()
        if path.is_file():
            try:
                meta = read_topic(path).meta
            except OSError:
                meta = TopicMeta()
        meta = meta.model_copy(update={
            "name": entry.title,
            "description": _hook(entry),
            "type": entry.type,
            "updated": entry.recorded.isoformat(),
        })
        writes[name] = render_topic(meta, entry.content)
    kept_names = {f"{entry.key}.md" for entry in entries}
    owned = set(topic_names(memory_dir))
    for line in old_index.entries:
        if not line.is_local or "/" in line.target_path:
            lines.append(line)
    deletes = sorted(owned - kept_names)
    same_index = [(e.title, e.target, e.hook) for e in lines] == [
        (e.title, e.target, e.hook) for e in old_index.entries
    ]
    if writes or deletes or not same_index or not index_path.is_file():
        writes[INDEX_NAME] = render_index(lines)
    return writes, deletes


def unchanged(old: MemoryEntry, new: MemoryEntry) -> bool:
    """Same key, and the same title, description, type and content (whitespace aside)."""
    def norm(text: str) -> str:
        return " ".join(text.split())

    return (
        old.key == new.key
        and norm(old.title) == norm(new.title)
        and norm(old.description) == norm(new.description)
        and old.type == new.type
        and norm(old.content) == norm(new.content)
    )


def fix_recorded_dates(
    before: Sequence[MemoryEntry], after: Sequence[MemoryEntry], today: Date
) -> list[MemoryEntry]:
    """Unchanged entries keep their recorded date; new or changed ones are dated ``today``."""
    old = {e.key: e for e in before}
    fixed: list[MemoryEntry] = []
    for entry in after:
        prior = old.get(entry.key)
        recorded = prior.recorded if prior is not None and unchanged(prior, entry) else today
        fixed.append(entry.model_copy(update={"recorded": recorded}))
    return fixed
