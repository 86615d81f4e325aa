"""Topic files as lists of facts: read them back (a person's lines included), write them again.

One fact is one bullet::

    - **Package manager:** Use pnpm, never npm or yarn. _(session 3f2a1b2c, 2026-03-04)_
    - **Test:** `pnpm test` _(3 sessions, latest 77aa1b2c 2026-03-09, first 2026-03-01)_
      (formerly: `npm test`; replaced on 2026-03-09)

The bold label names the fact's slot, the trailing provenance its evidence; a bullet without
provenance was written by a person and is kept byte for byte unless a newer fact replaces it
(its text then survives as ``formerly``). Text that is not a bullet stays where it is. A file
only Reverie wrote is listed by rank; in a file a person edited, facts are updated in place and
new ones appended.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time

from reverie.analysis.statements import statements_in, subject_of
from reverie.curation.facts import EPOCH, KIND_ORDER, Fact, FactBook, FactKind, normalise
from reverie.curation.lexicon import humanise, subject_fields
from reverie.curation.subjects import TopicSpec, area, spec_for
from reverie.memory.store import MAX_ENTRY_CHARS, IndexEntry, TopicMeta
from reverie.redact import redact

#: facts Reverie keeps per topic file (a person's facts are never dropped and not counted)
MAX_FACTS_PER_TOPIC = 30
MAX_SOURCES = 40
COMMAND_LABELS = {
    "build": "Build", "test": "Test", "run": "Run", "lint": "Lint", "format": "Format",
    "typecheck": "Type check", "install": "Install", "deploy": "Deploy", "migrate": "Migrate",
    "generate": "Generate",
}
_LABEL_CATEGORY = {v.lower(): k for k, v in COMMAND_LABELS.items()}
_BULLET = re.compile(r"^[-*+]\s+(?P<body>.*)$")
_LABEL = re.compile(r"^\*\*(?P<label>[^*:]{1,60}):\*\*\s*(?P<text>.*)$")
_PROVENANCE = re.compile(
    r"\s*_\((?:session (?P<sid>[^,\s]+), (?P<day>\d{4}-\d{2}-\d{2})"
    r"|(?P<count>\d+) sessions, latest (?P<sid2>\S+) (?P<day2>\d{4}-\d{2}-\d{2}), "
    r"first (?P<first>\d{4}-\d{2}-\d{2})"
    r"|(?P<other>log|user|daily log|note)[^)]*?(?P<day3>\d{4}-\d{2}-\d{2}))\)_\s*$"
)
_FORMERLY = re.compile(r"^\s+(?:[-*+]\s+)?\(?formerly:\s*(?P<text>.*?)[,;]\s*replaced on "
                       r"(?P<day>\d{4}-\d{2}-\d{2})\)?\s*$")
#: the mark the check (``reverie.anchors.retire``) puts under a fact nobody confirmed lately;
#: it alone adds and removes it, so curation carries it through untouched
AGING_MARK = re.compile(r"^\s+\(aging: not confirmed since \d{4}-\d{2}-\d{2}\)\s*$")
_FIX = re.compile(r"^`(?P<check>[^`]+)` failed(?: with (?P<error>.+?))?(?:;|$)")
_RENAME = re.compile(r"^`(?P<old>[^`]+)` (?:was )?renamed to `(?P<new>[^`]+)`")
_SLUG = re.compile(r"[^a-z0-9]+")
_PICKS = re.compile(r"^(?:use|using|switch(?:ing|ed)?(?: from \S+)? to|mov(?:e|ing|ed)(?: from "
                    r"\S+)? to|go(?:ing)? with|stick with)\s+`?([\w./@+-]+)", re.IGNORECASE)
_MOVED_FROM = re.compile(r"\b(?:switch\w*|mov\w*|migrat\w*) from\s+`?([\w./@+-]+)`?\s+to\b",
                         re.IGNORECASE)


def slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")[:60]


def script_key(command: str) -> str:
    """What makes two commands "the same script" whatever runs them: ``npm test`` and
    ``pnpm test`` are both ``test``; ``uv run pytest -q`` and ``pytest`` are ``pytest``."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):
        words = words[1:]
    runners = {"npm", "pnpm", "yarn", "bun", "npx", "pnpx", "bunx", "uv", "uvx", "poetry",
               "pipenv", "hatch", "rye", "pdm"}
    while words and words[0] in runners | {"run", "exec", "x", "-m", "python", "python3"}:
        words = words[1:]
    head = [w for w in words[:2] if not w.startswith("-")]
    return " ".join(head[:1] if head and head[0] in {"pytest", "jest", "vitest", "tsc",
                                                     "mypy", "ruff", "eslint"} else head)


def command_slot(category: str, command: str) -> str:
    return f"cmd:{category}:{script_key(command)}"


def fix_slot(check: str, error: str) -> str:
    return f"fix:{script_key(check)}:{normalise(error)[:48]}"


def clean(text: str) -> str:
    """One line, redacted (before anything formats it)."""
    return redact(" ".join(text.split()))[0]


def code(command: str) -> str:
    """A command as inline code, redacted first (a backtick would hide a secret from the
    redaction patterns that look for a word boundary)."""
    return "`" + clean(command).replace("`", "'") + "`"


# --- reading -------------------------------------------------------------------------------


@dataclass
class Item:
    """A fact bullet in a topic file: where it is, and what it says."""

    start: int
    end: int  # exclusive
    fact: Fact


@dataclass
class TopicDoc:
    """A topic file split into facts and the other lines."""

    name: str
    meta: TopicMeta
    lines: list[str]
    items: list[Item] = field(default_factory=list)

    @property
    def only_ours(self) -> bool:
        """Nothing in it but Reverie's facts, a heading and blank lines."""
        covered = {n for item in self.items for n in range(item.start, item.end)}
        others = [line for n, line in enumerate(self.lines)
                  if n not in covered and line.strip() and not line.startswith("# ")]
        return not others and not any(item.fact.user for item in self.items)


def _day(raw: str | None) -> date | None:
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        return None


def _at(day: date | None) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC) if day else EPOCH


def parse_fact(body: str, topic: str) -> Fact:
    """One bullet's text (without the ``- ``) as a fact."""
    prov = _PROVENANCE.search(body)
    text = body[: prov.start()].rstrip() if prov else body.rstrip()
    label = ""
    labelled = _LABEL.match(text)
    if labelled:
        label, text = labelled["label"].strip(), labelled["text"].strip()
    kind: FactKind
    first_code = re.match(r"^`([^`]+)`", text)
    if label and label.lower() in _LABEL_CATEGORY and first_code:
        kind, slot = "command", command_slot(_LABEL_CATEGORY[label.lower()], first_code[1])
    elif fix := _FIX.match(text):
        kind, slot = "fix", fix_slot(fix["check"], fix["error"] or "")
    elif rename := _RENAME.match(text):
        kind, slot = "rename", f"rename:{rename['old']}"
    else:
        kind = "rule" if label else "note"
        if re.search(r"\b(?:decided|switched|moved to|instead of)\b", text, re.IGNORECASE):
            kind = "decision"
        # what the statement says, read again the way the session's sentence was read
        found = next(iter(statements_in(text)), None)
        subject = slug(label) if label else (found.subject if found else subject_of(text))
        fields = subject_fields(subject, text)
        replaces = None
        if found is not None:
            if found.kind == "decision":
                kind = "decision"
            replaces = found.replaces.strip("`'\".,;:").lower() if found.replaces else None
            if fields["choice"] is None and found.chosen and kind == "decision":
                fields["choice"] = found.chosen.strip("`'\".,;:").lower()
        if fields["choice"] is None and (picked := _PICKS.search(text)):
            # a plain statement of a choice ("Use zap for logging", "Switching from zap to
            # log/slog"): what it picks and what it replaces, for later supersession
            fields["choice"] = picked.group(1).strip("`'\".,;:").lower()
            kind = "decision" if kind != "note" or not label else kind
        if replaces is None and (moved := _MOVED_FROM.search(text)):
            replaces = moved.group(1).strip("`'\".,;:").lower()
        fact = Fact(slot=f"s:{subject}:{slug(text)[:48]}", kind=kind, text=text, at=EPOCH,
                    topic=topic, user=prov is None, replaces=replaces,
                    **fields)  # type: ignore[arg-type]
        fact.label = label
        return _with_provenance(fact, prov)
    fact = Fact(slot=slot, kind=kind, text=text, at=EPOCH, label=label, topic=topic,
                user=prov is None)
    return _with_provenance(fact, prov)


def _with_provenance(fact: Fact, prov: re.Match[str] | None) -> Fact:
    if prov is not None:
        if prov["count"]:
            fact.sessions = int(prov["count"])
            fact.session = prov["sid2"]
            last, fact.first = _day(prov["day2"]), _day(prov["first"])
        elif prov["sid"]:
            fact.session, last = prov["sid"], _day(prov["day"])
            fact.first = last
        else:
            fact.session, last = prov["other"], _day(prov["day3"])
            fact.first = last
        fact.at = _at(last)
    return fact


#: the heading of a topic's retired facts (``reverie.anchors.retire``): what follows it is kept
#: as text, never read back as facts
RETIRED_HEADING = re.compile(r"^#{2,6}\s+Retired\b", re.IGNORECASE)


def read_doc(name: str, meta: TopicMeta, body: str) -> TopicDoc:
    lines = body.splitlines()
    doc = TopicDoc(name=name, meta=meta, lines=lines)
    number = 0
    while number < len(lines):
        if RETIRED_HEADING.match(lines[number]):
            break  # retired facts are history, not memory
        match = _BULLET.match(lines[number])
        if not match:
            number += 1
            continue
        start = number
        number += 1
        while number < len(lines) and lines[number].startswith((" ", "\t")) and \
                lines[number].strip():
            number += 1
        fact = parse_fact(match["body"], name)
        for extra in lines[start + 1:number]:
            former = _FORMERLY.match(extra)
            if former:
                fact.formerly, fact.replaced_on = former["text"], _day(former["day"])
            elif AGING_MARK.match(extra):
                fact.marks.append(extra)
        if fact.user:
            fact.raw = lines[start:number]
        doc.items.append(Item(start, number, fact))
    return doc


# --- writing -------------------------------------------------------------------------------


def provenance(fact: Fact) -> str:
    day = fact.day.isoformat()
    sid = fact.session[:8] if fact.session not in ("log", "user", "note") else fact.session
    if fact.sessions > 1 and fact.first and fact.first != fact.day:
        return f"_({fact.sessions} sessions, latest {sid} {day}, first {fact.first.isoformat()})_"
    if fact.session == "log":
        return f"_(daily log, {day})_"
    if fact.session == "user":
        return f"_(user, {day})_"
    return f"_(session {sid}, {day})_"


def render_fact(fact: Fact) -> list[str]:
    if fact.user and fact.raw:
        return list(fact.raw)
    label = f"**{fact.label}:** " if fact.label else ""
    lines = [f"- {label}{fact.text} {provenance(fact)}"]
    if fact.formerly and fact.replaced_on:
        lines.append(f"  (formerly: {fact.formerly}; replaced on "
                     f"{fact.replaced_on.isoformat()})")
    return [*lines, *fact.marks]


def statement(fact: Fact) -> str:
    """The fact as plain text for an index hook (no label markup, no provenance)."""
    text = fact.text
    if fact.kind == "command" and fact.label:
        text = f"{fact.label.lower()}: {text}"
    return text.rstrip(". ")


def _order(facts: Iterable[Fact]) -> list[Fact]:
    return sorted(facts, key=lambda f: (KIND_ORDER.get(f.kind, 9), -f.rank))


def _capped(facts: list[Fact]) -> list[Fact]:
    ours = [f for f in facts if not f.user]
    if len(ours) <= MAX_FACTS_PER_TOPIC:
        return facts
    keep = {id(f) for f in sorted(ours, key=lambda f: -f.rank)[:MAX_FACTS_PER_TOPIC]}
    return [f for f in facts if f.user or id(f) in keep]


def assemble(doc: TopicDoc | None, spec: TopicSpec | None, facts: list[Fact]) -> list[str]:
    """The new body lines of one topic file holding ``facts``."""
    facts = _capped(facts)
    if doc is None or doc.only_ours:
        # a file that exists keeps its own head: its title line, or none if it had none
        head = [line for line in (doc.lines if doc else []) if line.startswith("# ")][:1]
        title = head if doc else [f"# {spec.name if spec else 'Memory'}"]
        body = [*title, ""] if title else []
        for fact in _order(facts):
            body.extend(render_fact(fact))
        return body
    by_slot = {f.slot: f for f in facts}
    placed: set[str] = set()
    out: list[str] = []
    cursor = 0
    last_item_end = 0
    for item in doc.items:
        out.extend(doc.lines[cursor:item.start])
        cursor = item.end
        kept = by_slot.get(item.fact.slot)
        if kept is None or kept.slot in placed:
            continue  # dropped (ours, over the cap) or merged into an earlier line
        placed.add(kept.slot)
        out.extend(render_fact(kept))
        last_item_end = len(out)
    tail = doc.lines[cursor:]
    new = [f for f in _order(facts) if f.slot not in placed]
    added = [line for fact in new for line in render_fact(fact)]
    if not doc.items:
        retired = next((n for n, line in enumerate(tail) if RETIRED_HEADING.match(line)), None)
        if retired is not None:  # new facts go above the retired ones, never under them
            above = [*out, *tail[:retired]]
            while above and not above[-1].strip():
                above.pop()
            return [*above, *([""] if above else []), *added, "", *tail[retired:]]
        while out and not out[-1].strip():
            out.pop()
        out = [*out, *tail]
        while out and not out[-1].strip():
            out.pop()
        return [*out, *([""] if out else []), *added]
    return [*out[:last_item_end], *added, *out[last_item_end:], *tail]


def hook(facts: Sequence[Fact], room: int) -> str:
    """The index hook: the topic's strongest statements, as many as fit in ``room``."""
    parts: list[str] = []
    used = 0
    for fact in sorted(facts, key=lambda f: -f.rank):
        text = statement(fact)
        extra = len(text) + (2 if parts else 0)
        if used + extra <= room:
            parts.append(text)
            used += extra
        elif not parts:
            parts.append(shorten(text, room))
            break
    return "; ".join(parts)


def shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)].rsplit(" ", 1)[0].rstrip(" ,;:-")
    if cut.count("`") % 2:
        cut = cut[: cut.rfind("`")].rstrip(" ,;:-")
    return f"{cut}…"


def index_entry(title: str, target: str, facts: Sequence[Fact], fallback: str = "") -> IndexEntry:
    """A ``MEMORY.md`` line for a topic, at most ``MAX_ENTRY_CHARS`` wide."""
    title = shorten(title.replace("]", ")").replace("\n", " "), 60)
    entry = IndexEntry(title=title, target=target)
    room = MAX_ENTRY_CHARS - len(entry.render()) - 3
    entry.hook = hook(facts, room) if facts else shorten(" ".join(fallback.split()), room)
    return entry


def fit_entry(entry: IndexEntry) -> IndexEntry:
    """An index line cut to ``MAX_ENTRY_CHARS`` (title first kept, hook shortened)."""
    if len(entry.render()) <= MAX_ENTRY_CHARS:
        return entry
    title = shorten(entry.title, 60)
    fitted = IndexEntry(title=title, target=entry.target)
    room = MAX_ENTRY_CHARS - len(fitted.render()) - 3
    fitted.hook = shorten(entry.hook, room) if room > 8 else ""
    return fitted


# --- the whole memory ----------------------------------------------------------------------


@dataclass
class Curated:
    """What one curation changes: topic files (name -> meta, body) and their index lines."""

    topics: dict[str, tuple[TopicMeta, str]] = field(default_factory=dict)
    entries: dict[str, IndexEntry] = field(default_factory=dict)
    facts_added: int = 0
    facts_replaced: int = 0
    #: topic files Reverie wrote whose every fact was replaced (nothing of a person's in them)
    removed: list[str] = field(default_factory=list)


def _target(fact: Fact) -> str:
    return fact.topic or spec_for(fact).file


def current_choice(book: FactBook, subject: str) -> str | None:
    """The option the latest statement on an exclusive subject picked."""
    picked = [f for f in book.group(subject) if f.choice and f.kind != "command"]
    return max(picked, key=lambda f: f.at).choice if picked else None


def drop_stale_commands(book: FactBook) -> None:
    """Commands run with a package manager the project has since ruled out (`npm install`
    before "use pnpm, never npm") are no longer how to work here."""
    manager = current_choice(book, "package-manager")
    if manager is None:
        return
    for fact in book:
        if fact.kind != "command" or fact.user:
            continue
        command = fact.text.strip("`")
        program = script_program(command)
        if program and program != manager and subject_of(program) == "package-manager":
            book.remove(fact.slot)


def script_program(command: str) -> str:
    """The program a command line runs (env assignments skipped)."""
    for word in command.split():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", word):
            return word.lower()
    return ""


def _unchanged(doc: TopicDoc, facts: list[Fact]) -> bool:
    """The facts a file holds are the ones it will hold, each written as it is: the file is
    left as it is (its order and layout too), not assembled again."""
    was = sorted("\n".join(doc.lines[item.start:item.end]) for item in doc.items)
    return was == sorted("\n".join(render_fact(f)) for f in _capped(facts))


def _heading(doc: TopicDoc) -> str | None:
    """The file's own title (its first ``# `` line), for a file with no name of its own."""
    line = next((line for line in doc.lines if line.startswith("# ")), "")
    return line[2:].strip() or None


def curate(docs: dict[str, TopicDoc], new: FactBook, today: date) -> Curated:
    """Merge ``new`` facts into the memory's topic ``docs``; the files that change."""
    book = FactBook()
    existing: list[Fact] = []
    for doc in docs.values():
        for item in doc.items:
            existing.append(item.fact)
            if item.fact.slot in book.facts:
                # the same slot twice in memory (a person copied a line): keep both as lines
                item.fact.slot = f"{item.fact.slot}#{doc.name}:{item.start}"
            book.put(item.fact)
    before = {f.slot: f.text for f in book}
    formerly = {f.slot: f.formerly for f in book}
    for fact in new:
        book.add(fact)
    drop_stale_commands(book)
    grouped: dict[str, list[Fact]] = {}
    for fact in book:
        grouped.setdefault(_target(fact), []).append(fact)
    for name, doc in docs.items():
        if doc.items and name not in grouped:
            grouped[name] = []  # every fact it held was replaced by one in another topic
    result = Curated()
    for name, facts in grouped.items():
        current = docs.get(name)
        if not facts and current is not None and current.only_ours:
            result.removed.append(name)
            continue
        spec = area(name.removesuffix(".md")) if "/" not in name else None
        old_body = "\n".join(current.lines).strip("\n") if current else None
        if old_body is not None and current is not None and _unchanged(current, facts):
            body = old_body
        else:
            body = "\n".join(assemble(current, spec, facts)).strip("\n")
        title = (current.meta.name if current and current.meta.name else None) or (
            _heading(current) if current else None) or (
            spec.name if spec else humanise(name.removesuffix(".md")))
        ours = [f for f in facts if not f.user] or facts
        entry = index_entry(title, name, ours)
        result.entries[name] = entry
        if body == old_body:
            continue
        meta = current.meta.model_copy(deep=True) if current else TopicMeta()
        meta.name = meta.name or title
        if not meta.description or (spec is not None and (current is None or current.only_ours)):
            # a description Reverie wrote follows the facts; a person's file keeps theirs
            meta.description = entry.hook or title
        meta.type = meta.type or (spec.type if spec else "project")
        meta.updated = today.isoformat()
        sources = list(meta.sources)
        for fact in facts:
            for source in fact.sources:
                if source not in sources:
                    sources.append(source)
        meta.sources = sources[-MAX_SOURCES:]
        result.topics[name] = (meta, body)
    for slot, fact in book.facts.items():
        if fact.formerly and formerly.get(slot) != fact.formerly:
            result.facts_replaced += 1
        elif slot not in before:
            result.facts_added += 1
    return result


def fit_line(text: str, limit: int = MAX_ENTRY_CHARS) -> str:
    """Any line cut to ``limit`` characters."""
    return text if len(text) <= limit else shorten(text, limit)


__all__ = [
    "COMMAND_LABELS",
    "Curated",
    "TopicDoc",
    "assemble",
    "clean",
    "code",
    "command_slot",
    "curate",
    "fit_entry",
    "fix_slot",
    "humanise",
    "index_entry",
    "parse_fact",
    "read_doc",
    "render_fact",
    "script_key",
    "slug",
]
