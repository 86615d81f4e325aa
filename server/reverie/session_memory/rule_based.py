"""The offline notes writer: deterministic notes built from the conversation itself, no model.

``build_notes`` streams the messages once through ``reverie.analysis.SessionAnalyser`` (compact
per-call facts, nothing of a message kept), renders each section from the resulting
``SessionAnalysis`` and merges the lines into the current notes file:

- lines it generated last time (remembered in the state file) are replaced by the new ones;
- every other line in a section (text a person added by hand) is kept, above the generated lines;
- a hand-written Session Title wins over the generated one;
- sections that are not in the template, and text above the first header, are kept as they are;
- a missing header or a changed italic description is restored from the template (the changed
  description is kept as an ordinary line, so nothing typed is lost).

What the notes claim follows the analysis: a check is "still failing" only when nothing later in
the session passed the same or a broader check; a fix is the change before the first passing run;
Current State is the end of the session; the title is the first real request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from reverie.analysis import (
    CommandCategory,
    ErrorFix,
    FileActivity,
    SessionAnalyser,
    SessionAnalysis,
    StatementKind,
)
from reverie.analysis.commands import is_temp_path
from reverie.analysis.outcomes import shorten
from reverie.analysis.statements import plain_statement
from reverie.redact import redact
from reverie.session_memory.template import (
    NotesSection,
    NotesTemplate,
    ParsedNotes,
    parse_notes,
)
from reverie.transcripts.model import Message, Session

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

_FENCE_LINE = re.compile(r"^\s*(```|~~~)")
_CATEGORY_ORDER = (
    CommandCategory.INSTALL, CommandCategory.BUILD, CommandCategory.RUN, CommandCategory.TEST,
    CommandCategory.LINT, CommandCategory.FORMAT, CommandCategory.TYPECHECK,
    CommandCategory.GENERATE, CommandCategory.MIGRATE, CommandCategory.DEPLOY,
)
_RULE_LABELS = {
    StatementKind.RULE: "Rule", StatementKind.PREFERENCE: "Preference",
    StatementKind.NOTE: "Note", StatementKind.CORRECTION: "Correction (standing)",
}
FINAL_ANSWER_CHARS = 2_500
#: how a line that stands for left-out items starts
SUMMARY_PREFIX = "- … "


def _budget(lines: list[str], chars: int, keep: str = "head") -> list[str]:
    """Keep whole lines within ``chars``; note how many were left out. Lines that already
    summarise ("- … 12 more failures not listed") are always kept: they say what is missing."""
    total = sum(len(line) + 1 for line in lines)
    if total <= chars:
        return lines
    summaries = [line for line in lines if line.startswith(SUMMARY_PREFIX)]
    items = [line for line in lines if not line.startswith(SUMMARY_PREFIX)]
    room = chars - sum(len(line) + 1 for line in summaries) - 60
    kept: list[str] = []
    used = 0
    for line in items if keep == "head" else reversed(items):
        if used + len(line) + 1 > room:
            break
        kept.append(line)
        used += len(line) + 1
    dropped = len(items) - len(kept)
    if keep == "head":
        return [*kept, f"{SUMMARY_PREFIX}{dropped} more not shown", *summaries]
    return [*summaries, f"{SUMMARY_PREFIX}{dropped} earlier not shown", *reversed(kept)]


def _sanitise(lines: list[str]) -> list[str]:
    """Quoted text must not look like a section header or leave a code fence open."""
    out = ["\\" + line if line.startswith("#") else line for line in lines]
    if sum(1 for line in out if _FENCE_LINE.match(line)) % 2:
        out.append("```")
    return out


def _code(text: str, limit: int = 160) -> str:
    return "`" + shorten(text, limit).replace("`", "'") + "`"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def is_trivial(analysis: SessionAnalysis) -> bool:
    """Nothing durable happened: no change, no project command, no error, nothing stated, and
    only a few short requests ("hi! what's in this folder?")."""
    return (
        not any(f.edits for f in analysis.files)
        and not analysis.commands and not analysis.errors and not analysis.rules
        and not analysis.decisions and not analysis.corrections
        and analysis.counts.requests <= 3
        and all(len(r.text) < 80 for r in analysis.requests)
        and analysis.counts.other_commands == 0
        and analysis.end.final_answer is None  # an answer the user asked for is a result
        and sum(f.reads for f in analysis.files) <= 1  # reading around for a task is work
    )


class NotesRenderer:
    """The generated lines of every section, from one session's analysis."""

    def __init__(self, analysis: SessionAnalysis) -> None:
        self.analysis = analysis

    def build(self) -> dict[str, list[str]]:
        if is_trivial(self.analysis):
            return {}  # small talk: nothing worth a line (not filler)
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
        return [shorten(self.analysis.title, 100)] if self.analysis.title else []

    def current_state(self) -> list[str]:
        end = self.analysis.end
        lines: list[str] = []
        if end.last_request:
            lines.append(f"- Latest request: {end.last_request}")
        if end.last_reply:
            lines.append(f"- Last reply from the agent: {end.last_reply}")
        if end.in_progress:
            lines.append(f"- In progress: {', '.join(end.in_progress)}")
        commits = self.analysis.commits
        kept = [c for c in commits if not c.undone]
        undone = [c for c in commits if c.undone]
        if kept:
            more = f" (+{len(kept) - 3} earlier)" if len(kept) > 3 else ""
            lines.append("- Committed: " + "; ".join(
                f"`{c.sha}` {c.message}".rstrip() for c in kept[-3:]) + more)
        if undone:
            more = f" (+{len(undone) - 3} more)" if len(undone) > 3 else ""
            lines.append("- Reverted with /undo: " + "; ".join(
                f"`{c.sha}` {c.message}".rstrip() for c in undone[-3:]) + more)
        if self.analysis.vcs:
            lines.append("- Git: " + "; ".join(dict.fromkeys(self.analysis.vcs[-3:])))
        still = self.analysis.still_failing
        for error in still[-3:]:
            if error.changed_since:
                lines.append(f"- Not re-run since the last change: {_code(error.check)} "
                             f"(failed with: {error.error})")
            else:
                lines.append(f"- Still failing: {_code(error.check)}: {error.error}")
        if end.last_check and end.last_check_ok is not None and not (
            not end.last_check_ok and still and still[-1].check == end.last_check
        ):
            verdict = "passed" if end.last_check_ok else "failed"
            lines.append(f"- Last check run: {_code(end.last_check)} {verdict}")
        return lines

    def task_specification(self) -> list[str]:
        analysis = self.analysis
        lines = [f"- {r.text}" for r in analysis.requests]
        dropped = analysis.counts.requests_dropped
        if dropped:
            head = min(4, len(lines))
            lines.insert(head, f"- … {dropped} more requests")
        for rule in analysis.current_rules:
            lines.append(f"- {_RULE_LABELS.get(rule.kind, 'Rule')}: {plain_statement(rule.text)}")
        for decision in analysis.decisions:
            if decision.superseded_by is not None:
                continue
            if decision.kind == "rename" and decision.replaces and decision.chosen:
                lines.append(f"- Rename: {_code(decision.replaces, 60)} → "
                             f"{_code(decision.chosen, 60)} ({shorten(decision.text, 200)})")
            else:
                lines.append(f"- Decision: {plain_statement(decision.text)}")
        return lines

    def files_and_functions(self) -> list[str]:
        """The files the session changed, with what it defined or changed in them (files only
        read are context, not facts: they are left out)."""
        edited = sorted((f for f in self.analysis.files if f.edits and not is_temp_path(f.path)),
                        key=lambda f: (-f.edits, f.first_seen))
        if not edited:
            # nothing changed: what the session read is what it found out from (a few files)
            read = sorted((f for f in self.analysis.files
                           if f.reads and not is_temp_path(f.path)),
                          key=lambda f: f.first_seen)
            return [f"- `{f.path}` (read)" for f in read[:8]]
        lines = [self._file_line(f) for f in edited[:60]]
        more = len(edited) - 60 + self.analysis.counts.files_dropped
        if more > 0:
            lines.append(f"{SUMMARY_PREFIX}{more} more files not listed")
        return lines

    @staticmethod
    def _file_line(stats: FileActivity) -> str:
        verb = "created" if stats.created else "edited"
        detail = f"{verb}, {_plural(stats.edits, 'edit')}"
        if stats.symbols:
            detail += "; defines/changes " + ", ".join(f"`{s}`" for s in stats.symbols[:8])
        return f"- `{stats.path}` ({detail})"

    def workflow(self) -> list[str]:
        commands = sorted(
            self.analysis.commands,
            key=lambda c: (_CATEGORY_ORDER.index(c.category)
                           if c.category in _CATEGORY_ORDER else 99, -c.runs),
        )
        avoid = {word for rule in self.analysis.current_rules for word in rule.avoid}
        lines: list[str] = []
        for command in commands:
            if command.key.split(" ", 1)[0].lower() in avoid:
                continue  # the user said not to use it ("never npm"): not the project's way
            label = command.category.value.capitalize()
            notes = [f"{command.runs}×"] if command.runs > 1 else []
            if command.working is None:
                notes.append("never passed" if command.failures else "no result seen")
                lines.append(f"- {label}: {_code(command.last, 200)} ({', '.join(notes)})")
                continue
            if command.failures:
                notes.append(f"failed {command.failures}×")
            if not command.last_ok and command.failures:
                notes.append(f"last run {_code(command.last, 120)} failed")
            suffix = f" ({', '.join(notes)})" if notes else ""
            lines.append(f"- {label}: {_code(command.working, 200)}{suffix}")
        analysis = self.analysis
        if analysis.hooks:
            blocks = "; a failing hook blocked `git commit`" if analysis.hooks_block_commits \
                else ""
            lines.append("- Pre-commit hooks: " + ", ".join(f"`{h}`" for h in analysis.hooks)
                         + blocks)
        if analysis.tracker_commands:
            lines.append("- Issue tracker: " + ", ".join(
                f"`{t}`" for t in analysis.tracker_commands))
        for path in analysis.ignored_paths[:3]:
            lines.append(f"- `{path}` is gitignored (`git add` refused it)")
        for path in analysis.quoted_paths[:3]:
            lines.append(f"- `{path}` must be quoted in shell commands")
        for missing, found in analysis.relocated_paths[:3]:
            lines.append(f"- `{found}` is the path (`{missing}` does not exist)")
        counts = analysis.counts
        if counts.commands_dropped:
            lines.append(f"- … {counts.commands_dropped} more project commands not listed")
        return lines

    def _error_line(self, error: ErrorFix) -> str:
        times = f" ({error.failures}×)" if error.failures > 1 else ""
        line = f"- {_code(error.check)} failed{times}: {error.error}"
        if error.status == "fixed" and error.fix is not None:
            what = f"running {_code(error.fix.command, 120)}" if error.fix.command \
                else f"{error.fix.essence} in `{error.fix.path}`" if error.fix.essence \
                else f"editing `{error.fix.path}`"
            more = f" (+{_plural(error.other_changes, 'other edit')})" if error.other_changes \
                else ""
            line += f" → fixed by {what}{more}"
            if error.proved_by:
                line += f"; {_code(error.proved_by, 120)} passed"
            else:
                line += " (the next run failed differently)"
        elif error.status == "passed" and error.proved_by:
            line += f" → {_code(error.proved_by, 120)} passed later, no edit in between"
        elif error.status == "still_failing" and error.changed_since:
            line += f" → {_plural(error.changed_since, 'change')} made since, not re-run"
        elif error.status == "still_failing":
            line += " → still failing at the end of the session"
        return line

    def errors_and_corrections(self) -> list[str]:
        analysis = self.analysis
        ordered = sorted(analysis.errors, key=lambda e: e.failed_at.timestamp is None)
        lines = [self._error_line(e) for e in ordered]
        if analysis.counts.errors_dropped:
            lines.append(f"- … {analysis.counts.errors_dropped} more failures not listed")
        lines.extend(f"- User correction: {c.text}" for c in analysis.corrections)
        for rule in analysis.rules:
            if rule.kind is StatementKind.CORRECTION:
                lines.append(f"- User correction: {rule.text}")
        return lines

    def codebase(self) -> list[str]:
        """The directories the session worked in most (three files or more each)."""
        by_dir: dict[str, list[str]] = {}
        for stats in self.analysis.files:
            shown = PurePosixPath(stats.path)
            names = by_dir.setdefault(str(shown.parent), [])
            if shown.name not in names:
                names.append(shown.name)
        ranked = sorted(((d, n) for d, n in by_dir.items() if len(n) >= 3),
                        key=lambda item: -len(item[1]))[:15]
        return [
            f"- `{'./' if directory == '.' else directory + '/'}`: {', '.join(names[:10])}"
            + (f" and {len(names) - 10} more" if len(names) > 10 else "")
            for directory, names in ranked
        ]

    def learnings(self) -> list[str]:
        blocked = [f"- The environment refused this more than once: {b}"
                   for b in self.analysis.blocked]
        lines = blocked + [f"- {_code(e.check)} failed and was not made to pass"
                 for e in self.analysis.still_failing if (not e.changed_since
                 and e.category is not CommandCategory.OTHER)
                 or not e.check.startswith(("Edit ", "Write ", "MultiEdit "))]
        return list(dict.fromkeys(lines))[:10]

    def key_results(self) -> list[str]:
        final = self.analysis.end.final_answer
        if final is None or len(final.strip()) < 200:
            return []
        text = final.strip()
        if len(text) > FINAL_ANSWER_CHARS:
            text = text[:FINAL_ANSWER_CHARS].rstrip() + " …"
        return text.splitlines()

    def worklog(self) -> list[str]:
        lines: list[str] = []
        dropped = self.analysis.counts.worklog_dropped
        if dropped:
            lines.append(f"- … {dropped} earlier steps not shown")
        for step in self.analysis.worklog:
            parts: list[str] = []
            if step.reads:
                parts.append(f"read {_plural(step.reads, 'file')}")
            if step.searches:
                parts.append(_plural(step.searches, "search", "searches"))
            if step.commands:
                parts.append(f"ran {_plural(step.commands, 'command')}")
            if step.edited:
                shown = ", ".join(step.edited) + (f" +{step.edited_more}" if step.edited_more
                                                   else "")
                parts.append(f"edited {shown}")
            if step.failed:
                parts.append(f"{step.failed} failed")
            summary = "; ".join(parts)
            label = step.request or "(before the first request)"
            if step.request is None and not summary:
                continue
            lines.append(f"- {label}: {summary}" if summary else f"- {label}")
        return lines


@dataclass(frozen=True, slots=True)
class OfflineNotes:
    """What the offline writer produced (crosses a process boundary: plain, picklable data)."""

    #: the merged notes file (the manager runs ``guard_update`` on it)
    text: str
    #: the builder's own lines per section (saved in the state to tell them from hand edits)
    generated: dict[str, list[str]]
    #: secrets redacted (facts from the messages + the current notes)
    redactions: int


def build_notes(
    messages: Iterable[Message],
    *,
    session: Session,
    workspace: Path,
    current_notes: str,
    template: NotesTemplate,
    previous: dict[str, list[str]] | None,
) -> OfflineNotes:
    """Offline notes from ``messages`` (iterated exactly once, raw, oldest first) merged into
    ``current_notes``. Memory stays bounded whatever the length of the session."""
    analyser = SessionAnalyser(session, workspace)
    for message in messages:
        analyser.feed(message)
    analysis = analyser.result(session)
    generated = NotesRenderer(analysis).build()
    current, found = redact(current_notes)
    merged = merge_notes(current, template, generated, previous or {})
    return OfflineNotes(merged.text, merged.generated, analysis.counts.redactions + found)


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
