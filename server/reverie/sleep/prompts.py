"""What the sleep cycle asks the model, in Reverie's own words.

Both prompts ask for JSON that the caller validates against a pydantic model; a reply that does
not validate is counted (deep sleep) or changes nothing (REM).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date as Date
from pathlib import Path

from reverie.curation.brief import RULES, candidates_section
from reverie.hazards import UNTRUSTED_DATA
from reverie.session_memory.template import substitute
from reverie.sleep.models import MemoryCandidate, MemoryEntry

logger = logging.getLogger(__name__)

SUMMARY_SYSTEM = (
    "You are Reverie's night reviewer. You read one coding-agent session from the past day and "
    "report on it for a work journal and for the project's long-term memory."
) + UNTRUSTED_DATA

SUMMARY_INSTRUCTIONS = """\
Review the session below and answer with a ConversationSummary.

summary: a few plain sentences for the journal: the goal, what was changed (name files and
commands), how it ended, and what is still open. No greetings, no speculation.

memory_candidates: facts this project's future sessions should know and that the current memory
does not already say: how to build, test or run things; conventions and decisions; pitfalls and
the fix that worked; the user's stated preferences or corrections. Each has a short kebab-case
key naming the topic and a self-contained value (one to three sentences, absolute dates).
Leave the list empty when the session taught nothing durable. Never include secrets."""

REM_SYSTEM = (
    "You are Reverie's memory keeper. Once a night you rewrite a project's long-term memory so "
    "it stays small, current and useful to the coding agents that load it."
) + UNTRUSTED_DATA

REM_INSTRUCTIONS = """\
Consolidate the memory below with what was learned on {date}.

- Fold in the new candidates that add something; merge ones that say the same thing.
- Re-read every existing entry: correct what today's journal contradicts, drop what is stale,
  duplicated or no longer useful, keep the rest.
- Return at most {max_entries} entries in total. This is a hard limit.
- Keep the key, wording and recorded date of every entry you leave unchanged; use {date} as the
  recorded date of new or changed entries. Keys are short kebab-case topic names.
- title: a few words. description: one line (under 110 characters) saying when the entry
  matters. type: user (about the person), feedback (their preferences and corrections),
  project (facts about this codebase), or reference (pointers to outside resources).
- content: the fact itself, self-contained, with absolute dates. Never include secrets."""


#: the rules every memory line follows, shared with the dream's brief
MEMORY_RULES = "Rules for every entry:\n" + RULES


def format_memory(entries: Sequence[MemoryEntry]) -> str:
    if not entries:
        return "(empty)"
    blocks = []
    for e in entries:
        blocks.append(
            f"- key: {e.key}\n  title: {e.title}\n  type: {e.type}\n"
            f"  recorded: {e.recorded.isoformat()}\n  description: {e.description}\n"
            f"  content: {e.content.strip()}"
        )
    return "\n".join(blocks)


def format_candidates(candidates: Sequence[MemoryCandidate],
                      sources: Sequence[str] | None = None,
                      review_date: Date | None = None) -> str:
    """One line per candidate; with ``sources`` (the session each came from, same order) and
    the review date, each carries its evidence."""
    if not candidates:
        return "(none)"
    lines = []
    for index, c in enumerate(candidates):
        line = f"- {c.key}: {' '.join(c.value.split())}"
        if sources is not None and index < len(sources):
            when = f", {review_date.isoformat()}" if review_date else ""
            line += f" [session {sources[index]}{when}]"
        lines.append(line)
    return "\n".join(lines)


#: user overrides, as for the session memory prompt: ``<config dir>/sleep/summary.md`` and
#: ``<config dir>/sleep/rem.md`` replace the instructions (the request's data sections stay);
#: ``rem.md`` may use ``{{date}}`` and ``{{max_entries}}`` (or ``{{maxEntries}}``)
OVERRIDE_DIR_NAME = "sleep"
SUMMARY_OVERRIDE_NAME = "summary.md"
REM_OVERRIDE_NAME = "rem.md"


def load_instructions(config_dir: Path | None, name: str) -> str | None:
    """The user's override of one sleep prompt's instructions, or None (not there, blank or
    unreadable: the built-in one is used)."""
    if config_dir is None:
        return None
    path = config_dir / OVERRIDE_DIR_NAME / name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("cannot read %s (%s); using the built-in prompt", path, exc)
        return None
    return text if text.strip() else None


def summary_request_text(memory: Sequence[MemoryEntry], session_text: str,
                         instructions: str | None = None) -> str:
    return (
        f"{instructions or SUMMARY_INSTRUCTIONS}\n\n## Current memory\n{format_memory(memory)}"
        f"\n\n## Session\n{session_text}"
    )


def rem_request_text(
    review_date: Date,
    max_entries: int,
    memory: Sequence[MemoryEntry],
    journal: str,
    candidates: Sequence[MemoryCandidate],
    sources: Sequence[str] | None = None,
    override: str | None = None,
    facts: Sequence[str] | None = None,
) -> str:
    if override is not None:
        instructions = substitute(override, {"date": review_date.isoformat(),
                                             "max_entries": str(max_entries)})
    else:
        instructions = REM_INSTRUCTIONS.format(date=review_date.isoformat(),
                                               max_entries=max_entries)
    return (
        f"{instructions}\n\n{MEMORY_RULES}\n\n"
        f"## Current memory ({len(memory)} entries)\n{format_memory(memory)}\n\n"
        f"## Today's journal\n{journal.strip()}\n\n## New candidates (with their evidence)\n"
        f"{format_candidates(candidates, sources, review_date)}"
        + (f"\n\n{candidates_section(facts)}" if facts is not None else "")
    )
