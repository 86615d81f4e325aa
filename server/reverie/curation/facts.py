"""Facts and the book that merges them.

A fact is one durable statement ("Use pnpm, never npm or yarn") with the evidence behind it: how
many sessions stated it, the latest of them and its date. Its ``slot`` says what it is about; two
facts in the same slot are either the same claim (the evidence adds up: recurrence) or the newer
replaces the older, which survives only as ``formerly`` with the date it was replaced. A
statement a person wrote into a memory file is a fact too (``user``): it is never dropped, only
merged or marked as replaced.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Literal

FactKind = Literal["rule", "decision", "rename", "command", "fix", "note"]

#: how long a kind of fact stays true, for ranking: a standing rule outlives a fixed error
DURABILITY: dict[str, int] = {
    "rule": 6, "decision": 5, "rename": 4, "command": 4, "note": 3, "fix": 2,
}
#: the order kinds are listed in inside a topic file
KIND_ORDER: dict[str, int] = {
    "rule": 0, "decision": 1, "rename": 2, "command": 3, "note": 4, "fix": 5,
}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_WORD = re.compile(r"[a-z0-9][a-z0-9._:/+-]*")
_NEGATION = re.compile(r"\b(?:never|not|no|don't|dont|do not|avoid|stop|without|instead)\b")
_STOP = frozenset(
    "the a an and or of to in on for with by is are be this that it its we use using always "
    "from as at into than then please should must".split()
)
_CODE = re.compile(r"`([^`]+)`")


@dataclass(slots=True)
class Fact:
    """One durable statement and its evidence."""

    slot: str
    kind: FactKind
    text: str
    at: datetime
    label: str = ""
    subject: str = ""
    sessions: int = 1
    session: str = ""
    first: date | None = None
    formerly: str = ""
    replaced_on: date | None = None
    user: bool = False
    #: the topic file the fact was read from (kept there), or "" for a new fact
    topic: str = ""
    #: full ids of the sessions that stated it in this run (the topic's ``sources``)
    sources: list[str] = field(default_factory=list)
    #: what it replaces, when it names it ("npm" in "use pnpm, not npm")
    replaces: str | None = None
    #: the option it picks within its subject ("pnpm"), for subjects that allow one
    choice: str | None = None
    #: the subject allows one choice at a time (package manager, database...)
    exclusive: bool = False
    #: the lines a person wrote, kept byte for byte unless the fact is replaced
    raw: list[str] = field(default_factory=list)
    #: lines under a fact another part of Reverie owns (the check's ``(aging: ...)`` mark),
    #: carried through as they are: their owner adds and removes them
    marks: list[str] = field(default_factory=list)

    @property
    def day(self) -> date:
        return self.at.date()

    @property
    def rank(self) -> float:
        """Durability first, then recurrence, then recency."""
        return (DURABILITY.get(self.kind, 1) * 10 + min(self.sessions, 10) * 3
                + self.at.timestamp() / 1e10)


def words(text: str) -> set[str]:
    """Content words of a statement (inline code kept whole)."""
    lowered = text.lower()
    found = {m.group(1).strip() for m in _CODE.finditer(lowered)}
    found |= {w.strip("._:/+-") for w in _WORD.findall(_CODE.sub(" ", lowered))}
    return {w for w in found if len(w) > 2 and w not in _STOP}


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9`]+", " ", text.lower()).split())


def picks(fact: Fact) -> bool:
    """The statement is about which option its (one-choice) subject uses ("use pnpm"), not
    about something else that happens to name it ("run `pnpm lint` before …")."""
    if not (fact.exclusive and fact.choice):
        return False
    return re.search(rf"\b(?:use|uses|using|is|on|with|to)\s+`?{re.escape(fact.choice)}\b",
                     fact.text, re.IGNORECASE) is not None


def same_claim(old: Fact, new: Fact) -> bool:
    """True when ``new`` restates ``old`` rather than contradicting it."""
    if normalise(old.text) == normalise(new.text):
        return True
    if old.kind in ("command", "fix") or new.kind in ("command", "fix"):
        return _CODE.findall(old.text)[:1] == _CODE.findall(new.text)[:1] != []
    if picks(old) and picks(new) and old.subject == new.subject and old.choice == new.choice:
        return True  # "This repo uses pnpm — never npm" and "Don't use npm — use pnpm"
    if bool(_NEGATION.search(old.text.lower())) != bool(_NEGATION.search(new.text.lower())):
        return False
    a, b = words(old.text), words(new.text)
    if not a or not b:
        return False
    if (a <= b or b <= a) and min(len(a), len(b)) >= 2:
        return True
    return len(a & b) / len(a | b) >= 0.6


_DROPPING = re.compile(
    r"\b(?:no longer use|no longer|drop(?:ping)?|stop using|instead of|not|never|replace|"
    r"rather than|away from|move off)\s+(?:the\s+|using\s+)?`([^`]+)`", re.IGNORECASE)


def dropped(fact: Fact) -> set[str]:
    """What a decision says is no longer used: its ``replaces`` and the code it drops."""
    terms = {m.group(1).strip().lower() for m in _DROPPING.finditer(fact.text)}
    replaces = (fact.replaces or "").lower()
    if replaces and not any(t.startswith(replaces + " ") for t in terms):
        terms.add(replaces)  # unless it is only the first word of a dropped command
    return {t for t in terms if len(t) > 2}


def _names(term: str, text: str) -> bool:
    """``text`` names ``term`` as a word (not as part of ``mkdocs.yml`` or ``npm-run``)."""
    return re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-]|\.\w)", text) is not None


def _stems(text: str) -> set[str]:
    return {w[:5] for w in words(text) if len(w) > 3 and " " not in w}


def _proper(term: str, text: str) -> bool:
    """``term`` is a name, not a common word, where ``text`` says it (``SWR``, ``Postgres``)."""
    found = re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", text, re.IGNORECASE)
    if found is None:
        return False
    said = found.group(0)
    return said != said.lower() or any(ch.isdigit() or ch in "._/@" for ch in said)


def drops_claim(new: Fact, old: Fact) -> bool:
    """``new`` (a decision) drops what ``old`` states is used, whatever their subjects."""
    if new.kind != "decision" or old.kind not in ("rule", "decision", "note"):
        return False
    text = old.text.lower()
    for term in dropped(new):
        at = text.find(term)
        if at < 0 or not _names(term, text):
            continue
        before = text[max(0, at - 24):at]
        if _NEGATION.search(before):
            continue  # old already said not to use it
        if " " in term or "`" + term in text or _stems(new.text) & _stems(old.text) or \
                _proper(term, new.text):
            return True
    return False


def supersedes(new: Fact, old: Fact) -> bool:
    """``new`` (a different claim on the same subject) makes ``old`` no longer true."""
    if new.replaces and old.choice and new.replaces.lower() == old.choice.lower() and \
            new.choice != old.choice:
        return True
    if drops_claim(new, old):
        return True
    if not new.subject or new.subject != old.subject:
        return False
    if new.replaces and any(_names(term, old.text.lower()) for term in dropped(new)):
        return True
    if new.exclusive and new.choice and old.choice and new.choice != old.choice:
        return True
    if new.kind == "rename" and old.kind == "rename":
        return True
    return new.kind == "decision" and old.kind == "decision" and (
        not new.choice or not old.choice or new.choice != old.choice)


class FactBook:
    """Facts by slot, grouped by subject. ``add`` them in the order they were stated: a
    restatement adds evidence, a newer contradicting statement replaces the older one."""

    def __init__(self) -> None:
        self.facts: dict[str, Fact] = {}
        self._subjects: dict[str, list[str]] = {}
        self._choices: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self.facts)

    def __iter__(self) -> Iterator[Fact]:
        return iter(list(self.facts.values()))

    def put(self, fact: Fact) -> None:
        """Store ``fact`` as it is (memory read back from files)."""
        self.facts[fact.slot] = fact
        if fact.subject:
            self._subjects.setdefault(fact.subject, []).append(fact.slot)
        if fact.choice:
            self._choices.setdefault(fact.choice.lower(), []).append(fact.slot)

    def remove(self, slot: str) -> None:
        fact = self.facts.pop(slot, None)
        if fact is not None and fact.subject:
            group = self._subjects.get(fact.subject, [])
            if slot in group:
                group.remove(slot)

    def group(self, subject: str) -> list[Fact]:
        return [self.facts[s] for s in self._subjects.get(subject, []) if s in self.facts]

    def chose(self, option: str) -> list[Fact]:
        """Facts that picked ``option`` (whatever subject the analysis gave them)."""
        return [self.facts[s] for s in self._choices.get(option.lower(), []) if s in self.facts]

    def add(self, fact: Fact) -> None:
        current = self.facts.get(fact.slot)
        if current is not None:
            if same_claim(current, fact):
                self._recur(current, fact)
            elif fact.at >= current.at:
                self._replace([current], fact)
            elif not current.formerly:
                current.formerly, current.replaced_on = _statement(fact), current.day
            return
        peers = self.group(fact.subject) if fact.subject else []
        if fact.replaces and fact.kind in ("decision", "rule"):
            # "drop SWR, move to TanStack" replaces "let's use SWR" whatever its subject
            peers += [p for p in self.chose(fact.replaces) if p not in peers
                      and p.kind in ("decision", "rule") and p.choice != fact.choice]
        if fact.kind == "decision" and dropped(fact):
            peers += [p for p in self.facts.values() if p not in peers and p.at <= fact.at
                      and drops_claim(fact, p)]
        twin = next((p for p in peers if same_claim(p, fact)), None)
        if twin is not None:
            self._recur(twin, fact)
            return
        older = [p for p in peers if supersedes(fact, p) and p.at <= fact.at]
        if older:
            self._replace(older, fact)
            return
        newer = [p for p in peers if supersedes(p, fact) and p.at > fact.at]
        if newer:
            # an older statement arrives late: it is only what the newer one replaced
            for peer in newer:
                if not peer.formerly:
                    peer.formerly, peer.replaced_on = _statement(fact), peer.day
            return
        self.put(fact)

    @staticmethod
    def _recur(current: Fact, fact: Fact) -> None:
        if not (fact.session and fact.session[:8] == current.session[:8]):
            current.sessions += fact.sessions  # the same session again is no new evidence
        for source in fact.sources:
            if source not in current.sources:
                current.sources.append(source)
        if fact.first and (current.first is None or fact.first < current.first):
            current.first = fact.first
        if fact.at >= current.at:
            current.at = fact.at
            current.session = fact.session or current.session
            if not current.user and len(words(fact.text)) >= len(words(current.text)) - 2:
                current.text = fact.text  # the latest wording, unless it says much less
                current.label = fact.label or current.label

    def _replace(self, olds: list[Fact], fact: Fact) -> None:
        """``fact`` replaces ``olds``: they survive only as its ``formerly``."""
        # a person's line is replaced where it stands; else the fact stays in its topic
        people = [f for f in olds if f.user]
        latest = people[0] if people else max(olds, key=lambda f: f.at)
        if fact.kind != "command" or any(f.user for f in olds):
            # a command's older form is not worth a line; a person's text always is
            fact.formerly = "; ".join(_statement(f) for f in olds)
            fact.replaced_on = fact.day
        fact.topic = latest.topic or fact.topic
        fact.first = fact.first or fact.day
        for old in olds:
            self.remove(old.slot)
        self.put(fact)


def _statement(fact: Fact) -> str:
    return fact.text.strip().rstrip(".")
