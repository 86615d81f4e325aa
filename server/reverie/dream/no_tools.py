"""A dream without tools: the memory and the sessions go into the brief, the memory changes come
back as one JSON object (``MemoryChanges``) and are applied through the dream's own gate into
its staging copy, so the transaction, repair, redaction and history are the tool path's.

Used for models that cannot call tools and for the coding-agent CLI providers. The model cannot
look anything up, so the brief carries the current memory files and each session rendered to a
share of ``SESSIONS_BUDGET_CHARS`` (its notes first, then the start and the end of the
conversation; redacted).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from reverie.curation.brief import candidate_lines, candidates_section, rules_section
from reverie.dream.rule_based import SessionSource
from reverie.errors import ReverieError
from reverie.events import EventSink, JobEvent
from reverie.hazards import UNTRUSTED_DATA
from reverie.llm.structured import complete_json, schema_prompt
from reverie.llm.types import ChatMessage, ModelClient
from reverie.memory.store import INDEX_NAME, MAX_ENTRY_CHARS, MAX_INDEX_LINES, visible_files
from reverie.redact import redact
from reverie.sleep.render import render_session
from reverie.tools.gate import PathGate
from reverie.tools.no_tools import FileChange, apply_changes
from reverie.transcripts.model import Usage

#: what the brief may spend on the sessions and on the current memory (characters)
SESSIONS_BUDGET_CHARS = 48_000
MEMORY_BUDGET_CHARS = 24_000

SYSTEM = (
    "You maintain the long-term memory of a software project for AI coding agents. You cannot "
    "call tools: you answer with the memory changes as one JSON object and nothing else. Never "
    "copy secrets, tokens or credentials into memory."
) + UNTRUSTED_DATA


class MemoryChanges(BaseModel):
    """The dream's no-tools result: files to write or delete, and a one-line summary."""

    model_config = ConfigDict(extra="ignore")

    summary: str = ""
    changes: list[FileChange] = Field(default_factory=list, max_length=40)


class NoToolsRejected(ReverieError, ValueError):
    """The model's changes were not applied (a denied path, a failed write)."""


@dataclass
class NoToolsOutcome:
    turns: int
    usage: Usage
    summary: str
    written: list[str] = field(default_factory=list)
    cost_usd: float | None = None


def memory_text(staged_dir: Path) -> str:
    """The memory files as a model's brief shows them, within ``MEMORY_BUDGET_CHARS``."""
    parts: list[str] = []
    used = 0
    for name in visible_files(staged_dir):
        try:
            text = (staged_dir / name).read_text("utf-8", errors="replace")
        except OSError:
            continue
        room = MEMORY_BUDGET_CHARS - used
        if room <= 200:
            parts.append(f"### {name}\n(not shown: the memory is larger than this brief allows)")
            continue
        shown = text if len(text) <= room else text[:room] + "\n[... cut ...]"
        used += len(shown)
        parts.append(f"### {name}\n{shown}")
    return "\n\n".join(parts) or "(the memory directory is empty)"


def _render(source: SessionSource, share: int) -> str:
    """One session for the brief: its notes, then the start and end of its conversation."""
    from reverie.transcripts.reader import TranscriptError, load_transcript

    notes = None
    if source.notes_path is not None:
        try:
            notes = source.notes_path.read_text("utf-8", errors="replace")
        except OSError:
            notes = None
    try:
        transcript = load_transcript(source.path, session_id=source.session_id)
    except (TranscriptError, OSError, ValueError):
        return redact(notes or "(transcript unreadable)")[0][:share]  # redacted, then cut
    return render_session(transcript, notes, budget=share)


def build_brief(*, memory_dir: Path, staged_dir: Path, sessions: Sequence[SessionSource],
                manual: bool, extra: str, log_lines: Sequence[str]) -> str:
    """The whole no-tools brief (blocking: reads the sessions and the memory files; call via
    a thread)."""
    share = max(4_000, SESSIONS_BUDGET_CHARS // max(1, len(sessions)))
    rendered = [f"## Session {source.session_id}\n{_render(source, share)}"
                for source in sessions]
    parts = [
        "# Memory consolidation\n\nTurn what happened in the recent coding sessions below into "
        "memory the next session can use at a glance.",
        f"Memory directory: `{memory_dir}`. Its index is `{INDEX_NAME}` (one line per topic: "
        f"`- [Title](file.md) - short hook`, each under {MAX_ENTRY_CHARS} characters, at most "
        f"{MAX_INDEX_LINES} lines); every other markdown file is a topic file starting with YAML "
        "front matter (`name`, `description`, `type`: user, feedback, project or reference, "
        "`updated`: YYYY-MM-DD, `sources`: session ids). Keep what is already there; add what "
        "is new and worth keeping (how to build, test and run things; errors and their fixes; "
        "where things live; decisions and preferences the user stated); correct facts that "
        "changed; write absolute dates.",
        "## Current memory\n\n" + memory_text(staged_dir),
        candidates_section(candidate_lines(sessions)),
        rules_section(),
        "## Sessions since the last consolidation\n\n" + ("\n\n".join(rendered) or "(none)"),
    ]
    if log_lines:
        parts.append("## Daily log entries to consolidate\n\n" + "\n".join(log_lines[:200]))
    if manual:
        parts.append("The user asked for this consolidation explicitly: do a real pass even if "
                     "only a little happened.")
    if extra.strip():
        parts.append(f"## Context from the user\n\n{extra.strip()}")
    parts.append(
        "## Your answer\n\nReturn `changes`: one entry per memory file you create or change, "
        "with its path relative to the memory directory and its COMPLETE new content (or "
        "`delete: true`), and `summary`: two or three sentences on what you changed. Files you "
        "leave out stay as they are; return an empty list when nothing needs changing. "
        + schema_prompt(MemoryChanges))
    return redact("\n\n".join(parts))[0]


async def consolidate_without_tools(
    client: ModelClient, *, gate: PathGate, brief: str, max_tokens: int, events: EventSink,
    job_id: str, progress: Callable[[int], None] | None = None,
) -> NoToolsOutcome:
    """Ask, validate, apply through ``gate``. Raises ``NoToolsRejected`` (nothing applied: the
    caller's transaction is rolled back) or an ``LLMError``."""
    got = await complete_json(client, [ChatMessage(role="user", content=brief)], MemoryChanges,
                              system=SYSTEM, max_tokens=max_tokens, on_progress=progress)
    assert isinstance(got.value, MemoryChanges)
    applied = await asyncio.to_thread(apply_changes, gate, got.value.changes)
    for denial in applied.denials:
        events(JobEvent(job="dream", type="denied", job_id=job_id,
                        message=f"{denial.tool} denied: {denial.reason}",
                        payload={"tool": denial.tool, "path": denial.path,
                                 "reason": denial.reason}))
    if not applied.ok:
        problems = [f"{d.path}: {d.reason}" for d in applied.denials] + applied.errors
        raise NoToolsRejected("the model's memory changes were rejected, nothing was applied: "
                              + "; ".join(problems))
    return NoToolsOutcome(turns=got.calls, usage=got.usage,
                          summary=got.value.summary.strip()[:500],
                          written=applied.written + applied.deleted, cost_usd=got.cost_usd)
