"""The brief the model gets for a dream: four phases, in Reverie's own words."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from reverie.curation.brief import candidates_section, rules_section
from reverie.dream.daily_log import DAILY_LOG_BATCH, LogScan
from reverie.hazards import UNTRUSTED_DATA
from reverie.memory.store import INDEX_NAME, MAX_ENTRY_CHARS, MAX_INDEX_BYTES, MAX_INDEX_LINES

SYSTEM = """You maintain the long-term memory of a software project for AI coding agents. \
You work only with the tools you are given. You may create, edit and delete files inside the \
memory directory and nowhere else; everything else (transcripts, session notes, logs) is \
read-only. Never copy secrets, tokens or credentials into memory.""" + UNTRUSTED_DATA


def build_brief(
    *,
    memory_dir: Path,
    transcripts: Sequence[tuple[str, Path]],
    notes: Sequence[Path],
    manual: bool,
    extra: str = "",
    daily_log: LogScan | None = None,
    candidates: Sequence[str] | None = None,
    index_text: str | None = None,  # the current memory files, rendered
) -> str:
    """The user message of a dream run: the four phases, then the candidate facts Reverie
    read in the sessions (with evidence), the rules every line follows, and the current
    index."""
    session_lines = "\n".join(f"- {sid}: {path}" for sid, path in transcripts) or "- (none)"
    notes_lines = "\n".join(f"- {path}" for path in notes) or "- (none)"
    parts = [
        f"""# Memory consolidation

Turn what happened in recent coding sessions into memory the next session can use at a glance.

Memory directory: `{memory_dir}` (absolute paths inside it, or paths relative to it, both work).
Its index is `{INDEX_NAME}`; every other markdown file there is a topic file.

Sessions since the last consolidation ({len(transcripts)}), with their transcripts:
{session_lines}

Session notes already written for them (read these first, they are dense):
{notes_lines}

## 1. Look around
List the memory directory, read `{INDEX_NAME}` and skim the topic files, so you extend what \
exists instead of writing a second copy of it.

## 2. Collect what is new
Prefer the session notes; open a transcript only to check a specific detail (an error message, \
an exact command), and search it narrowly instead of reading it whole. Worth keeping: how to \
build, test and run things; errors and what fixed them; where things live in the code and why; \
decisions, preferences and lessons the user stated. Not worth keeping: one-off chatter, \
anything already in memory, anything the code itself makes obvious.

## 3. Write it down
Update the right topic file, or create one when nothing fits. Each topic file starts with YAML \
front matter: `name`, `description` (one line), `type` (user, feedback, project or reference), \
`updated` (YYYY-MM-DD) and `sources` (the session ids the facts came from). Write dates as \
absolute dates: "yesterday" or "last week" mean nothing next month. When something new \
contradicts an old memory, correct the old one where it is written rather than adding a second, \
conflicting fact.

## 4. Tidy the index
Keep `{INDEX_NAME}` a pure index: one line per topic, `- [Title](file.md) - short hook`, each \
under {MAX_ENTRY_CHARS} characters, the whole file under {MAX_INDEX_LINES} lines and \
{MAX_INDEX_BYTES // 1000} KB. Add new topics, drop lines whose file is gone or wrong, and if a \
line carries detail, move that detail into its topic file.

When you are done, reply with two or three sentences on what you changed (or say that nothing \
needed changing).""",
    ]
    if candidates is not None:
        parts.append(candidates_section(candidates))
    parts.append(rules_section())
    if index_text is not None:
        parts.append("## Current memory (the index and topic files as they are now)\n\n"
                     + (index_text.strip() or "(empty)"))
    if manual:
        parts.append("The user asked for this consolidation explicitly: do a real pass even if "
                     "only a little happened.")
    if daily_log is not None and daily_log.entries:
        lines = "\n".join(f"- [{e.entry_id}] {e.text}"
                           for e in daily_log.entries[:DAILY_LOG_BATCH])
        parts.append(f"## Daily log entries to consolidate\n\n{lines}")
    if extra.strip():
        parts.append(f"## Context from the user\n\n{extra.strip()}")
    return "\n\n".join(parts)
