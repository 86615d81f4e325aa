"""The deterministic offline consolidation engine (the default, no API key needed).

It merges the session notes and transcripts of the sessions since the last run into four topic
files (workflow and commands, errors and fixes, files and architecture, decisions and
learnings), deduplicating against what the files already hold, and keeps ``MEMORY.md`` a valid
index. Every fact is redacted, has its relative dates made absolute from its session's time and
names the session it came from; the topic's front matter lists the sources.
"""

from __future__ import annotations

import logging
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from reverie.dream.daily_log import LogEntry
from reverie.fsutil import atomic_write_text
from reverie.memory.dates import normalise_dates
from reverie.memory.store import (
    INDEX_NAME,
    IndexEntry,
    TopicMeta,
    parse_index,
    read_topic,
    render_index,
    render_topic,
)
from reverie.redact import redact
from reverie.transcripts.model import Message, ToolCall, ToolKind, ToolResult, Transcript

logger = logging.getLogger(__name__)

MAX_FACTS_PER_TOPIC = 80
MAX_NEW_PER_SESSION = 12
_TRIVIAL = {
    "ls", "cd", "pwd", "cat", "head", "tail", "echo", "wc", "which", "find", "sed", "grep",
    "rg", "true", "clear", "tree", "file", "stat", "less", "more", "sleep", "date", "whoami",
    "env", "printenv", "type", "nl", "awk", "sort", "uniq", "diff", "cut", "tr", "xargs",
}
_ERROR_WORDS = re.compile(
    r"error|failed|failure|traceback|exception|not found|no such file|denied|cannot|can't|"
    r"invalid|fatal|panic|refused|timed out|unable",
    re.IGNORECASE,
)
_INSTRUCTION = re.compile(
    r"\b(always|never|don't|do not|prefer|make sure|must|should not|shouldn't|instead of|"
    r"we decided|let's use|remember to|avoid)\b",
    re.IGNORECASE,
)
_NOTES_SECTIONS = {
    "Workflow": "workflow",
    "Errors & Corrections": "errors",
    "Files and Functions": "architecture",
    "Codebase and System Documentation": "architecture",
    "Learnings": "decisions",
}


@dataclass(frozen=True)
class Topic:
    key: str
    file: str
    name: str
    description: str
    type: str = "project"


TOPICS: dict[str, Topic] = {
    t.key: t
    for t in (
        Topic("workflow", "workflow-and-commands.md", "Workflow and commands",
              "Commands that build, test and run the project, from recent sessions"),
        Topic("errors", "errors-and-fixes.md", "Errors and fixes",
              "Errors met in recent sessions and what fixed them"),
        Topic("architecture", "files-and-architecture.md", "Files and architecture",
              "Files that were worked on and how the code base fits together"),
        Topic("decisions", "decisions-and-learnings.md", "Decisions and learnings",
              "Decisions, user preferences and lessons from recent sessions", "feedback"),
    )
}


class SessionInput(BaseModel):
    """One session to consolidate: its transcript (if readable), its notes (if any), its time."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    session_id: str
    anchor: datetime
    transcript: Transcript | None = None
    notes: str | None = None
    cwd: str | None = None


class OfflineResult(BaseModel):
    files_touched: list[str] = Field(default_factory=list)
    facts_added: int = 0
    redactions: int = 0
    summary: str = ""


@dataclass
class Fact:
    key: str
    text: str
    source: str
    day: date


@dataclass
class _Collector:
    facts: dict[str, list[Fact]] = field(default_factory=lambda: {k: [] for k in TOPICS})
    redactions: int = 0

    def add(self, topic: str, key: str, text: str, source: str, anchor: datetime) -> None:
        clean, count = redact(normalise_dates(text.strip(), anchor))
        self.redactions += count
        clean = re.sub(r"\s+", " ", clean).strip()
        if not clean:
            return
        fact_key = _bullet_key(f"- {clean}") or _norm(key)
        self.facts[topic].append(Fact(fact_key, clean, source, anchor.date()))


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9/._-]+", " ", text.lower()).strip()


def _short(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _clean_command(command: str) -> str:
    text = command.strip()
    match = re.match(r"^(?:/bin/)?(?:ba|z)?sh\s+-l?c\s+(.*)$", text, re.DOTALL)
    if match:
        inner = match.group(1).strip()
        try:
            parts = shlex.split(inner)
            inner = parts[0] if len(parts) == 1 else inner
        except ValueError:
            pass
        text = inner
    text = re.sub(r"^cd\s+\S+\s*(&&|;)\s*", "", text)
    return _short(text.splitlines()[0] if text else "", 100)


def _program(command: str) -> str:
    try:
        parts = shlex.split(command)
    except ValueError:
        parts = command.split()
    while parts and ("=" in parts[0] and not parts[0].startswith("-")):
        parts = parts[1:]  # VAR=value prefixes
    if parts and parts[0] in {"sudo", "uv", "poetry", "npx", "bunx", "pnpm", "time"}:
        head = parts[:2]
        return " ".join(head)
    return parts[0] if parts else ""


def _error_line(result: ToolResult) -> str:
    lines = [ln.strip() for ln in result.output.splitlines() if ln.strip()]
    for line in lines:
        if _ERROR_WORDS.search(line):
            return _short(line, 160)
    return _short(lines[0], 160) if lines else "no output"


def _failed(result: ToolResult | None) -> bool:
    if result is None:
        return False
    return result.is_error or (result.exit_code is not None and result.exit_code != 0)


def _relative(path: str, cwd: str | None) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1:]
    return path


def _results(messages: Sequence[Message]) -> dict[str, ToolResult]:
    return {r.call_id: r for m in messages for r in m.tool_results}


def _calls(messages: Sequence[Message]) -> list[ToolCall]:
    return [c for m in messages if not m.is_sidechain for c in m.tool_calls]


def _from_transcript(session: SessionInput, out: _Collector) -> None:
    transcript = session.transcript
    if transcript is None:
        return
    messages = transcript.messages
    results = _results(messages)
    calls = _calls(messages)
    sid = session.session_id
    anchor = session.anchor
    cwd = session.cwd or transcript.session.cwd
    # workflow: commands that worked
    worked: Counter[str] = Counter()
    order: list[str] = []
    for call in calls:
        if call.kind != ToolKind.SHELL or not call.command:
            continue
        command = _clean_command(call.command)
        program = _program(command)
        if not command or program.split(" ")[0] in _TRIVIAL:
            continue
        if not _failed(results.get(call.id)):
            if command not in worked:
                order.append(command)
            worked[command] += 1
    for command in order[:MAX_NEW_PER_SESSION]:
        runs = worked[command]
        suffix = f" (ran {runs} times)" if runs > 1 else ""
        out.add("workflow", command, f"`{command}`{suffix}", sid, anchor)
    # errors and what fixed them
    added = 0
    for position, call in enumerate(calls):
        result = results.get(call.id)
        if not _failed(result) or added >= MAX_NEW_PER_SESSION:
            continue
        assert result is not None
        if "<tool_use_error>" in result.output:
            continue  # the agent misused its own tool: not a fact about the project
        if call.kind == ToolKind.SHELL and call.command:
            what = _clean_command(call.command)
            program = _program(what)
            if program.split(" ")[0] in _TRIVIAL:
                continue
            fix = next(
                (
                    _clean_command(later.command or "")
                    for later in calls[position + 1:]
                    if later.kind == ToolKind.SHELL and later.command
                    and _program(_clean_command(later.command)) == program
                    and not _failed(results.get(later.id)) and later.id in results
                ),
                None,
            )
            text = f"`{what}` failed: {_error_line(result)}"
            if fix:
                text += f"; later `{fix}` worked"
            out.add("errors", what, text, sid, anchor)
        else:
            target = ", ".join(_relative(p, cwd) for p in call.file_paths[:2]) or call.name
            text = f"{call.name} on `{target}` failed: {_error_line(result)}"
            out.add("errors", f"{call.name} {target} {_error_line(result)}", text, sid, anchor)
        added += 1
    # files that changed
    edits: Counter[str] = Counter()
    for call in calls:
        if call.kind in (ToolKind.EDIT, ToolKind.WRITE) and not _failed(results.get(call.id)):
            for path in call.file_paths:
                edits[_relative(path, cwd)] += 1
    for path, count in edits.most_common(MAX_NEW_PER_SESSION):
        times = "once" if count == 1 else f"{count} times"
        out.add("architecture", path, f"`{path}`: changed {times}", sid, anchor)
    # decisions and preferences the user stated
    seen = 0
    for message in messages:
        if message.role != "user" or message.is_meta or message.is_sidechain or seen >= 6:
            continue
        if not message.text or message.text.lstrip().startswith("<"):
            continue
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", message.text):
            sentence = sentence.strip()
            if 12 <= len(sentence) <= 240 and _INSTRUCTION.search(sentence) and (
                "```" not in sentence
            ):
                out.add("decisions", sentence, f"User: \"{_short(sentence, 200)}\"", sid, anchor)
                seen += 1


def _notes_sections(notes: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in notes.splitlines():
        if line.startswith("# "):
            current = line[2:].strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return sections


def _items(lines: Iterable[str]) -> list[str]:
    items: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or (stripped.startswith("_") and stripped.endswith("_")):
            continue
        if stripped.startswith("#"):
            continue
        item = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", stripped)
        if line.startswith((" ", "\t")) and items:
            items[-1] = f"{items[-1]} {item}"
        else:
            items.append(item)
    return [i for i in items if len(i) >= 8]


def _from_notes(session: SessionInput, out: _Collector) -> None:
    if not session.notes:
        return
    for section, lines in _notes_sections(session.notes).items():
        topic = _NOTES_SECTIONS.get(section)
        if topic is None:
            continue
        for item in _items(lines)[:MAX_NEW_PER_SESSION]:
            text = _short(item, 240)
            out.add(topic, text, text, session.session_id, session.anchor)


_PROVENANCE = re.compile(r"\s*_\((?:session|log|user)[^)]*\)_\s*$")


def _bullet_key(line: str) -> str | None:
    if not line.startswith("- "):
        return None
    body = _PROVENANCE.sub("", line[2:])
    code = re.match(r"^`([^`]+)`", body)
    if code:
        return _norm(code.group(1))
    quoted = re.match(r'^User: "(.*)"$', body)
    if quoted:
        return _norm(quoted.group(1).rstrip("…"))
    return _norm(body)


def _merge_topic(memory_dir: Path, topic: Topic, facts: list[Fact],
                 today: date) -> tuple[bool, int]:
    """Append new facts to one topic file. Returns (file changed, facts added)."""
    path = memory_dir / topic.file
    if path.exists():
        existing = read_topic(path)
        if existing.error:
            return False, 0  # a file the user broke is theirs to fix: never overwrite it
        meta = existing.meta
        body_lines = existing.body.splitlines()
    else:
        meta = TopicMeta(name=topic.name, description=topic.description, type=topic.type)
        body_lines = [f"# {topic.name}", ""]
    known = {k for k in (_bullet_key(line) for line in body_lines) if k}
    added: list[str] = []
    sources = list(meta.sources)
    for fact in facts:
        if fact.key in known:
            continue
        known.add(fact.key)
        label = ("log" if fact.source.startswith("log:")
                 else "user" if fact.source == "user" else "session")
        source = fact.source.removeprefix("log:")
        short = source[:8] if label == "session" else ("note" if label == "user" else source)
        added.append(f"- {fact.text} _({label} {short}, {fact.day.isoformat()})_")
        if fact.source not in sources:
            sources.append(fact.source)
    if not added:
        return False, 0
    while body_lines and not body_lines[-1].strip():
        body_lines.pop()
    body_lines = [*body_lines, *([""] if body_lines and not body_lines[-1].startswith("- ")
                                 else []), *added]
    bullets = [n for n, line in enumerate(body_lines) if line.startswith("- ")]
    if len(bullets) > MAX_FACTS_PER_TOPIC:
        drop = set(bullets[: len(bullets) - MAX_FACTS_PER_TOPIC])
        body_lines = [line for n, line in enumerate(body_lines) if n not in drop]
    meta.name = meta.name or topic.name
    meta.description = meta.description or topic.description
    meta.type = meta.type or topic.type
    meta.updated = today.isoformat()
    meta.sources = sources
    atomic_write_text(path, render_topic(meta, "\n".join(body_lines)))
    return True, len(added)


def _update_index(memory_dir: Path, touched: Sequence[Topic]) -> bool:
    path = memory_dir / INDEX_NAME
    text = path.read_text("utf-8", errors="replace") if path.is_file() else ""
    parsed = parse_index(text)
    listed = {e.target_path for e in parsed.entries}
    missing = [t for t in touched if t.file not in listed]
    if not missing:
        return False
    new_lines = [IndexEntry(title=t.name, target=t.file, hook=t.description).render()
                 for t in missing]
    if not text.strip():
        entries = [IndexEntry(title=t.name, target=t.file, hook=t.description) for t in missing]
        atomic_write_text(path, render_index(entries))
        return True
    lines = parsed.lines
    insert_at = (parsed.entries[-1].line + 1) if parsed.entries else len(lines)
    if not parsed.entries and lines and lines[-1].strip():
        new_lines = ["", *new_lines]
    lines = [*lines[:insert_at], *new_lines, *lines[insert_at:]]
    atomic_write_text(path, "\n".join(lines).rstrip("\n") + "\n")
    return True


def consolidate_offline(
    memory_dir: Path,
    sessions: Sequence[SessionInput],
    *,
    extra: str = "",
    log_entries: Sequence[LogEntry] = (),
    today: date | None = None,
) -> OfflineResult:
    """Merge ``sessions`` (oldest first is best) into the memory dir at ``memory_dir``."""
    day = today or datetime.now(UTC).date()
    out = _Collector()
    for session in sorted(sessions, key=lambda s: s.anchor):
        _from_notes(session, out)
        _from_transcript(session, out)
    for entry in log_entries:
        anchor = datetime.fromisoformat(entry.day)
        out.add("decisions", entry.text, _short(entry.text, 240), f"log:{entry.day}", anchor)
    if extra.strip():
        now = datetime.combine(day, datetime.min.time())
        out.add("decisions", extra, f"User context: {_short(extra, 220)}", "user", now)
    touched: list[str] = []
    touched_topics: list[Topic] = []
    total = 0
    for key, topic in TOPICS.items():
        facts = out.facts[key]
        if not facts:
            continue
        changed, added = _merge_topic(memory_dir, topic, facts, day)
        if changed:
            touched.append(topic.file)
            touched_topics.append(topic)
            total += added
    if _update_index(memory_dir, touched_topics):
        touched.append(INDEX_NAME)
    summary = (
        f"offline consolidation of {len(sessions)} sessions: {total} new facts in "
        f"{len(touched_topics)} topic files" if total else "nothing new to consolidate"
    )
    return OfflineResult(files_touched=touched, facts_added=total,
                         redactions=out.redactions, summary=summary)


# --- the engine's whole run over session files: what a worker process calls -------------------


class SessionSource(BaseModel):
    """A session as the dream runner knows it: where its files are, nothing loaded yet."""

    session_id: str
    path: Path
    notes_path: Path | None = None
    cwd: str | None = None
    #: when the transcript has no timestamps of its own
    updated_at: datetime


def consolidate_sources(
    memory_dir: Path,
    sessions: Sequence[SessionSource],
    extra: str = "",
    log_entries: Sequence[LogEntry] = (),
) -> OfflineResult:
    """``consolidate_offline`` over session files, read here (the language server runs this in
    a worker process; ``memory_dir`` is the staging copy). An unreadable transcript is logged and
    its notes are still used."""
    inputs = [_load_source(source) for source in sessions]
    return consolidate_offline(memory_dir, inputs, extra=extra, log_entries=log_entries)


def _load_source(source: SessionSource) -> SessionInput:
    from reverie.transcripts.reader import TranscriptError, load_transcript

    transcript = None
    try:
        transcript = load_transcript(source.path, session_id=source.session_id)
    except (TranscriptError, OSError, ValueError) as exc:
        logger.warning("skipping unreadable transcript %s: %s", source.path, exc)
    notes = None
    if source.notes_path is not None:
        try:
            notes = source.notes_path.read_text("utf-8", errors="replace")
        except OSError:
            notes = None
    anchor = _session_time(transcript) or source.updated_at
    return SessionInput(session_id=source.session_id, anchor=anchor, transcript=transcript,
                        notes=notes, cwd=source.cwd)


def _session_time(transcript: Transcript | None) -> datetime | None:
    """When a session happened, from its own records (file mtimes move when files are copied)."""
    if transcript is None:
        return None
    stamps = [m.timestamp for m in transcript.messages if m.timestamp is not None]
    if stamps:
        return max(stamps)
    return transcript.session.updated_at
