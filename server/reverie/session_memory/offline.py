"""The offline notes writer: deterministic notes built from the conversation itself, no model.

It rebuilds its own lines from the whole (redacted) conversation on every run and merges them
into the current notes file:

- lines it generated last time (remembered in the state file) are replaced by the new ones;
- every other line in a section (text a person added by hand) is kept, above the generated lines;
- a hand-written Session Title wins over the generated one;
- sections that are not in the template, and text above the first header, are kept as they are;
- a missing header or a changed italic description is restored from the template (the changed
  description is kept as an ordinary line, so nothing typed is lost).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from reverie.session_memory.conversation import (
    CallOutcome,
    error_summary,
    first_line,
    is_correction,
    pair_calls,
    shorten,
    user_request_text,
)
from reverie.session_memory.cursor import last_assistant_turn, last_turn_has_tool_calls
from reverie.session_memory.template import (
    NotesSection,
    NotesTemplate,
    ParsedNotes,
    parse_notes,
)
from reverie.transcripts.model import Message, Session, ToolCall, ToolKind

#: Rough character budgets per generated section (the whole stays well under 12,000 tokens).
SECTION_CHARS: dict[str, int] = {
    "Session Title": 120,
    "Current State": 1_600,
    "Task specification": 4_000,
    "Files and Functions": 5_000,
    "Workflow": 3_000,
    "Errors & Corrections": 5_000,
    "Codebase and System Documentation": 2_500,
    "Learnings": 1_500,
    "Key results": 3_000,
    "Worklog": 6_000,
}

_DEFINITION = re.compile(
    r"^\s*(?:export\s+)?(?:async\s+)?(?:def|class|function|func|fn|defp?|defmodule|interface|"
    r"struct|enum|trait|impl|type|const)\s+([A-Za-z_][\w.!?]*)",
    re.MULTILINE,
)
_FENCE_LINE = re.compile(r"^\s*(```|~~~)")
_EDIT_TEXT_KEYS = ("new_string", "content", "new_str", "file_text", "patch", "input")
#: Tools that poll a running command (Codex's PTY): their results repeat the command's own.
_POLL_TOOLS = frozenset({"write_stdin"})
_SEARCH_COMMANDS = frozenset({"rg", "grep", "egrep", "fgrep", "ag", "ack"})
_SHELL_NAMES = frozenset({"bash", "shell", "exec_command", "run_shell_command", "local_shell"})


@dataclass(slots=True)
class _FileStats:
    path: str
    first_seen: int
    reads: int = 0
    edits: int = 0
    created: bool = False
    symbols: list[str] = field(default_factory=list)


class _Paths:
    """Shows paths relative to the workspace (or the session's cwd) when they are inside it."""

    def __init__(self, roots: Sequence[str]) -> None:
        self.roots = [r.rstrip("/") for r in roots if r]

    def show(self, raw: str) -> str:
        path = raw.strip()
        for root in self.roots:
            if path == root:
                return "."
            if path.startswith(root + "/"):
                return path[len(root) + 1 :]
        return path


def _budget(lines: list[str], chars: int, keep: str = "head") -> list[str]:
    """Keep whole lines within ``chars``; note how many were left out."""
    total = sum(len(line) + 1 for line in lines)
    if total <= chars:
        return lines
    kept: list[str] = []
    used = 0
    ordered = lines if keep == "head" else list(reversed(lines))
    for line in ordered:
        if used + len(line) + 1 > chars - 60:
            break
        kept.append(line)
        used += len(line) + 1
    dropped = len(lines) - len(kept)
    if keep == "head":
        return [*kept, f"- … {dropped} more not shown"]
    return [f"- … {dropped} earlier not shown", *reversed(kept)]


def _sanitise(lines: list[str]) -> list[str]:
    """Quoted text must not look like a section header or leave a code fence open."""
    out = ["\\" + line if line.startswith("#") else line for line in lines]
    if sum(1 for line in out if _FENCE_LINE.match(line)) % 2:
        out.append("```")
    return out


def _command_of(call: ToolCall) -> str | None:
    if call.command and call.command.strip():
        return call.command.strip()
    if call.name.lower() in _SHELL_NAMES:
        for key in ("command", "cmd"):
            value = call.input.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
            if isinstance(value, list) and value:
                return " ".join(str(v) for v in value)
    return None


def _really_failed(outcome: CallOutcome) -> bool:
    """A failure worth reporting: not a PTY poll, not a search that merely found nothing."""
    if not outcome.failed or outcome.call.name in _POLL_TOOLS:
        return False
    command = _command_of(outcome.call)
    result = outcome.result
    if command and result is not None and not result.output.strip():
        words = command.split()
        if words and words[0] in _SEARCH_COMMANDS:
            return False  # exit status 1 with no output: no matches
    return True


def _command_key(command: str) -> str:
    return " ".join(command.split())


def _edited_symbols(call: ToolCall) -> list[str]:
    names: list[str] = []
    for key in _EDIT_TEXT_KEYS:
        value = call.input.get(key)
        if isinstance(value, str):
            names.extend(m.group(1) for m in _DEFINITION.finditer(value))
    edits = call.input.get("edits")
    if isinstance(edits, list):
        for edit in edits:
            if isinstance(edit, dict) and isinstance(edit.get("new_string"), str):
                names.extend(m.group(1) for m in _DEFINITION.finditer(edit["new_string"]))
    return names


class OfflineNotesBuilder:
    """Builds the generated lines of every section from one conversation."""

    def __init__(self, messages: Sequence[Message], session: Session, workspace: Path) -> None:
        self.messages = list(messages)
        self.session = session
        roots = [str(workspace)]
        if session.cwd:
            roots.insert(0, session.cwd)
        self.paths = _Paths(roots)
        self.calls = pair_calls(self.messages)
        self.requests: list[tuple[int, str]] = [
            (i, text) for i, m in enumerate(self.messages)
            if (text := user_request_text(m)) is not None
        ]

    # -- sections --------------------------------------------------------------------------

    def build(self) -> dict[str, list[str]]:
        sections = {
            "Session Title": self.title(),
            "Current State": self.current_state(),
            "Task specification": self.task_specification(),
            "Files and Functions": self.files_and_functions(),
            "Workflow": self.workflow(),
            "Errors & Corrections": self.errors_and_corrections(),
            "Codebase and System Documentation": self.codebase(),
            "Learnings": self.learnings(),
            "Key results": self.key_results(),
            "Worklog": self.worklog(),
        }
        return {
            title: _sanitise(
                _budget(lines, SECTION_CHARS.get(title, 3_000),
                        "tail" if title == "Worklog" else "head")
            )
            for title, lines in sections.items()
        }

    def title(self) -> list[str]:
        if self.session.title and self.session.title_source == "summary":
            return [shorten(self.session.title, 100)]
        if not self.requests:
            return []
        words = first_line(self.requests[0][1], 400).split()
        title = " ".join(words[:12])
        return [shorten(title, 100)] if title else []

    def current_state(self) -> list[str]:
        lines: list[str] = []
        if self.requests:
            lines.append(f"- Latest request: {shorten(self.requests[-1][1], 300)}")
        last_text = next(
            (m.text for m in reversed(self.messages)
             if m.role == "assistant" and not m.is_sidechain and m.text.strip()),
            None,
        )
        if last_text:
            lines.append(f"- Last reply from the agent: {shorten(last_text, 500)}")
        main = [m for m in self.messages if not m.is_sidechain]
        if last_turn_has_tool_calls(main):
            pending = [c for m in last_assistant_turn(main) for c in m.tool_calls][-3:]
            described = ", ".join(self._describe_call(c) for c in pending)
            lines.append(f"- In progress: {described}")
        unresolved = self._unresolved_failures()
        if unresolved:
            last = unresolved[-1]
            lines.append(
                f"- Still failing: {self._describe_call(last.call)}: "
                f"{error_summary(last.result.output if last.result else '', 160)}"
            )
        return lines

    def task_specification(self) -> list[str]:
        seen: set[str] = set()
        items: list[str] = []
        for _index, text in self.requests:
            key = " ".join(text.lower().split())[:200]
            if key in seen:
                continue
            seen.add(key)
            items.append(f"- {shorten(text, 400)}")
        if len(items) > 14:
            items = [*items[:4], f"- … {len(items) - 12} more requests", *items[-8:]]
        return items

    def files_and_functions(self) -> list[str]:
        files: dict[str, _FileStats] = {}
        for n, outcome in enumerate(self.calls):
            call = outcome.call
            if call.kind not in (ToolKind.READ, ToolKind.EDIT, ToolKind.WRITE):
                continue
            if outcome.failed:
                continue
            for raw in call.file_paths:
                shown = self.paths.show(raw)
                stats = files.setdefault(shown, _FileStats(shown, n))
                if call.kind == ToolKind.READ:
                    stats.reads += 1
                else:
                    stats.edits += 1
                    if call.kind == ToolKind.WRITE and stats.edits == 1 and stats.reads == 0:
                        stats.created = True
                    for name in _edited_symbols(call):
                        if name not in stats.symbols:
                            stats.symbols.append(name)
        edited = sorted((s for s in files.values() if s.edits),
                        key=lambda s: (-s.edits, s.first_seen))
        read_only = sorted((s for s in files.values() if not s.edits),
                           key=lambda s: (-s.reads, s.first_seen))
        lines: list[str] = []
        for stats in edited:
            verb = "created" if stats.created else "edited"
            detail = f"{verb}, {stats.edits} edit{'s' if stats.edits != 1 else ''}"
            if stats.reads:
                detail += f", read {stats.reads}×"
            if stats.symbols:
                detail += "; defines/changes " + ", ".join(f"`{s}`" for s in stats.symbols[:8])
            lines.append(f"- `{stats.path}` ({detail})")
        for stats in read_only[:25]:
            lines.append(f"- `{stats.path}` (read {stats.reads}×)")
        if len(read_only) > 25:
            lines.append(f"- … {len(read_only) - 25} more files read")
        return lines

    def workflow(self) -> list[str]:
        order: list[str] = []
        counts: Counter[str] = Counter()
        failures: Counter[str] = Counter()
        for outcome in self.calls:
            command = _command_of(outcome.call)
            if command is None:
                continue
            key = _command_key(command)
            if key not in counts:
                order.append(key)
            counts[key] += 1
            if _really_failed(outcome):
                failures[key] += 1
        if len(order) > 30:
            frequent = {k for k, _ in counts.most_common(30)}
            order = [k for k in order if k in frequent]
        lines: list[str] = []
        for key in order:
            notes: list[str] = []
            if counts[key] > 1:
                notes.append(f"{counts[key]}×")
            if failures[key]:
                notes.append(f"failed {failures[key]}×")
            suffix = f" ({', '.join(notes)})" if notes else ""
            lines.append(f"- `{shorten(key, 200)}`{suffix}")
        return lines

    def errors_and_corrections(self) -> list[str]:
        lines: list[str] = []
        for n, outcome in enumerate(self.calls):
            if not _really_failed(outcome):
                continue
            what = self._describe_call(outcome.call)
            why = error_summary(outcome.result.output if outcome.result else "", 200)
            fix = self._fix_for(n)
            line = f"- {what} failed: {why}"
            if fix:
                line += f" → {fix}"
            lines.append(line)
        for _index, text in self.requests[1:]:
            if is_correction(text):
                lines.append(f"- User correction: {shorten(text, 300)}")
        return lines

    def codebase(self) -> list[str]:
        by_dir: dict[str, list[str]] = {}
        for outcome in self.calls:
            call = outcome.call
            if call.kind not in (ToolKind.READ, ToolKind.EDIT, ToolKind.WRITE) or outcome.failed:
                continue
            for raw in call.file_paths:
                shown = PurePosixPath(self.paths.show(raw))
                directory = str(shown.parent)
                names = by_dir.setdefault(directory, [])
                if shown.name not in names:
                    names.append(shown.name)
        ranked = sorted(by_dir.items(), key=lambda item: -len(item[1]))[:15]
        return [
            f"- `{'./' if directory == '.' else directory + '/'}`: {', '.join(names[:10])}"
            + (f" and {len(names) - 10} more" if len(names) > 10 else "")
            for directory, names in ranked
        ]

    def learnings(self) -> list[str]:
        lines: list[str] = []
        for outcome in self._unresolved_failures():
            command = _command_of(outcome.call)
            if command:
                lines.append(f"- `{shorten(command, 160)}` failed and was not made to pass")
        return list(dict.fromkeys(lines))[:10]

    def key_results(self) -> list[str]:
        main = [m for m in self.messages if not m.is_sidechain]
        if not main or last_turn_has_tool_calls(main):
            return []
        final = next((m for m in reversed(main) if m.role == "assistant" and m.text.strip()), None)
        if final is None or len(final.text.strip()) < 200:
            return []
        text = final.text.strip()
        if len(text) > 2_500:
            text = text[:2_500].rstrip() + " …"
        return ["Final answer of the latest exchange:", "", *text.splitlines()]

    def worklog(self) -> list[str]:
        bounds = [i for i, _ in self.requests] + [len(self.messages)]
        lines: list[str] = []
        if self.requests and self.requests[0][0] > 0:
            bounds.insert(0, 0)
        request_at = dict(self.requests)
        for start, end in itertools.pairwise(bounds):
            calls = [c for c in self.calls if start <= c.index < end]
            label = (
                shorten(request_at[start], 90) if start in request_at
                else "(before the first request)"
            )
            summary = self._summarise_calls(calls)
            if start not in request_at and not summary:
                continue
            lines.append(f"- {label}: {summary}" if summary else f"- {label}")
        return lines

    # -- helpers ---------------------------------------------------------------------------

    def _describe_call(self, call: ToolCall) -> str:
        command = _command_of(call)
        if command:
            return f"`{shorten(command, 160)}`"
        if call.file_paths:
            return f"{call.name} `{self.paths.show(call.file_paths[0])}`"
        return f"{call.name}"

    def _target_key(self, call: ToolCall) -> str:
        command = _command_of(call)
        if command:
            return "cmd:" + " ".join(command.split()[:3])
        if call.file_paths:
            return f"{call.name}:{call.file_paths[0]}"
        return f"tool:{call.name}"

    def _fix_for(self, n: int) -> str | None:
        failed = self.calls[n]
        key = self._target_key(failed.call)
        edited: list[str] = []
        for later in self.calls[n + 1 :]:
            if later.call.kind in (ToolKind.EDIT, ToolKind.WRITE) and not later.failed:
                for raw in later.call.file_paths:
                    shown = self.paths.show(raw)
                    if shown not in edited:
                        edited.append(shown)
            if self._target_key(later.call) == key and later.result is not None:
                if later.failed:
                    continue
                if edited and not key.startswith(("Edit:", "Write:", "MultiEdit:")):
                    return "passed after editing " + ", ".join(f"`{e}`" for e in edited[:4])
                return f"then {self._describe_call(later.call)} succeeded"
        if failed.call.kind in (ToolKind.EDIT, ToolKind.WRITE) and failed.call.file_paths:
            target = failed.call.file_paths[0]
            for later in self.calls[n + 1 :]:
                if (later.call.kind in (ToolKind.EDIT, ToolKind.WRITE) and not later.failed
                        and target in later.call.file_paths):
                    return f"then {later.call.name} `{self.paths.show(target)}` succeeded"
        return None

    def _unresolved_failures(self) -> list[CallOutcome]:
        unresolved: list[CallOutcome] = []
        for n, outcome in enumerate(self.calls):
            if _really_failed(outcome) and _command_of(outcome.call) and self._fix_for(n) is None:
                unresolved.append(outcome)
        return unresolved

    def _summarise_calls(self, calls: list[CallOutcome]) -> str:
        if not calls:
            return ""
        edited: list[str] = []
        reads = commands = failed = searches = 0
        for outcome in calls:
            call = outcome.call
            if _really_failed(outcome):
                failed += 1
            if call.kind in (ToolKind.EDIT, ToolKind.WRITE) and not outcome.failed:
                for raw in call.file_paths:
                    shown = PurePosixPath(self.paths.show(raw)).name
                    if shown not in edited:
                        edited.append(shown)
            elif call.kind == ToolKind.READ:
                reads += 1
            elif _command_of(call):
                commands += 1
            elif call.kind in (ToolKind.SEARCH, ToolKind.WEB):
                searches += 1
        parts: list[str] = []
        if reads:
            parts.append(f"read {reads} file{'s' if reads != 1 else ''}")
        if searches:
            parts.append(f"{searches} search{'es' if searches != 1 else ''}")
        if commands:
            parts.append(f"ran {commands} command{'s' if commands != 1 else ''}")
        if edited:
            shown = ", ".join(edited[:5]) + (f" +{len(edited) - 5}" if len(edited) > 5 else "")
            parts.append(f"edited {shown}")
        if failed:
            parts.append(f"{failed} failed")
        return "; ".join(parts)


# --- merging into the notes file --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MergeResult:
    text: str
    generated: dict[str, list[str]]


def merge_notes(
    current: str,
    template: NotesTemplate,
    generated: dict[str, list[str]],
    previously_generated: dict[str, list[str]],
) -> MergeResult:
    """Put this run's generated lines into ``current``, keeping everything a person wrote."""
    notes = parse_notes(current)
    known = {s.title for s in template.sections}
    # Unknown sections follow the known section that preceded them in the file.
    trailing: dict[str | None, list[NotesSection]] = {}
    anchor: str | None = None
    for section in notes.sections:
        if section.title in known:
            anchor = section.title
        else:
            trailing.setdefault(anchor, []).append(section)

    out_sections: list[NotesSection] = list(trailing.get(None, []))
    written: dict[str, list[str]] = {}
    for tmpl in template.sections:
        existing = notes.get(tmpl.title)
        old_generated = set(previously_generated.get(tmpl.title, []))
        user_lines: list[str] = []
        if existing is not None:
            if existing.description is not None and existing.description != tmpl.description:
                user_lines.append(existing.description)
            user_lines.extend(line for line in existing.body if line not in old_generated)
        while user_lines and not user_lines[0].strip():
            user_lines.pop(0)
        while user_lines and not user_lines[-1].strip():
            user_lines.pop()
        new_lines = list(generated.get(tmpl.title, []))
        if tmpl.title == "Session Title" and any(line.strip() for line in user_lines):
            new_lines = []
        # a line equal to one generated now is not kept twice (e.g. the state file was lost)
        fresh = {line for line in new_lines if line.strip()}
        user_lines = [line for line in user_lines if line not in fresh]
        written[tmpl.title] = new_lines
        body = list(user_lines)
        if body and new_lines:
            body.append("")
        body.extend(new_lines)
        out_sections.append(
            NotesSection(tmpl.title, 0, tmpl.description or None, None, body)
        )
        out_sections.extend(trailing.get(tmpl.title, []))
    rendered = ParsedNotes(notes.preamble, out_sections).render()
    return MergeResult(rendered, written)
