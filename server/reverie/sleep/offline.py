"""The offline engine: deep sleep and REM without a model, deterministic and still useful.

Deep sleep reads a session's transcript (and its notes file, when session memory kept one) and
derives:

- a summary: what was asked, the notes' current state, files changed, commands run and how many
  failed, errors that were later fixed, and the last thing the assistant said;
- memory candidates: build/test commands that worked, errors that were fixed (the failing
  command, its first error line, and that it later passed), the user's stated preferences and
  corrections, the files the session changed, and the bullet points of the notes' "Learnings"
  and "Errors & Corrections" sections.

REM merges the candidates into the existing entries by key (a known key gains the new fact, a new
key becomes a new entry), keeps every unchanged entry's recorded date and drops the oldest entries
beyond the cap.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import PurePath

from reverie.sleep.models import (
    ConversationSummary,
    EntryType,
    MemoryCandidate,
    MemoryEntry,
    normalise_key,
)
from reverie.transcripts.model import Message, ToolCall, ToolKind, ToolResult, Transcript

#: Programs whose successful runs are worth remembering as "how to build / test / lint here".
BUILD_TOOLS = frozenset({
    "pytest", "tox", "nox", "make", "cmake", "ctest", "cargo", "go", "npm", "pnpm", "yarn",
    "bun", "deno", "npx", "uv", "uvx", "poetry", "pip", "pip3", "ruff", "mypy", "pyright",
    "eslint", "prettier", "tsc", "jest", "vitest", "gradle", "gradlew", "./gradlew", "mvn",
    "docker", "just", "bazel", "dotnet", "mix", "rake", "bundle", "composer", "phpunit",
    "swift", "xcodebuild", "pre-commit", "alembic", "django-admin", "flask", "hatch", "rye",
})

_PREFERENCE = re.compile(
    r"\b(always|never|don'?t|do not|please (?:use|keep|avoid)|prefer|instead of|rather than|"
    r"make sure|no need to|stop)\b",
    re.IGNORECASE,
)
_TAG = re.compile(r"</?[A-Za-z][\w-]*>")
_NOTES_HEADER = re.compile(r"^#\s+(.+?)\s*$")
_ITALIC_LINE = re.compile(r"^\s*[_*].*[_*]\s*$")

MAX_COMMAND_CANDIDATES = 5
MAX_PREFERENCES = 5
MAX_FIXES = 5
MAX_NOTE_BULLETS = 8


def notes_sections(notes: str) -> dict[str, str]:
    """The session notes' sections (header -> body), without the italic description lines."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    just_opened = False
    for line in notes.splitlines():
        match = _NOTES_HEADER.match(line)
        if match:
            current = sections.setdefault(match.group(1).strip(), [])
            just_opened = True
            continue
        if current is None:
            continue
        if just_opened and _ITALIC_LINE.match(line):
            just_opened = False
            continue
        if line.strip():
            just_opened = False
        current.append(line)
    return {name: "\n".join(lines).strip() for name, lines in sections.items()}


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _bullets(section: str) -> list[str]:
    out = []
    for line in section.splitlines():
        stripped = line.strip()
        if stripped.startswith(("- ", "* ")):
            item = stripped[2:].strip()
            if item:
                out.append(item)
    return out


def _command_words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=False)
    except ValueError:
        return command.split()


def _program(command: str) -> str | None:
    """The first real program of a shell command (skipping ``cd x &&`` and env assignments)."""
    for segment in re.split(r"&&|\|\||;", command):
        words = _command_words(segment.strip())
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
            words = words[1:]
        if not words or words[0] in ("cd", "source", ".", "export", "set"):
            continue
        first = PurePath(words[0]).name if "/" in words[0] and words[0] != "./gradlew" else words[0]
        if first in ("python", "python3") and len(words) > 2 and words[1] == "-m":
            return words[2]
        return first
    return None


def _command_head(command: str) -> str:
    """A short, stable identity for "the same command" (first three words after the program)."""
    return " ".join(_command_words(command)[:3])


def _failed(result: ToolResult | None) -> bool:
    if result is None:
        return False
    return result.is_error or (result.exit_code is not None and result.exit_code != 0)


def _first_error_line(output: str) -> str:
    for line in output.splitlines():
        if re.search(r"error|failed|exception|traceback|not found|denied", line, re.IGNORECASE):
            return _one_line(line, 160)
    lines = [line for line in output.splitlines() if line.strip()]
    return _one_line(lines[-1], 160) if lines else "no output"


@dataclass
class SessionFacts:
    """What a transcript shows, gathered once and used for both the summary and candidates."""

    first_request: str = ""
    last_reply: str = ""
    files_changed: list[str] = field(default_factory=list)
    commands: list[tuple[str, bool]] = field(default_factory=list)  # (command, failed)
    fixes: list[tuple[str, str]] = field(default_factory=list)  # (command, first error line)
    preferences: list[str] = field(default_factory=list)
    user_turns: int = 0
    tool_calls: int = 0


def _relative(path: str, cwd: str | None) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def gather_facts(transcript: Transcript) -> SessionFacts:
    facts = SessionFacts()
    cwd = transcript.session.cwd
    results: dict[str, ToolResult] = {}
    for message in transcript.messages:
        for recorded in message.tool_results:
            results[recorded.call_id] = recorded
    calls: list[ToolCall] = []
    for message in _main_thread(transcript.messages):
        if message.role == "user" and message.text.strip() and not message.tool_results:
            facts.user_turns += 1
            if not facts.first_request:
                facts.first_request = _strip_markup(message.text)
            facts.preferences.extend(_preference_sentences(message.text))
        if message.role == "assistant":
            if message.text.strip():
                facts.last_reply = message.text.strip()
            calls.extend(message.tool_calls)
    facts.tool_calls = len(calls)
    failed_heads: dict[str, str] = {}
    fixed: set[str] = set()
    for call in calls:
        if call.kind in (ToolKind.EDIT, ToolKind.WRITE):
            for path in call.file_paths:
                rel = _relative(path, cwd)
                if rel not in facts.files_changed:
                    facts.files_changed.append(rel)
        if call.kind is ToolKind.SHELL and call.command:
            result = results.get(call.id)
            failed = _failed(result)
            facts.commands.append((call.command, failed))
            head = _command_head(call.command)
            if failed and result is not None:
                failed_heads.setdefault(head, _first_error_line(result.output))
            elif result is not None and head in failed_heads and head not in fixed:
                fixed.add(head)
                facts.fixes.append((call.command, failed_heads[head]))
    facts.preferences = list(dict.fromkeys(facts.preferences))
    return facts


def _strip_markup(text: str) -> str:
    """User text without the XML-ish wrappers agents put around slash commands."""
    return " ".join(_TAG.sub(" ", text).split())


def _common_dir(paths: Sequence[str]) -> str:
    parents = [PurePath(p).parent.parts for p in paths]
    common: list[str] = []
    for parts in zip(*parents, strict=False):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return "/".join(part for part in common if part not in ("/", ""))


def _main_thread(messages: Iterable[Message]) -> Iterable[Message]:
    return (m for m in messages if not m.is_sidechain and not m.is_meta)


def _preference_sentences(text: str) -> list[str]:
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        sentence = sentence.strip()
        if 12 <= len(sentence) <= 300 and _PREFERENCE.search(sentence):
            out.append(_one_line(sentence, 200))
    return out


def _working_commands(facts: SessionFacts) -> list[str]:
    seen: dict[str, str] = {}
    for command, failed in facts.commands:
        program = _program(command)
        if failed or program is None or program not in BUILD_TOOLS:
            continue
        seen.setdefault(_command_head(command), _one_line(command, 160))
    return list(seen.values())[:MAX_COMMAND_CANDIDATES]


def _title(transcript: Transcript, sections: dict[str, str], facts: SessionFacts) -> str:
    noted = sections.get("Session Title", "").strip()
    if noted:
        return _one_line(noted.splitlines()[0].lstrip("#-* "), 80)
    if transcript.session.title:
        return _one_line(transcript.session.title, 80)
    if facts.first_request:
        return _one_line(facts.first_request, 80)
    return f"Session {transcript.session.id[:8]}"


def summarise_offline(transcript: Transcript, notes: str | None) -> tuple[str, ConversationSummary]:
    """(title, summary + candidates) for one session, from its transcript and notes."""
    facts = gather_facts(transcript)
    sections = notes_sections(notes) if notes else {}
    title = _title(transcript, sections, facts)
    lines: list[str] = []
    if facts.first_request:
        lines.append(f"Asked: {_one_line(facts.first_request, 240)}")
    state = sections.get("Current State", "")
    if state:
        lines.append(f"State (from the session notes): {_one_line(state, 400)}")
    failed_count = sum(1 for _, failed in facts.commands if failed)
    lines.append(
        f"Activity: {facts.user_turns} user turn(s), {facts.tool_calls} tool call(s), "
        f"{len(facts.commands)} shell command(s) of which {failed_count} failed."
    )
    if facts.files_changed:
        shown = ", ".join(f"`{p}`" for p in facts.files_changed[:12])
        more = f" and {len(facts.files_changed) - 12} more" if len(facts.files_changed) > 12 else ""
        lines.append(f"Files changed ({len(facts.files_changed)}): {shown}{more}.")
    for command, error in facts.fixes[:MAX_FIXES]:
        lines.append(f"Fixed: `{_one_line(command, 100)}` failed ({error}) and later passed.")
    if facts.last_reply:
        lines.append(f"Last reply: {_one_line(facts.last_reply, 300)}")
    summary_text = "\n".join(f"- {line}" for line in lines)

    candidates: list[MemoryCandidate] = []
    for command in _working_commands(facts):
        program = _program(command) or "command"
        candidates.append(MemoryCandidate(
            key=f"command-{normalise_key(_command_head(command))}" or f"command-{program}",
            value=f"`{command}` runs successfully in this project ({program}).",
        ))
    for command, error in facts.fixes[:MAX_FIXES]:
        candidates.append(MemoryCandidate(
            key=f"fix-{normalise_key(_command_head(command))}",
            value=f"`{_one_line(command, 120)}` once failed with \"{error}\"; "
            "it passed after the session's changes.",
        ))
    for sentence in facts.preferences[:MAX_PREFERENCES]:
        candidates.append(MemoryCandidate(
            key=f"preference-{normalise_key(' '.join(sentence.split()[:6]))}",
            value=f"The user said: \"{sentence}\"",
        ))
    if facts.files_changed:
        area = normalise_key(_common_dir(facts.files_changed).replace("/", "-"))[:40] or "root"
        candidates.append(MemoryCandidate(
            key=f"files-{area}",
            value=f"Files changed for \"{title}\": " + ", ".join(facts.files_changed[:15]),
        ))
    for section in ("Learnings", "Errors & Corrections"):
        for bullet in _bullets(sections.get(section, ""))[:MAX_NOTE_BULLETS]:
            candidates.append(MemoryCandidate(
                key=f"note-{normalise_key(' '.join(bullet.split()[:6]))}",
                value=_one_line(bullet, 400),
            ))
    candidates = [c for c in candidates if normalise_key(c.key)]
    unique = {normalise_key(c.key): c for c in candidates}
    summary = ConversationSummary(
        summary=summary_text or "No activity recorded.",
        memory_candidates=list(unique.values()),
    )
    return title, summary


def _entry_type(key: str) -> EntryType:
    if key.startswith("preference-"):
        return "feedback"
    return "project"


def _humanise(key: str) -> str:
    words = key.replace("_", "-").split("-")
    return _one_line(" ".join(words).capitalize(), 80) or key


def consolidate_offline(
    existing: Sequence[MemoryEntry],
    candidates: Sequence[MemoryCandidate],
    today: Date,
    max_entries: int,
) -> list[MemoryEntry]:
    """Merge candidates into entries by key; unchanged entries keep their recorded date."""
    merged: dict[str, MemoryEntry] = {e.key: e for e in existing}
    for cand in candidates:
        key = normalise_key(cand.key)
        if not key:
            continue
        value = cand.value.strip()
        current = merged.get(key)
        if current is None:
            merged[key] = MemoryEntry(
                key=key, title=_humanise(key), description=_one_line(value, 140),
                type=_entry_type(key), content=value, recorded=today,
            )
        elif value not in current.content:
            merged[key] = current.model_copy(update={
                "content": f"{current.content.rstrip()}\n\n{value}",
                "recorded": today,
            })
    entries = list(merged.values())
    if len(entries) > max_entries:
        order = sorted(range(len(entries)), key=lambda i: (entries[i].recorded, i), reverse=True)
        kept = sorted(order[:max_entries])
        entries = [entries[i] for i in kept]
    return entries
