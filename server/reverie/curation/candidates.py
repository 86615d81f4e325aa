"""One session's analysis -> candidate facts for memory.

Only what stays true beyond the session becomes a fact: standing rules and preferences (as plain
statements), decisions and renames, the commands that build / test / run / lint the project in
the form that worked, and errors with the change that fixed them. One-off requests, exploration,
the agent's own tool slips and failures nothing fixed never do. Every text is redacted before it
is formatted, and relative dates are made absolute from the session's time.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from reverie.analysis.commands import PROJECT_CATEGORIES, analyse_command
from reverie.analysis.models import Decision, ErrorFix, ProjectCommand, Rule, SessionAnalysis
from reverie.analysis.statements import StatementKind, plain_statement, statements_in, subject_of
from reverie.curation.facts import Fact, FactKind
from reverie.curation.lexicon import choice_of, subject_fields
from reverie.curation.topics import (
    COMMAND_LABELS,
    clean,
    code,
    command_slot,
    fix_slot,
    humanise,
    parse_fact,
    slug,
)
from reverie.memory.dates import normalise_dates

_CHAT = re.compile(
    r"^(?:change of plans?(?: (?:for|on) [\w -]{1,30}?)?|decision|update|heads up|ok(?:ay)?|so|"
    r"also|actually)\s*[:,\-—!.]\s*",
    re.IGNORECASE,
)
#: nouns a rename names the kind of thing with ("the Guide section"), not the thing
_KIND_NOUNS = frozenset({
    "section", "hook", "function", "method", "file", "class", "module", "component", "page",
    "folder", "directory", "package", "variable", "field", "column", "table", "route",
    "endpoint", "command", "script", "service", "type", "interface", "test", "tests",
})
#: a correction worth keeping names a value: a version, a flag, a path, code
_CONCRETE = re.compile(r"\d+\.\d+|`[^`]+`|\s--?[a-z][\w-]*|\w/\w|\.\w{2,4}\b")
_NEXT_SENTENCE = re.compile(r"^\s*([^.!?]{8,200}[.!])(?:\s|$)")
_MAX_STATEMENT = 220


_GERUNDS = {"commit": "committing", "push": "pushing", "finish": "finishing",
            "merge": "merging", "deploy": "deploying", "release": "releasing",
            "ship": "shipping", "submit": "submitting", "open": "opening"}
#: chat wording -> a plain statement ("we never use X" -> "Never use X")
_DECHAT: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bbefore you (?:tell|say to) me (?:that )?(?:something|it|anything) is done\b",
                re.I), "before reporting something as done"),
    (re.compile(r"\bbefore you (" + "|".join(_GERUNDS) + r")\b", re.I),
     "before {gerund}"),
    (re.compile(r"^(?:we|I)\s+(always|never|don't|do not|no longer)\s+", re.I), r"\1 "),
    (re.compile(r"^(?:we|I)(?:'ll| will| are going to|'re going to)?\s+(use|run|deploy|build)\b",
                re.I), r"\1"),
    (re.compile(r"^(?:we|I)(?:'re| are)\s+(\w+ing)\b", re.I), r"\1"),
    (re.compile(r"([,;—-]\s*)we\s+(move|switch|migrate|go)\s+to\b", re.I), r"\1\2 to"),
    (re.compile(r"\bwe use\b", re.I), "use"),
    (re.compile(r"([,;—-]\s*)you\s+(regenerate|run|use|need)\b", re.I), r"\1\2"),
)


def _dechat(text: str) -> str:
    for pattern, replacement in _DECHAT:
        if "{gerund}" in replacement:
            text = pattern.sub(lambda m: f"before {_GERUNDS[m.group(1).lower()]}", text)
        else:
            text = pattern.sub(replacement, text)
    return text


def sentence(text: str, anchor: datetime) -> str:
    """A chat sentence as a plain, redacted, dated statement ending in a full stop."""
    core = _dechat(_CHAT.sub("", plain_statement(clean(text))).strip().lstrip("—–-:;,. "))
    core = normalise_dates(core, anchor)
    if not core:
        return ""
    core = core[0].upper() + core[1:]
    if len(core) > _MAX_STATEMENT:
        core = core[: _MAX_STATEMENT - 1].rsplit(" ", 1)[0] + "…"
    return core if core.endswith((".", "!", "…", "`", ")")) else core + "."


def _statement_fact(kind: FactKind, item: Rule | Decision, analysis: SessionAnalysis,
                    anchor: datetime) -> Fact | None:
    at = item.evidence.timestamp or anchor
    text = sentence(item.text, anchor)
    if not text:
        return None
    if kind == "rename" and item.replaces and item.chosen:
        old, new = clean(item.replaces), clean(item.chosen.rstrip(".,;:"))
        if old.lower() in _KIND_NOUNS:
            # "Rename the Guide section to How-to": the name is the word before the noun
            named = re.search(rf"(\S+)\s+{re.escape(old)}\b", item.text, re.IGNORECASE)
            if named is None or named.group(1).lower() in ("the", "a", "this", "rename"):
                return None
            old = clean(named.group(1).strip("`'\""))
        text = f"`{old}` was renamed to `{new}` (on {at.date().isoformat()})."
        return Fact(slot=f"rename:{old}", kind="rename", text=text, at=at,
                    subject=item.subject, session=analysis.session_id,
                    sources=[analysis.session_id], first=at.date(), replaces=old, choice=new)
    if kind == "decision" and (not item.chosen or (item.replaces or "").lower() ==
                               item.chosen.lower()):
        # "we no longer use X." says what goes; the sentence after it says what comes instead
        following = _sentence_after(item, analysis)
        if following:
            text = sentence(f"{text.rstrip('.')}; {following}", anchor)
    fields = subject_fields(item.subject, text)
    if fields["choice"] is None and kind == "decision" and item.chosen:
        fields["choice"] = clean(item.chosen).strip("`'\".,;:").lower() or None
    replaces = clean(item.replaces).strip("`'\".,;:").lower() if item.replaces else None
    return Fact(slot=f"s:{item.subject}:{slug(text)[:48]}", kind=kind, text=text, at=at,
                session=analysis.session_id, sources=[analysis.session_id], first=at.date(),
                replaces=replaces, **fields)  # type: ignore[arg-type]


#: sub-commands that change the dependencies once: what was added is in the lockfile, the
#: command is not worth remembering
_ONE_OFF = re.compile(r"^(?:\S+\s+)?(?:add|remove|rm|uninstall|un|i|install|upgrade|update)\s+"
                      r"(?!-)\S")
_WRAPPERS = re.compile(r"^(?:timeout\s+\S+|time|nice(?:\s+-n\s*\S+)?|nohup|sudo)\s+")


def working_form(command: str) -> str:
    """The part of a command line worth remembering: the main command, no ``cd x &&``, no
    ``rm …&&`` preparation, no ``timeout 5`` wrapper."""
    main = analyse_command(command).main or command
    previous = None
    while previous != main:
        previous, main = main, _WRAPPERS.sub("", main)
    return main.strip()


def project_form(command: str) -> str | None:
    """The command as memory keeps it: a chain only when every step is a project command
    (``ruff check . && mypy billing``), else its main command; ``None`` for one-off changes."""
    steps = [working_form(step) for step in re.split(r"\s*(?:&&|;)\s*", command) if step.strip()]
    steps = [step for step in steps if step and not re.match(r"^cd\s", step)]
    if not steps or "||" in command:
        return None
    if any(_ONE_OFF.match(step) for step in steps):
        return None
    if len(steps) > 1 and all(analyse_command(step).is_project for step in steps):
        return " && ".join(steps)
    main = working_form(command)
    return None if "&&" in main or ";" in main or _ONE_OFF.match(main) else main


def _sentence_after(item: Rule | Decision, analysis: SessionAnalysis) -> str:
    """The sentence that follows ``item`` in the user's message, if it is a statement (the
    request may hold the message with the decision taken out, or whole)."""
    for request in analysis.requests:
        at = request.text.find(item.text)
        if at >= 0:
            rest = request.text[at + len(item.text):]
        elif request.evidence.message_id == item.evidence.message_id:
            rest = request.text
        else:
            continue
        match = _NEXT_SENTENCE.match(rest)
        if match and "?" not in match.group(1):
            return match.group(1).strip()
    return ""


def _command_fact(command: ProjectCommand, analysis: SessionAnalysis,
                  anchor: datetime) -> Fact | None:
    if command.category not in PROJECT_CATEGORIES or not command.working:
        return None
    form = project_form(command.working)
    if form is None:
        return None  # a one-off dependency change or a chain with other steps in it
    category = str(command.category)
    label = COMMAND_LABELS.get(category, humanise(category))
    at = command.evidence.timestamp or anchor
    return Fact(slot=command_slot(category, form), kind="command", text=code(form), at=at,
                label=label, session=analysis.session_id, sources=[analysis.session_id],
                first=at.date())


_TEST_FILE = re.compile(r"(?:^|/)(?:tests?/|test_[^/]*$|[^/]*_test\.\w+$|"
                        r"[^/]*\.(?:test|spec)\.\w+$)")


def _is_test(path: str) -> bool:
    return _TEST_FILE.search(path) is not None


def _is_doc(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith((".md", ".rst", ".txt", ".adoc")) or name.startswith(
        ("changelog", "readme", "license", "authors"))


#: commands that change the project (a dependency installed, code generated, files formatted)
_FIXING = frozenset({"install", "build", "format", "migrate", "other"})


def _installed_between(error: ErrorFix, analysis: SessionAnalysis) -> str:
    """A command that changed the project between a failure and the pass that proved it
    fixed (a dependency installed, code regenerated): the fix when no file was edited."""
    start = error.failed_at.timestamp
    end = error.proved_at.timestamp if error.proved_at else None
    if start is None or end is None:
        return ""
    for command in analysis.commands:
        stamp = command.evidence.timestamp
        if command.category in _FIXING and command.working and stamp is not None and \
                start < stamp < end and command.key.split()[:1] != error.check.split()[:1]:
            return working_form(command.working)
    return ""


def _fix_fact(error: ErrorFix, analysis: SessionAnalysis, anchor: datetime) -> Fact | None:
    """An error becomes memory only with what made it pass: the change that fixed it, a
    dependency installed, or a different command that worked."""
    if error.status == "still_failing" or error.category in ("explore", "vcs"):
        return None
    if error.category == "test" and error.fix is not None and _is_test(error.fix.path) and any(
            f.created and f.path == error.fix.path for f in analysis.files):
        return None  # a test the session wrote was itself wrong at first: not a lesson
    if error.status == "fixed" and not error.proved_by and error.fix is not None and not (
            error.fix.command or (error.fix.essence and not error.other_changes)):
        # the error went away and the next run failed differently: memory keeps that fix only
        # when it is one clear change (``uv add psycopg``, one edit with its essence)
        return None
    check = clean(error.check)
    proof = clean(error.proved_by) if error.proved_by else ""
    installed = _installed_between(error, analysis) if error.status == "passed" else ""
    message = clean(error.error).rstrip(".")
    if len(message) > 120:
        message = message[:119].rsplit(" ", 1)[0] + "…"
    text = f"{code(check)} failed with {message.replace('`', chr(39))}"
    if error.status == "fixed" and error.fix is not None and _is_doc(error.fix.path) and \
            error.other_changes and error.category in ("test", "typecheck", "lint", "build"):
        # a CHANGELOG edit made after the real one does not make a test pass: the credit is
        # unreliable (a docs site's own pages, edited alone, are the fix)
        return None
    if error.status == "fixed" and error.fix is not None and error.fix.command:
        text += f"; fixed by running {code(clean(error.fix.command))}"
        if proof:
            text += f"; verified by {code(proof)}"
    elif error.status == "fixed" and error.fix is not None:
        if not error.fix.essence and (error.other_changes or not proof):
            # "fixed by changing x.py" after several edits, or without a passing run: which
            # change did it is not known, and the rest says nothing an agent can use
            return None
        change = f"`{clean(error.fix.path)}`"
        essence = clean(error.fix.essence) if error.fix.essence else ""
        text += f"; fixed by changing {change}" + (f" ({essence})" if essence else "")
        if proof:
            text += f"; verified by {code(proof)}"
    elif proof and proof.split() != check.split():
        text += f"; {code(proof)} worked instead"
    elif installed:
        text += f"; fixed by running {code(installed)}"
        if proof:
            text += f"; verified by {code(proof)}"
    else:
        return None
    at = (error.proved_at.timestamp if error.proved_at else None) or anchor
    return Fact(slot=fix_slot(check, message), kind="fix", text=text + ".", at=at,
                session=analysis.session_id, sources=[analysis.session_id], first=at.date())


def _said(analysis: SessionAnalysis) -> dict[str, Rule | Decision]:
    said: dict[str, Rule | Decision] = {rule.text: rule for rule in analysis.rules}
    said.update((decision.text, decision) for decision in analysis.decisions)
    return said


def _still_current(item: Rule | Decision, said: dict[str, Rule | Decision]) -> bool:
    """Not replaced within the session — or "replaced" by a statement that picks the same
    option (a correction that agrees with the rule restates it)."""
    if item.superseded_by is None:
        return True
    later = said.get(item.superseded_by)
    if later is None or item.subject != later.subject:
        return False
    mine = choice_of(item.text, item.subject)
    return mine is not None and mine == choice_of(later.text, later.subject)


def session_facts(analysis: SessionAnalysis, anchor: datetime | None = None) -> list[Fact]:
    """The candidate facts of one session, in the order they were stated."""
    when = anchor or analysis.updated_at or analysis.started_at or datetime.now(UTC)
    said = _said(analysis)
    stated: list[tuple[datetime, Fact]] = []
    for rule in analysis.rules:
        if _still_current(rule, said) and (
                fact := _statement_fact("rule", rule, analysis, when)):
            stated.append((fact.at, fact))
    for decision in analysis.decisions:
        if not _still_current(decision, said):
            continue
        kind: FactKind = "rename" if decision.kind == "rename" else "decision"
        if fact := _statement_fact(kind, decision, analysis, when):
            stated.append((fact.at, fact))
    stated.sort(key=lambda pair: pair[0])
    facts = [fact for _, fact in stated]
    _formerly_in_session(analysis, facts, when)
    facts.extend(_correction_facts(analysis, when))
    for command in analysis.commands:
        if fact := _command_fact(command, analysis, when):
            facts.append(fact)
    for error in analysis.errors:
        if fact := _fix_fact(error, analysis, when):
            facts.append(fact)
    if fact := _hooks_fact(analysis, when):
        facts.append(fact)
    facts.extend(_workflow_facts(analysis, when))
    return facts


def _as_fact(text: str, analysis: SessionAnalysis, when: datetime) -> Fact:
    """A fact the session's commands showed, read back as a topic file would read it (so the
    next run finds the same slot and subject)."""
    fact = parse_fact(text, topic="")
    fact.at, fact.first, fact.user = when, when.date(), False
    fact.session, fact.sources = analysis.session_id, [analysis.session_id]
    return fact


def _workflow_facts(analysis: SessionAnalysis, when: datetime) -> list[Fact]:
    """The issue tracker in use, gitignored paths, paths the shell needs quoted."""
    facts: list[Fact] = []
    if analysis.tracker_commands:
        tool = analysis.tracker_commands[0].split()[0]
        forms = ", ".join(f"`{clean(t)}`" for t in analysis.tracker_commands[:4])
        facts.append(_as_fact(f"Issues are tracked with `{tool}`: {forms}.", analysis, when))
    for path in analysis.ignored_paths[:3]:
        facts.append(_as_fact(f"`{clean(path)}` is gitignored: `git add` refuses it.",
                              analysis, when))
    for path in analysis.quoted_paths[:3]:
        facts.append(_as_fact(f"Quote `{clean(path)}` in shell commands: unquoted, the shell "
                              "expands its brackets and finds no match.", analysis, when))
    for missing, found in analysis.relocated_paths[:3]:
        name = found.rstrip("/").rsplit("/", 1)[-1]
        facts.append(_as_fact(f"`{clean(name)}` is at `{clean(found)}`, not `{clean(missing)}`.",
                              analysis, when))
    return facts


def _hooks_fact(analysis: SessionAnalysis, when: datetime) -> Fact | None:
    """The checks that run as pre-commit hooks, seen failing in the session's own output
    (``- hook id: flake8``): they gate every commit, so an agent should run them first."""
    if not analysis.hooks:
        return None
    names = ", ".join(f"`{clean(h)}`" for h in analysis.hooks[:6])
    text = f"Pre-commit hooks check the code: {names}"
    if analysis.hooks_block_commits:
        text += "; a failing hook blocks `git commit`"
    return _as_fact(text + ".", analysis, when)


def _correction_facts(analysis: SessionAnalysis, when: datetime) -> list[Fact]:
    """What the user corrected the agent with, when it names a concrete value ("actually no —
    make it Python 3.12, that's what CI uses"): the value is how things are here."""
    facts: list[Fact] = []
    for correction in analysis.corrections:
        text = sentence(correction.text, when)
        if not text or "?" in text or not _CONCRETE.search(text):
            continue
        at = correction.evidence.timestamp or when
        subject = subject_of(text)
        fields = subject_fields(subject, text)
        facts.append(Fact(slot=f"s:{subject}:{slug(text)[:48]}", kind="decision", text=text,
                          at=at, session=analysis.session_id, sources=[analysis.session_id],
                          first=at.date(), **fields))  # type: ignore[arg-type]
    return facts


def _formerly_in_session(analysis: SessionAnalysis, facts: list[Fact], when: datetime) -> None:
    """A statement the session itself reversed survives only as the new one's ``formerly``."""
    said = _said(analysis)
    for item in said.values():
        if item.superseded_by is None or _still_current(item, said):
            continue
        new_text = sentence(item.superseded_by, when)
        for fact in facts:
            if fact.text == new_text and not fact.formerly:
                fact.formerly = sentence(item.text, when).rstrip(".")
                fact.replaced_on = fact.day


_KINDS: dict[StatementKind, FactKind] = {
    StatementKind.DECISION: "decision",
    StatementKind.RENAME: "rename",
}


def statement_facts(text: str, *, source: str, when: datetime, note: bool) -> list[Fact]:
    """Facts a free text states (a daily-log entry, the user's extra context); a log entry
    that states no rule is kept as a note, extra context only for what it states."""
    facts: list[Fact] = []
    for found in statements_in(text):
        kind = _KINDS.get(found.kind, "rule")
        line = sentence(found.text, when)
        if not line or kind == "rename":
            continue
        subject = found.subject
        fields = subject_fields(subject, line)
        facts.append(Fact(slot=f"s:{subject}:{slug(line)[:48]}", kind=kind, text=line, at=when,
                          session=source, first=when.date(),
                          replaces=found.replaces.lower() if found.replaces else None,
                          **fields))  # type: ignore[arg-type]
    if not facts and note:
        line = sentence(text, when)
        if len(line) >= 12:
            subject = subject_of(line)
            fields = subject_fields(subject, line)
            facts.append(Fact(slot=f"s:{subject}:{slug(line)[:48]}", kind="note", text=line,
                              at=when, session=source, first=when.date(),
                              **fields))  # type: ignore[arg-type]
    return facts
