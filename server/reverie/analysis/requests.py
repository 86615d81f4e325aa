"""How a person's message is read: a menu pick, a retraction, a pasted prompt, the question at
the end of the agent's reply it answers, which statement supersedes which, and the title a
request gives a session.
"""

from __future__ import annotations

import re

from reverie.analysis.outcomes import first_line, shorten
from reverie.analysis.statements import StatementKind, plain_statement
from reverie.analysis.working import _Statement

#: a bare pick from a menu the agent offered: "B", "2", "a)", "y", "option 3"
_MENU_CHOICE = re.compile(r"^\s*(?:option\s+)?[A-Za-z0-9][).:]?\s*$", re.IGNORECASE)
#: the person takes back what they said just before
_RETRACTION = re.compile(r"^\W*(?:no[,.!]?\s+)?(?:scratch that|ignore (?:that|what i said|my last"
                         r"(?: message)?)|forget (?:that|what i said)|never ?mind|disregard that"
                         r"|i take (?:that|it) back)\b", re.IGNORECASE)
#: the end of a reply that asks the person to choose or confirm
_ASKS_BACK = re.compile(r"\?\s*(?:```)?\s*$|\?\s+(?:you can|either|options?|\d[.)]|[-*] )|"
                        r"\b(?:would you like|do you want|should i|shall i|"
                        r"which (?:one|option|do you)|let me know (?:if|which|whether)|"
                        r"please (?:confirm|choose|pick))\b", re.IGNORECASE)


#: a reply of one or two words: a name, a value, a choice ("M-Claude", "the second one")
_BARE = re.compile(r"^\W*[\w.@/~-]+(?:\s+[\w.@/~-]+)?\W*$")
#: one-word requests that are tasks even right after the agent asked something
_TASK_WORDS = frozenset({"push", "commit", "pull", "merge", "deploy", "run", "test", "build",
                         "stop", "undo", "revert", "release", "publish", "retry", "rebase"})


def bare_answer(text: str) -> bool:
    """A short reply to the agent's question that names something and asks for nothing."""
    if _BARE.match(text) is None:
        return False
    first = text.strip().split()[0].lower().strip(".,!")
    return first not in _TASK_WORDS and _ASKS.search(text) is None


def _looks_pasted(text: str) -> bool:
    """A prompt pasted from elsewhere (a task spec, an assignment): long and structured, with
    headings or many list items. Its "Note:" and "Never …" lines are not this person's rules."""
    if len(text) < 600:
        return False
    lines = text.splitlines()
    structured = sum(1 for line in lines if _STRUCTURE.match(line))
    return (len(lines) >= 12 and structured >= 4) or text.count("\n#") >= 2


_STRUCTURE = re.compile(r"^\s*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s)")


def _supersedes(new: _Statement, old: _Statement) -> bool:
    """A later statement on the same subject replaces an earlier one when it is a decision, a
    correction, or names what the earlier one chose."""
    if new.kind in (StatementKind.DECISION, StatementKind.CORRECTION, StatementKind.RENAME):
        # "No, don't use npm — use pnpm" after "this repo uses pnpm": a restatement
        return not (new.chosen and new.chosen.lower() in old.text.lower())
    if new.replaces and new.replaces.lower() in old.text.lower():
        return True
    return bool(old.chosen and new.replaces and old.chosen.lower() == new.replaces.lower())


def _title_of(task: str, asks: bool = True) -> str | None:
    """A title from a request: its first sentence that asks for something (``asks``; else its
    first line), chat framing dropped, at most twelve words."""
    sentences = [p for p in _TITLE_SPLIT.split(task) if p.strip()][:12]
    chosen = next((p for p in sentences if asks and _ASKS.search(p)), first_line(task, 400))
    # a request that opens with the same instructions every time ("Work on bead rv-12. Run
    # `bd show rv-12`. Please follow AGENTS.md…"): the first sentence that names the specific
    # thing (an id, a path, code) says what this session is about
    named = next((p for p in sentences[:6] if _specific(p)), None)
    if named is not None and not _specific(chosen) and _boilerplate(chosen):
        chosen = named
    words = plain_statement(first_line(chosen, 400), capitalise=False).split()
    return shorten(" ".join(words[:12]), 100).rstrip(".") or None


_TITLE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
#: what names one thing: an id (``rv-12``, ``ABC-123``, ``#42``), a path, code in backticks
_SPECIFIC = re.compile(r"`[^`]{2,}`|#\d+\b|\b[A-Za-z][A-Za-z0-9]*-[A-Za-z0-9]*\d[A-Za-z0-9]*\b|"
                       r"\b[\w-]+/[\w./-]+|\b[\w-]+\.(?:py|ts|tsx|js|jsx|go|rs|rb|java|kt|md|"
                       r"json|toml|ya?ml|sql|css|html|vue|svelte|sh)\b")
#: files every session of a repo mentions (its agent instructions): nothing specific
_BOILERPLATE_FILES = re.compile(r"\b(?:AGENTS|CLAUDE|GEMINI|README|CONTRIBUTING|CONVENTIONS)"
                                r"\.md\b", re.IGNORECASE)


#: the instructions every session of a repo opens with ("Read AGENTS.md first", "Please follow
#: the conventions"): they say nothing of this session's task ("fix any failing unit tests" does)
_BOILERPLATE = re.compile(r"^\W*(?:please\s+)?(?:read|follow|see|check|remember|note|use the|"
                          r"make sure|be sure|keep in mind)\b", re.IGNORECASE)


def _boilerplate(sentence: str) -> bool:
    return _BOILERPLATE.search(sentence) is not None or \
        _BOILERPLATE_FILES.search(sentence) is not None


def _specific(sentence: str) -> bool:
    return _SPECIFIC.search(_BOILERPLATE_FILES.sub("", sentence)) is not None


_ASKS = re.compile(
    r"\b(?:fix|add|implement|make|update|create|write|build|change|refactor|rename|remove|"
    r"delete|migrate|debug|investigate|set up|install|deploy|switch|move|port|upgrade|support|"
    r"work on|continue|resolve|address|tackle|pick up|"
    r"please|can you|could you|let'?s|need|want|why|how)\b|\?",
    re.IGNORECASE,
)
