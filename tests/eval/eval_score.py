"""Scoring memory and session notes against a project's labels (``labels.toml``).

Entries: a Markdown file is cut into entries, one per line plus its indented continuation lines.
Not entries: blank lines, headings, front matter, ``---`` rules, HTML comments, and in notes the
template's italic section descriptions. In ``MEMORY.md`` a line that links to a topic file is an
*index* entry: it counts only when it matches something (a fact or acceptable pattern makes it
useful; a noise or wrong pattern counts against); a bare pointer is neutral navigation.

Each scored entry is classified, first match wins:
  wrong   — matches a wrong-claim pattern (the transcripts contradict it);
  noise   — matches a noise pattern (global: tool-protocol slips, agent wrappers, exploration
            commands, temp paths, "read N times" counts; in memory also file-activity logs
            and quoted chat ("The user said: …"); plus the project's own);
  useful  — matches a durable fact or an acceptable pattern;
  other   — matches nothing (counts against precision: memory an agent loads every session
            must earn its place).
recall    = durable facts matched by at least one *useful* entry / durable facts expected;
precision = useful / (useful + noise + wrong + other);
wrong     = number of wrong entries; leaks = planted secret values found anywhere in the files.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Scope = Literal["notes", "memory"]
INDEX_LIMIT = 150

_MARKS = re.compile(r"[`*_]")
_FLAGS = re.IGNORECASE

#: noise every project shares (scope: notes and memory)
GLOBAL_NOISE: list[tuple[str, str]] = [
    ("tool-slip", r"File has not been read yet|InputValidationError|tool_use_error|"
                  r"required parameter .?prompt.? is missing|File does not exist|"
                  r"String to replace not found"),
    ("wrapper", r"<command-(name|message|args)>|<local-command-stdout>|ide_opened_file|"
                r"The user opened the file|task-notification|<task-id>|\bPlease continue\b|"
                r"(^|[\s`(])/clear\b|local-command-caveat"),
    ("read-count", r"\bread \d+\s*[×x](?!\w)|\(read \d+|\bread \d+ times\b"),
    ("exploration", r"`(ls|ll|tree|pwd|cat|head|tail|sed -n|find|grep|rg|wc|lsof|which|echo|"
                    r"kill|rm)\b[^`]*`"),
    ("exploration", r"^\s*[-*]?\s*(ls|tree|pwd|cat|head|tail|sed -n|find|grep|rg|wc|lsof)\s"),
    ("temp-path", r"/tmp/"),
]

#: noise in memory only (fine in a session's notes): file-activity logs and quoted chat
MEMORY_NOISE: list[tuple[str, str]] = [
    ("file-log", r'Files changed for "|\((created|edited|read)\b[^)]*\b(edits?|×)(?!\w)|'
                 r"^\W*`[^`]+/`:\s"),
    ("quoted-chat", r'^\W*(the user said|user( said| asked| wrote)?):\s*["“]'),
]

#: claims about a session that are wrong whatever the project (notes titles from wrappers)
GLOBAL_WRONG_TITLE = (r"^\W*(/\w+|<[a-z-]+>|Please continue|The user opened|Caveat:|"
                      r"<task-notification>|task-notification)")


@dataclass
class Pattern:
    id: str
    kind: str
    regexes: list[re.Pattern[str]]
    scopes: tuple[str, ...]
    sessions: tuple[str, ...] = ()
    section: str | None = None

    def matches(self, entry: Entry) -> bool:
        if self.section is not None and entry.section.lower() != self.section.lower():
            return False
        return any(r.search(entry.text) or r.search(entry.plain) for r in self.regexes)


@dataclass
class Labels:
    project: str
    facts: list[Pattern]
    wrong: list[Pattern]
    noise: list[Pattern]
    ok: list[Pattern]
    secrets: list[str]
    hand: list[tuple[str, str]] = field(default_factory=list)  # (id, text) written by hand
    hand_patterns: list[Pattern] = field(default_factory=list)
    heldout: bool = False  # written after the engines were tuned: reported and floored apart

    def in_scope(self, items: list[Pattern], scope: Scope) -> list[Pattern]:
        return [p for p in items if scope in p.scopes]


def _compile(raw: Iterable[str], where: str) -> list[re.Pattern[str]]:
    out = []
    for text in raw:
        try:
            out.append(re.compile(text, _FLAGS | re.MULTILINE))
        except re.error as exc:
            raise ValueError(f"{where}: bad pattern {text!r}: {exc}") from None
    return out


def _items(data: dict[str, Any], key: str, default_scopes: tuple[str, ...],
           project: str) -> list[Pattern]:
    out = []
    for n, item in enumerate(data.get(key, [])):
        ident = str(item.get("id", f"{key}-{n}"))
        out.append(Pattern(
            id=ident, kind=str(item.get("kind", key)),
            regexes=_compile(item.get("any", []), f"{project}:{key}:{ident}"),
            scopes=tuple(item.get("in", default_scopes)),
            sessions=tuple(item.get("sessions", ())),
            section=item.get("section"),
        ))
    return out


def load_labels(path: Path) -> Labels:
    data = tomllib.loads(path.read_text("utf-8"))
    name = path.parent.name
    both = ("notes", "memory")
    noise = [Pattern(f"global:{ident}", ident, _compile([rx], ident), both)
             for ident, rx in GLOBAL_NOISE]
    noise += [Pattern(f"global:{ident}", ident, _compile([rx], ident), ("memory",))
              for ident, rx in MEMORY_NOISE]
    wrong = [Pattern("global:wrapper-title", "title", _compile([GLOBAL_WRONG_TITLE], "title"),
                     ("notes",), section="Session Title")]
    return Labels(
        project=name,
        facts=_items(data, "fact", both, name),
        wrong=wrong + _items(data, "wrong", both, name),
        noise=noise + _items(data, "noise", both, name),
        ok=_items(data, "ok", both, name),
        secrets=list(data.get("secrets", {}).get("values", [])),
        hand=[(str(h["id"]), str(h["text"])) for h in data.get("hand", [])],
        hand_patterns=[p for p in _items(data, "hand", both, name) if p.regexes],
        heldout=bool(data.get("project", {}).get("heldout", False)),
    )


# --- entries ---------------------------------------------------------------------------------

@dataclass
class Entry:
    file: str
    text: str
    section: str = ""
    index: bool = False  # a MEMORY.md line pointing at a topic file
    plain: str = field(init=False)

    def __post_init__(self) -> None:
        self.plain = _MARKS.sub("", self.text)


_LINK = re.compile(r"\[[^\]]*\]\(([^)]+\.md)\)")


def _strip_front_matter(lines: list[str]) -> list[str]:
    if lines and lines[0].strip() == "---":
        for n in range(1, len(lines)):
            if lines[n].strip() == "---":
                return lines[n + 1:]
    return lines


def entries_of(text: str, file: str, *, notes: bool = False) -> list[Entry]:
    lines = _strip_front_matter(text.splitlines())
    out: list[Entry] = []
    section = ""
    in_comment = False
    just_headed = False
    for line in lines:
        stripped = line.strip()
        if in_comment:
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if not stripped or re.fullmatch(r"-{3,}|\*{3,}|`{3}\w*", stripped):
            continue
        if stripped.startswith("#"):
            section = stripped.lstrip("#").strip()
            just_headed = True
            continue
        if notes and just_headed and re.fullmatch(r"_.*_", stripped):
            just_headed = False
            continue  # the template's description of the section
        just_headed = False
        if out and line[:1] in (" ", "\t") and not re.match(r"\s*([-*]|\d+\.)\s", line):
            out[-1] = Entry(out[-1].file, out[-1].text + " " + stripped, out[-1].section,
                            out[-1].index)
            continue
        is_index = file == "MEMORY.md" and bool(_LINK.search(stripped))
        out.append(Entry(file, stripped, section, is_index))
    return out


# --- scoring ---------------------------------------------------------------------------------

@dataclass
class Verdict:
    entry: Entry
    label: Literal["wrong", "noise", "useful", "other", "neutral"]
    by: str = ""


@dataclass
class Score:
    expected: list[str] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    leaks: int = 0
    long_index_lines: int = 0
    hand_expected: list[str] = field(default_factory=list)
    hand_kept: list[str] = field(default_factory=list)

    def merge(self, other: Score) -> None:
        self.expected += other.expected
        self.matched += other.matched
        self.verdicts += other.verdicts
        self.leaks += other.leaks
        self.long_index_lines += other.long_index_lines
        self.hand_expected += other.hand_expected
        self.hand_kept += other.hand_kept

    def count(self, label: str) -> int:
        return sum(1 for v in self.verdicts if v.label == label)

    @property
    def lines(self) -> int:
        return sum(1 for v in self.verdicts if v.label != "neutral")

    @property
    def recall(self) -> float | None:
        return len(self.matched) / len(self.expected) if self.expected else None

    @property
    def precision(self) -> float | None:
        return self.count("useful") / self.lines if self.lines else None

    @property
    def wrong(self) -> int:
        return self.count("wrong")

    @property
    def chatty(self) -> int:
        """Useful entries still worded as chat ("you", "we", "let's", "please") rather than as
        a plain statement (issue 12: "Use pnpm, never npm", not the user's sentence)."""
        return sum(1 for v in self.verdicts if v.label == "useful" and not v.entry.index
                   and _CHAT.search(_CODE.sub("", claim_of(v.entry).plain)))

    @property
    def missed(self) -> list[str]:
        return [f for f in self.expected if f not in self.matched]

    def as_json(self) -> dict[str, Any]:
        return {
            "recall": self.recall, "precision": self.precision, "wrong": self.wrong,
            "lines": self.lines, "useful": self.count("useful"), "noise": self.count("noise"),
            "other": self.count("other"), "chatty": self.chatty, "leaks": self.leaks,
            "long_index_lines": self.long_index_lines,
            "facts_expected": len(self.expected), "facts_matched": len(self.matched),
            "hand_expected": len(self.hand_expected), "hand_kept": len(self.hand_kept),
            "hand_lost": [h for h in self.hand_expected if h not in self.hand_kept],
            "missed": self.missed,
            "bad_lines": [{"label": v.label, "by": v.by, "file": v.entry.file,
                           "text": v.entry.text[:300]}
                          for v in self.verdicts if v.label in ("wrong", "noise", "other")],
        }


_CHAT = re.compile(r"\b(you|your|me|we|let's|let us|I'll|I'm|I've|please|thanks)\b", re.I)
_CODE = re.compile(r"`[^`]*`")

#: a superseded statement kept as history: "(formerly: Use SWR; replaced on 2026-11-12)"
_FORMERLY = re.compile(r"\((formerly|previously|superseded|replaced)\b.*$",
                       re.IGNORECASE | re.DOTALL)


def claim_of(entry: Entry) -> Entry:
    """The entry without its "(formerly: …)" history: only the rest is claimed as current."""
    text = _FORMERLY.sub("", entry.text)
    return entry if text == entry.text else Entry(entry.file, text, entry.section, entry.index)


def classify(entry: Entry, labels: Labels, scope: Scope) -> Verdict:
    claim = claim_of(entry)
    for pattern in labels.in_scope(labels.wrong, scope):
        if pattern.matches(claim):
            return Verdict(entry, "wrong", pattern.id)
    for pattern in labels.in_scope(labels.noise, scope):
        if pattern.matches(entry):
            return Verdict(entry, "noise", pattern.id)
    for pattern in (labels.in_scope(labels.facts, scope) + labels.in_scope(labels.ok, scope)
                    + labels.hand_patterns):
        if pattern.matches(entry):
            return Verdict(entry, "useful", pattern.id)
    return Verdict(entry, "neutral" if entry.index else "other")


def score_files(files: dict[str, str], labels: Labels, scope: Scope,
                expected: list[Pattern], *, aliases: dict[str, str] | None = None) -> Score:
    """Score a set of files (name -> text): memory (scope "memory") or one session's notes.

    ``aliases`` maps sandbox paths (the temp workspace) to placeholders before matching, so
    the workspace's own path is not mistaken for a temp path. A fact counts as recalled only
    through a useful entry (not through a wrong claim, a log line or quoted chat).
    """
    result = Score(expected=[p.id for p in expected])
    entries: list[Entry] = []
    for name, text in sorted(files.items()):
        result.leaks += sum(text.count(secret) for secret in labels.secrets)
        if name == "MEMORY.md":
            result.long_index_lines += sum(1 for line in text.splitlines()
                                           if len(line) > INDEX_LIMIT)
        for real, placeholder in sorted((aliases or {}).items(), key=lambda kv: -len(kv[0])):
            text = text.replace(real, placeholder)
        entries += entries_of(text, name, notes=scope == "notes")
    result.verdicts = [classify(e, labels, scope) for e in entries]
    usable = [v.entry for v in result.verdicts if v.label == "useful"]
    for pattern in expected:
        if any(pattern.matches(e) for e in usable):
            result.matched.append(pattern.id)
    if scope == "memory":
        for pattern in labels.hand_patterns:
            result.hand_expected.append(pattern.id)
            if any(pattern.matches(e) for e in usable):
                result.hand_kept.append(pattern.id)
    return result


def expected_facts(labels: Labels, scope: Scope, session: str | None = None) -> list[Pattern]:
    facts = labels.in_scope(labels.facts, scope)
    if session is None:
        return facts
    return [f for f in facts if session in f.sessions]
