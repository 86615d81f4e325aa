"""``remember``: a fact the user asked an agent to keep, written into memory like a dream.

The text is redacted, refused when it is empty, too long or of a never-keep class
(``curation.noise``), and appended as one bullet to a topic file with its provenance
("asked by the user in session X, date"); the topic gets an index line in ``MEMORY.md`` when it
is new. The write goes through the application's ``MemoryWriter`` (``services.wiring``): the
consolidation lock, a staged copy, repair and validation, an atomic apply, a history record
(``reverie undo`` takes it back) and the after-apply hooks, plus the caller's own (the MCP
server brings the search index up to date there).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from reverie.anchors.retire import record_anchors
from reverie.config import ProjectPaths, Settings
from reverie.curation.noise import noise_class
from reverie.curation.topics import slug
from reverie.errors import UserError
from reverie.fsutil import atomic_write_text
from reverie.memory.lock import LockBusy
from reverie.memory.store import (
    INDEX_NAME,
    IndexEntry,
    TopicMeta,
    parse_index,
    parse_topic,
    render_topic,
)
from reverie.memory.write import AfterApply, MemoryValidationError
from reverie.redact import redact
from reverie.services.wiring import memory_writer
from reverie.transcripts.discovery import current_session

logger = logging.getLogger(__name__)

MAX_FACT_CHARS = 600
DEFAULT_TOPIC = "remembered"
DEFAULT_TOPIC_TITLE = "Remembered"
DEFAULT_TOPIC_HOOK = "facts the user asked an agent to keep"
#: a remember waits this long for a running dream to let go of the lock
REMEMBER_WAIT_SECONDS = 10.0


class RememberResult(BaseModel):
    run_id: str
    topic: str
    file: str
    line: str
    session_id: str | None


def _fact_line(text: str, session_id: str | None, today: str) -> str:
    where = f"session {session_id[:8]}" if session_id else "a session"
    return f"- {text} _(asked by the user in {where}, {today})_"


def _clean_fact(text: str) -> str:
    folded = " ".join(text.split())
    if not folded:
        raise UserError("nothing to remember: the text is empty")
    if len(folded) > MAX_FACT_CHARS:
        raise UserError(f"too long to remember ({len(folded)} characters; at most "
                        f"{MAX_FACT_CHARS}): say it in a sentence or two")
    redacted, _ = redact(folded)
    kind = noise_class(redacted) or noise_class(f"- {redacted}")
    if kind is not None:
        raise UserError(f"refused: this is a {kind} line, which memory never keeps")
    if not any(ch.isalnum() for ch in re.sub(r"\[REDACTED:[^\]]*\]", "", redacted)):
        raise UserError("refused: nothing but a secret is left once redacted")
    return redacted


def _topic_file(topic: str | None) -> tuple[str, str]:
    """``(file name, title)`` of the topic a fact goes to."""
    if not topic or not topic.strip():
        return f"{DEFAULT_TOPIC}.md", DEFAULT_TOPIC_TITLE
    name = slug(topic.strip().removesuffix(".md"))
    if not name or name == INDEX_NAME.lower().removesuffix(".md"):
        raise UserError(f"not a topic name: {topic!r}")
    return f"{name}.md", " ".join(topic.strip().removesuffix(".md").split())[:60]


def _write_fact(staged: Path, file_name: str, title: str, line: str, today: str) -> None:
    topic_path = staged / file_name
    if topic_path.is_file():
        text = topic_path.read_text("utf-8", errors="replace")
        topic = parse_topic(topic_path, text)
        if topic.error:
            raise UserError(f"{file_name} cannot be read ({topic.error}): fix it first")
        meta = topic.meta.model_copy(update={"updated": today})
        body = topic.body.rstrip("\n") + "\n" + line + "\n"
    else:
        meta = TopicMeta(name=title, description=DEFAULT_TOPIC_HOOK if
                         file_name == f"{DEFAULT_TOPIC}.md" else f"what the user asked to keep "
                         f"about {title}", type="user", updated=today)
        body = f"# {title}\n\n{line}\n"
    atomic_write_text(topic_path, render_topic(meta, body))
    index_path = staged / INDEX_NAME
    index_text = index_path.read_text("utf-8", errors="replace") if index_path.is_file() \
        else "# Memory\n"
    parsed = parse_index(index_text)
    if any(e.target_path == file_name for e in parsed.entries):
        return
    hook = meta.description or DEFAULT_TOPIC_HOOK
    entry = IndexEntry(title=title, target=file_name, hook=hook[:100]).render()
    atomic_write_text(index_path, index_text.rstrip("\n") + "\n" + entry + "\n")


async def remember_async(
    settings: Settings, workspace: Path, text: str, *, topic: str | None = None,
    session_id: str | None = None, after_apply: Sequence[AfterApply] = (),
) -> RememberResult:
    """Write one fact; ``UserError`` with a one-line reason when it is refused or the memory
    is busy. ``session_id`` defaults to the project's most recent session; ``after_apply``
    hooks run after the wired ones."""
    paths = ProjectPaths(settings, workspace)
    fact = _clean_fact(text)
    file_name, title = _topic_file(topic)
    if session_id is None:
        ref = await asyncio.to_thread(current_session, paths.workspace, settings.agent_home)
        session_id = ref.session_id if ref is not None else None
    today = datetime.now(UTC).date().isoformat()
    line = _fact_line(fact, session_id, today)
    memory_dir = paths.memory_dir
    write = memory_writer(*after_apply).open(
        memory_dir, source="manual", sessions=[session_id] if session_id else [],
        wait_seconds=REMEMBER_WAIT_SECONDS, poll_seconds=0.5)
    try:
        async with write as staged:
            staged.summary = f"remember: asked by the user in session {session_id or '?'}"
            await asyncio.to_thread(_write_fact, staged.path, file_name, title, line, today)
            # what the fact depends on (files, scripts, symbols…), recorded in the same run
            await asyncio.to_thread(record_anchors, staged.path, paths.workspace, [file_name])
    except LockBusy:
        raise UserError("memory is being consolidated right now: try again in a moment") \
            from None
    except MemoryValidationError as exc:
        raise UserError(f"refused: {exc}") from None
    return RememberResult(run_id=write.run_id, topic=title, file=file_name, line=line,
                          session_id=session_id)


def remember(settings: Settings, workspace: Path, text: str, *, topic: str | None = None,
             session_id: str | None = None,
             after_apply: Sequence[AfterApply] = ()) -> RememberResult:
    """``remember_async`` for callers without an event loop."""
    return asyncio.run(remember_async(settings, workspace, text, topic=topic,
                                      session_id=session_id, after_apply=after_apply))
