"""The shared subject lexicon, seen from memory: which subject a statement is about, whether
that subject allows one option at a time, and which option a statement picks."""

from __future__ import annotations

import re
from functools import cache

from reverie.analysis.statements import subject_of

#: subjects where one option holds at a time: a new choice replaces the old one
EXCLUSIVE = frozenset({
    "package-manager", "test-runner", "formatter", "linter", "type-checking", "database",
    "orm", "cache", "frontend-framework", "backend-framework", "api-style", "deployment",
    "language", "ci",
})
_WORD = re.compile(r"[A-Za-z0-9][\w.'+-]*")
#: words that name a subject rather than an option of it
_GENERIC = frozenset({
    "db", "database", "databases", "lockfile", "orm", "cache", "linter", "lint", "formatter",
    "formatting", "deploy", "deployment", "ci", "pipeline", "typecheck", "migration",
    "migrations", "tests", "test", "testing",
})


def known_subject(subject: str) -> bool:
    """A subject of the shared lexicon (not one made of a sentence's first words)."""
    return subject in _lexicon()


@cache
def _lexicon() -> frozenset[str]:
    from reverie.analysis import statements

    known: frozenset[str] = getattr(statements, "KNOWN_SUBJECTS", statements._KNOWN)
    return frozenset(known)


#: words that, just before an option, mean it is the one NOT chosen
_AGAINST = frozenset({
    "never", "not", "no", "don't", "dont", "avoid", "drop", "dropping", "instead", "than",
    "over", "from", "without", "stop", "replace", "replacing", "nor", "or", "against",
})


def choice_of(text: str, subject: str) -> str | None:
    """The option of ``subject`` that ``text`` picks: the first one it names that is not
    negated ("pnpm" in "Use pnpm, never npm" and in "Don't use npm here — use pnpm")."""
    words: list[str] = [str(w).lower().rstrip(".,;:'") for w in _WORD.findall(text)]
    for n, word in enumerate(words):
        if len(word) < 2 or word in _GENERIC or subject_of(word) != subject:
            continue
        if not set(words[max(0, n - 2):n]) & _AGAINST:
            return word
    return None


def subject_fields(subject: str, text: str) -> dict[str, object]:
    """The subject, label and choice of a statement."""
    known = known_subject(subject)
    exclusive = subject in EXCLUSIVE
    # only a one-choice subject has "the option it uses"; elsewhere the analysis' ``chosen``
    choice = choice_of(text, subject) if known and exclusive else None
    # a one-choice subject labels only statements about the choice ("use pnpm"), not every
    # statement that names the tool ("run `pnpm lint` before you finish")
    labelled = known and (not exclusive or choice is None or re.search(
        rf"\b(?:use|uses|using|is|on|with|to)\s+`?{re.escape(choice)}\b", text,
        re.IGNORECASE) is not None)
    return {
        "subject": subject,
        "label": humanise(subject) if labelled else "",
        "exclusive": exclusive,
        "choice": choice,
    }


def humanise(key: str) -> str:
    words = " ".join(w for w in key.replace("_", "-").split("-") if w)
    return words[:1].upper() + words[1:]
