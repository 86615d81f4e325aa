"""The notes template: ten sections, each a ``# Header`` followed by an italic description line.

This module owns everything about the notes file's *shape*: the built-in template and the user's
override, parsing a notes file into sections, ``check_notes`` (the validity guard and the editor's
diagnostics), the condensing reminders and the truncation used after compaction.

Overrides live in the config dir (``REVERIE_CONFIG_DIR``):
``<config dir>/session_memory/template.md`` and ``<config dir>/session_memory/prompt.md``.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

logger = logging.getLogger(__name__)

#: The ten section titles, in order (the spec's names: a fact that carries over).
SECTION_TITLES: tuple[str, ...] = (
    "Session Title",
    "Current State",
    "Task specification",
    "Files and Functions",
    "Workflow",
    "Errors & Corrections",
    "Codebase and System Documentation",
    "Learnings",
    "Key results",
    "Worklog",
)

MAX_SECTION_TOKENS = 2_000
MAX_TOTAL_TOKENS = 12_000

OVERRIDE_DIR_NAME = "session_memory"
TEMPLATE_OVERRIDE_NAME = "template.md"
PROMPT_OVERRIDE_NAME = "prompt.md"

TRUNCATION_MARKER = "[... section truncated for length ...]"

Severity = Literal["error", "warning"]

_FENCE = re.compile(r"^\s*(```|~~~)")
_VARIABLE = re.compile(r"\{\{(\w+)\}\}")


def approx_tokens(text: str) -> int:
    """The rough token count the budgets are expressed in (about four characters a token)."""
    return (len(text) + 3) // 4


def is_header(line: str) -> bool:
    return line.startswith("# ") and len(line.strip()) > 1


def header_title(line: str) -> str:
    return line[2:].strip()


def is_italic_description(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 2 and stripped.startswith("_") and stripped.endswith("_")


@dataclass(frozen=True, slots=True)
class TemplateSection:
    title: str
    description: str  # the italic line, underscores included


@dataclass(frozen=True, slots=True)
class NotesTemplate:
    """A parsed template. ``text`` is what a fresh notes file contains."""

    sections: tuple[TemplateSection, ...]
    text: str

    @property
    def titles(self) -> tuple[str, ...]:
        return tuple(s.title for s in self.sections)

    def section(self, title: str) -> TemplateSection | None:
        for candidate in self.sections:
            if candidate.title == title:
                return candidate
        return None


@functools.cache
def _read_package_text(name: str) -> str:
    """A built-in prompt or template (read once: every extraction needs it, on the loop).
    From the package's folder when it is one (``importlib.resources`` costs the session-start
    hook ~40 ms of imports), else through the package's loader."""
    try:
        return (_PROMPTS / name).read_text(encoding="utf-8")
    except OSError:
        from importlib import resources

        return resources.files("reverie").joinpath("prompts", name).read_text(encoding="utf-8")


_PROMPTS = Path(__file__).resolve().parent.parent / "prompts"


def parse_template(text: str) -> NotesTemplate:
    """Read headers and their italic descriptions. Raises ``ValueError`` when there are none."""
    sections: list[TemplateSection] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if not is_header(line):
            continue
        description = ""
        for following in lines[index + 1 :]:
            if not following.strip():
                continue
            if is_italic_description(following):
                description = following.strip()
            break
        sections.append(TemplateSection(header_title(line), description))
    if not sections:
        raise ValueError("the template has no '# ' section headers")
    titles = [s.title for s in sections]
    if len(set(titles)) != len(titles):
        raise ValueError("the template repeats a section header")
    normalised = text.strip("\n") + "\n"
    return NotesTemplate(tuple(sections), normalised)


def default_template() -> NotesTemplate:
    return parse_template(_read_package_text("session_memory_template.md"))


def default_update_prompt() -> str:
    return _read_package_text("session_memory_update.md")


def _override(config_dir: Path | None, name: str) -> str | None:
    if config_dir is None:
        return None
    path = config_dir / OVERRIDE_DIR_NAME / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("cannot read %s (%s); using the built-in one", path, exc)
        return None


def load_template(config_dir: Path | None) -> NotesTemplate:
    """The user's ``session_memory/template.md`` if present and valid, else the built-in one."""
    text = _override(config_dir, TEMPLATE_OVERRIDE_NAME)
    if text is not None:
        try:
            return parse_template(text)
        except ValueError as exc:
            logger.warning("ignoring the session memory template override: %s", exc)
    return default_template()


def load_update_prompt(config_dir: Path | None) -> str:
    """The user's ``session_memory/prompt.md`` if present and not blank, else the built-in one."""
    text = _override(config_dir, PROMPT_OVERRIDE_NAME)
    if text is not None and text.strip():
        return text
    return default_update_prompt()


def substitute(template: str, variables: dict[str, str]) -> str:
    """Fill ``{{name}}`` placeholders in one pass (values are never re-scanned).

    A placeholder may be spelled in snake case (``{{notes_path}}``, ours) or camel case
    (``{{notesPath}}``, the spec's): a prompt written for either is filled. Unknown names are
    left as they are.
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        for spelling in (name, _snake_case(name), _camel_case(name)):
            if spelling in variables:
                return variables[spelling]
        return match.group(0)

    return _VARIABLE.sub(replace, template)


def _snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _camel_case(name: str) -> str:
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)


# --- parsed notes ----------------------------------------------------------------------------


@dataclass(slots=True)
class NotesSection:
    """One ``# `` section of a notes file. ``body`` excludes the header and description lines."""

    title: str
    header_line: int
    description: str | None = None
    description_line: int | None = None
    body: list[str] = field(default_factory=list)

    def body_text(self) -> str:
        return "\n".join(self.body).strip("\n")


@dataclass(slots=True)
class ParsedNotes:
    preamble: list[str]
    sections: list[NotesSection]

    def get(self, title: str) -> NotesSection | None:
        for section in self.sections:
            if section.title == title:
                return section
        return None

    def render(self) -> str:
        out: list[str] = list(self.preamble)
        while out and not out[-1].strip():
            out.pop()
        for section in self.sections:
            if out:
                out.append("")
            out.append(f"# {section.title}")
            if section.description is not None:
                out.append(section.description)
            body = section.body_text()
            if body:
                out.extend(body.split("\n"))
        return "\n".join(out).strip("\n") + "\n"


def _header_positions(lines: Sequence[str]) -> list[int]:
    """Indexes of ``# `` header lines outside fenced code blocks."""
    positions: list[int] = []
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence and is_header(line):
            positions.append(index)
    return positions


def parse_notes(text: str) -> ParsedNotes:
    lines = text.splitlines()
    positions = _header_positions(lines)
    preamble = lines[: positions[0]] if positions else list(lines)
    sections: list[NotesSection] = []
    for n, start in enumerate(positions):
        end = positions[n + 1] if n + 1 < len(positions) else len(lines)
        section = NotesSection(header_title(lines[start]), start)
        cursor = start + 1
        while cursor < end and not lines[cursor].strip():
            cursor += 1
        if cursor < end and is_italic_description(lines[cursor]):
            section.description = lines[cursor].strip()
            section.description_line = cursor
            cursor += 1
        section.body = list(lines[cursor:end])
        sections.append(section)
    return ParsedNotes(preamble, sections)


# --- checks ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NotesProblem:
    """Something wrong with a notes file. ``line`` is 0-based."""

    line: int
    message: str
    severity: Severity
    section: str | None = None


def _normalise_title(title: str) -> str:
    return re.sub(r"[^a-z0-9&]+", " ", title.lower()).strip()


def check_notes(text: str, template: NotesTemplate | None = None) -> list[NotesProblem]:
    """Header, description and budget problems of a notes file, in line order.

    Errors (the validity guard rejects an update that introduces one): a header missing, renamed,
    repeated or out of order, an italic description changed or missing. Warnings: a section over
    ~2,000 tokens, the file over ~12,000 tokens, a section that is not in the template.
    ``template`` defaults to the built-in one; pass ``load_template(config_dir)`` to honour an
    override.
    """
    template = template or default_template()
    notes = parse_notes(text)
    problems: list[NotesProblem] = []
    expected = {s.title: i for i, s in enumerate(template.sections)}
    by_normalised = {_normalise_title(s.title): s.title for s in template.sections}
    seen: dict[str, NotesSection] = {}
    highest: tuple[int, str] | None = None

    for section in notes.sections:
        title = section.title
        if title not in expected:
            intended = by_normalised.get(_normalise_title(title))
            if intended is not None and intended not in seen and notes.get(intended) is None:
                problems.append(
                    NotesProblem(
                        section.header_line,
                        f"Section header changed: expected '# {intended}'",
                        "error",
                        intended,
                    )
                )
                seen[intended] = section
            else:
                problems.append(
                    NotesProblem(
                        section.header_line,
                        f"Section '# {title}' is not part of the notes template",
                        "warning",
                        title,
                    )
                )
            continue
        if title in seen:
            problems.append(
                NotesProblem(
                    section.header_line, f"Section '# {title}' appears twice", "error", title
                )
            )
            continue
        seen[title] = section
        order = expected[title]
        if highest is not None and order < highest[0]:
            problems.append(
                NotesProblem(
                    section.header_line,
                    f"Section '# {title}' is out of order: it belongs before '# {highest[1]}'",
                    "error",
                    title,
                )
            )
        else:
            highest = (order, title)
        wanted = template.sections[order].description
        if wanted and section.description != wanted:
            if section.description is None:
                line = section.header_line
                message = f"The italic description of '# {title}' is missing; expected {wanted}"
            else:
                line = section.description_line if section.description_line is not None else 0
                message = f"The italic description of '# {title}' was changed; expected {wanted}"
            problems.append(NotesProblem(line, message, "error", title))

    last_line = max(len(text.splitlines()) - 1, 0)
    for order, tmpl in enumerate(template.sections):
        if tmpl.title in seen:
            continue
        following = [
            seen[t.title].header_line for t in template.sections[order + 1 :] if t.title in seen
        ]
        line = min(following) if following else last_line
        problems.append(
            NotesProblem(line, f"Section header '# {tmpl.title}' is missing", "error", tmpl.title)
        )

    for section in notes.sections:
        tokens = approx_tokens(section.body_text())
        if tokens > MAX_SECTION_TOKENS:
            problems.append(
                NotesProblem(
                    section.header_line,
                    f"Section '# {section.title}' is ~{tokens} tokens"
                    f" (limit ~{MAX_SECTION_TOKENS}): condense it",
                    "warning",
                    section.title,
                )
            )
    total = approx_tokens(text)
    if total > MAX_TOTAL_TOKENS:
        problems.append(
            NotesProblem(
                0,
                f"The notes file is ~{total} tokens (limit ~{MAX_TOTAL_TOKENS}): condense it",
                "warning",
            )
        )
    problems.sort(key=lambda p: (p.line, p.severity != "error"))
    return problems


def structural_errors(problems: Iterable[NotesProblem]) -> set[tuple[str | None, str]]:
    """The errors of ``problems`` keyed without line numbers (so shifts do not count as new)."""
    return {(p.section, p.message) for p in problems if p.severity == "error"}


def guard_update(before: str, after: str, template: NotesTemplate) -> str | None:
    """The validity guard. Returns why ``after`` must be rejected, or ``None`` to accept it.

    Rejected: an update that introduces a structural error the previous file did not have, or
    that grows a file beyond the total budget. A hand-edited file that was already broken in some
    way is not held against the writer.
    """
    new_errors = structural_errors(check_notes(after, template)) - structural_errors(
        check_notes(before, template)
    )
    if new_errors:
        return "; ".join(sorted(message for _section, message in new_errors))
    after_tokens, before_tokens = approx_tokens(after), approx_tokens(before)
    if after_tokens > MAX_TOTAL_TOKENS and after_tokens > before_tokens:
        return f"the notes would grow to ~{after_tokens} tokens (limit ~{MAX_TOTAL_TOKENS})"
    return None


# --- prompt helpers --------------------------------------------------------------------------


def section_sizes(text: str) -> dict[str, int]:
    return {s.title: approx_tokens(s.body_text()) for s in parse_notes(text).sections}


def condensing_reminders(text: str) -> str:
    """Extra prompt text when the notes are over budget (empty when they are within it)."""
    total = approx_tokens(text)
    oversized = sorted(
        ((title, tokens) for title, tokens in section_sizes(text).items()
         if tokens > MAX_SECTION_TOKENS),
        key=lambda item: item[1],
        reverse=True,
    )
    parts: list[str] = []
    if total > MAX_TOTAL_TOKENS:
        parts.append(
            f"The notes are now ~{total} tokens, over the ~{MAX_TOTAL_TOKENS}-token limit. "
            "Shrink them in this update: shorten the largest sections, merge related items and "
            "summarise old worklog entries. Keep 'Current State' and 'Errors & Corrections' "
            "accurate."
        )
    if oversized:
        listing = "\n".join(
            f"- '# {title}': ~{tokens} tokens (limit ~{MAX_SECTION_TOKENS})"
            for title, tokens in oversized
        )
        parts.append("These sections are over their limit and must be condensed:\n" + listing)
    return ("\n\n" + "\n\n".join(parts)) if parts else ""


def truncate_for_compaction(
    text: str, max_section_tokens: int = MAX_SECTION_TOKENS
) -> tuple[str, bool]:
    """Cut every section body to about ``max_section_tokens`` at a line boundary.

    Used when the notes are injected after a compaction: the result is bounded whatever the file
    holds. Returns the text and whether anything was cut.
    """
    max_chars = max_section_tokens * 4
    lines = text.splitlines()
    positions = _header_positions(lines)
    if not positions:
        return text, False
    out: list[str] = list(lines[: positions[0]])
    truncated = False
    for n, start in enumerate(positions):
        end = positions[n + 1] if n + 1 < len(positions) else len(lines)
        out.append(lines[start])
        body = lines[start + 1 : end]
        if len("\n".join(body)) <= max_chars:
            out.extend(body)
            continue
        used = 0
        for line in body:
            if used + len(line) + 1 > max_chars:
                break
            out.append(line)
            used += len(line) + 1
        out.append(TRUNCATION_MARKER)
        truncated = True
    result = "\n".join(out)
    if text.endswith("\n"):
        result += "\n"
    return result, truncated
