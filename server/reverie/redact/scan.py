"""The redaction engine: which rules a text needs, and running them.

One entry point, ``redact(text) -> (clean text, secrets replaced)``; the rules are data in
``reverie.redact.rules``. How it stays fast and linear:

- a rule scans a text only when one of its literals is in it: one pass finds which are
  (``_HitScan``, or RE2's literal set when installed), and most texts hold none. Rules whose
  literals are words code is full of scan longer texts directly, and finder rules (names by
  structure, the entropy layer) run on every text, each starting with a few ``in`` tests;
- a long text is redacted in blocks of whole lines (no match spans a line, except those of the
  multi-line rules, which scan the whole text first), so each block runs only its own rules.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from reverie.redact import structure
from reverie.redact.rules import MARKER_PREFIX, RULES, Rule, apply_rule, redaction_marker

__all__ = ["redact", "redact_value"]

logger = logging.getLogger(__name__)

_RULES = RULES


class _Re2Trigger:
    """Which rules can match a text, in one pass: an RE2 set of every rule's literals.

    RE2's set runs all literals as one automaton over the UTF-8 bytes, several times faster
    than ``_HitScan`` on texts past a few hundred characters (below that, the call costs more
    than it saves). Optional (``pip install 'reverie[fast]'``): without ``google-re2`` the
    literal scan in Python chooses the same rules or more, so the results are the same."""

    def __init__(self, module: Any, needles: tuple[str, ...]) -> None:
        options = module.Options()
        options.literal = True
        options.case_sensitive = True
        self._set = module.Set.SearchSet(options)
        for needle in needles:
            self._set.Add(needle)
        self._set.Compile()

    def present(self, text: str) -> list[int]:
        """Indexes of the needles ``text`` contains."""
        found: list[int] | None = self._set.Match(text.encode("utf-8", "surrogatepass"))
        return found or []


#: rules without a literal to look for: they run on every text
_ALWAYS = frozenset(index for index, rule in enumerate(_RULES) if not rule.needles)
#: every rule's literals, once each, and the rules each one stands for
_NEEDLES = tuple(dict.fromkeys(needle for rule in _RULES for needle in rule.needles))
_OWNERS = tuple(
    tuple(index for index, rule in enumerate(_RULES) if needle in rule.needles)
    for needle in _NEEDLES
)

#: How often each character of a literal occurs in real transcripts, per 10,000 characters
#: (measured on tests/fixtures/transcripts; characters not listed are rarer than ``~``).
_CHAR_FREQUENCY = {
    " ": 1583, "e": 709, "t": 489, "s": 469, "o": 408, "i": 388, "n": 379, "r": 376, "a": 350,
    "d": 263, "c": 255, "l": 236, "-": 191, "p": 184, "m": 174, "u": 160, "/": 132, ".": 123,
    "f": 123, "g": 116, ":": 108, "h": 105, "1": 101, "b": 89, "_": 86, "0": 85, "2": 84,
    "v": 72, "4": 70, "3": 65, "5": 65, "y": 64, "=": 60, "6": 59, "x": 57, "w": 57, "9": 55,
    "k": 54, "8": 44, ">": 39, "C": 35, "S": 34, "E": 28, "T": 28, "A": 27, "U": 26, "<": 26,
    "P": 25, "I": 23, "R": 21, "L": 21, "O": 21, "D": 20, "M": 19, "N": 18, "F": 13, "B": 12,
    "H": 12, "Z": 12, "V": 11, "q": 10, "W": 10, "G": 10, "z": 10, "Y": 9, "K": 8, "J": 8,
    "X": 6, "~": 2,
}


def _anchor_characters(needles: tuple[str, ...]) -> frozenset[str]:
    """Few, rare characters such that every literal holds one (a weighted set cover, greedy,
    then pruned): the scan below stops only at these."""
    def weight(char: str) -> int:
        return _CHAR_FREQUENCY.get(char, 1)

    uncovered = set(needles)
    chosen: list[str] = []
    while uncovered:
        best = min(
            sorted({c for needle in uncovered for c in needle}),
            key=lambda c: weight(c) / sum(1 for needle in uncovered if c in needle),
        )
        chosen.append(best)
        uncovered = {needle for needle in uncovered if best not in needle}
    for char in sorted(chosen, key=weight, reverse=True):
        rest = [c for c in chosen if c != char]
        if all(any(c in needle for c in rest) for needle in needles):
            chosen = rest
    return frozenset(chosen)


class _HitScan:
    """Which rules can match a text, in one ``re`` pass: the pure-Python stand-in for RE2's set.

    Python's ``re`` has no multi-literal search, and an alternation of the literals stops at
    nearly every letter. So each literal is found through its rarest character (``oken`` at
    its ``k``, checked backwards with a look-behind): the scan skips through the text in C and
    stops only where one of a dozen rare characters stands. ``findall`` returns each hit as
    text from that character on, which names the literal (or the few sharing that text).

    ``findall`` resumes after a hit, so a literal overlapping one already found can go
    unreported; each hit therefore also stands for every literal that could overlap it. A rule
    run for nothing costs one scan; a rule skipped wrongly would leak, so the mapping only
    ever errs towards running more rules. Rules in ``always`` are reported for every text."""

    def __init__(self, rules: tuple[Rule, ...], always: frozenset[int] = frozenset()) -> None:
        needles = tuple(dict.fromkeys(
            needle for index, rule in enumerate(rules) if index not in always
            for needle in rule.needles
        ))
        owners = [
            {index for index, rule in enumerate(rules) if needle in rule.needles} - always
            for needle in needles
        ]
        anchors = _anchor_characters(needles)
        at = {
            needle: min((i for i, c in enumerate(needle) if c in anchors),
                        key=lambda i: (_CHAR_FREQUENCY.get(needle[i], 1), i))
            for needle in needles
        }
        by_anchor: dict[str, list[str]] = {}
        for needle in needles:
            by_anchor.setdefault(needle[at[needle]], []).append(needle)
        self._pattern = re.compile("|".join(
            re.escape(anchor) + "(?:" + "|".join(
                (f"(?<={re.escape(n[:at[n] + 1])})" if at[n] else "") + re.escape(n[at[n] + 1:])
                for n in sorted(group, key=len, reverse=True)
            ) + ")"
            # the engine tries the groups in order at each stop: the commonest anchor first
            for anchor, group in sorted(
                by_anchor.items(), key=lambda item: -_CHAR_FREQUENCY.get(item[0], 1)
            )
        ))
        covered: dict[str, set[int]] = {}
        for needle in needles:
            found = covered.setdefault(needle[at[needle]:], set(always))
            for other, other_owners in zip(needles, owners, strict=True):
                if other == needle or _may_overlap(needle, at[needle], other, at[other]):
                    found.update(other_owners)
        self.anchors = anchors
        self._all = rules
        self._always = tuple(rules[index] for index in sorted(always))
        self._indexes = {hit: frozenset(found) for hit, found in covered.items()}
        self._rules = {
            hit: tuple(rules[i] for i in sorted(found)) for hit, found in covered.items()
        }

    def rules(self, text: str) -> tuple[Rule, ...]:
        """The rules that can match ``text``, in rule order."""
        hits = set(self._pattern.findall(text))
        if not hits:
            return self._always
        if len(hits) == 1:
            return self._rules[hits.pop()]
        indexes = frozenset().union(*map(self._indexes.__getitem__, hits))
        return tuple(self._all[index] for index in sorted(indexes))


def _may_overlap(found: str, found_at: int, other: str, other_at: int) -> bool:
    """Whether ``other`` can stand in the text with its anchor inside the hit of ``found``
    (from ``found``'s anchor to its end), the characters they share agreeing."""
    for start in range(found_at - other_at, len(found) - other_at):  # ``other``'s start
        lo, hi = max(0, start), min(len(found), start + len(other))
        if all(found[i] == other[i - start] for i in range(lo, hi)):
            return True
    return False


#: Without RE2, a text up to this length is scanned once for every rule's literals and only
#: the rules with one present run (most short texts run none). A longer text holds the common
#: words (``token``, ``key``...) and often the common letters of some vendor prefixes (``gl``,
#: ``dapi``) somewhere: those rules scan it directly, the literal scan looks for the rest.
_SHORT_TEXT = 256
#: a literal with no character rarer than this (per 10,000) is not worth looking for first
_RARE_ENOUGH = 100


def _direct_rules(rules: tuple[Rule, ...]) -> frozenset[int]:
    return _ALWAYS | frozenset(
        index for index, rule in enumerate(rules)
        if rule.common or any(
            min(_CHAR_FREQUENCY.get(c, 1) for c in needle) > _RARE_ENOUGH for needle in rule.needles
        )
    )


def _load_trigger() -> _Re2Trigger | None:
    try:
        module = importlib.import_module("re2")
        return _Re2Trigger(module, _NEEDLES)
    except (ImportError, AttributeError, RuntimeError, ValueError) as exc:  # missing or broken
        if not isinstance(exc, ImportError):
            logger.warning("google-re2 unusable (%s); redaction checks literals in Python", exc)
        return None


class _Lazy:
    """A ``_HitScan`` built at its first use (~80 ms of CPU: the overlap table and one large
    pattern each): a process that redacts one long text with RE2 at hand (the session-start
    hook) never needs either scan."""

    def __init__(self, always: Callable[[], frozenset[int]]) -> None:
        self._always = always
        self._scan: _HitScan | None = None

    def _built(self) -> _HitScan:
        if self._scan is None:
            self._scan = _HitScan(_RULES, always=self._always())
        return self._scan

    def rules(self, text: str) -> tuple[Rule, ...]:
        return self._built().rules(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._built(), name)


_TRIGGER = _load_trigger()
_SHORT_HITS = _Lazy(lambda: _ALWAYS)
_LONG_HITS = _Lazy(lambda: _direct_rules(_RULES))


def _rules_for(text: str, trigger: _Re2Trigger | None) -> Sequence[Rule]:
    if len(text) <= _SHORT_TEXT:  # faster than a call into RE2 at this length
        return _SHORT_HITS.rules(text)
    if trigger is not None:
        hits = trigger.present(text)
        found = {i for hit in hits for i in _OWNERS[hit]} | _ALWAYS
        return [_RULES[index] for index in sorted(found)]
    return _LONG_HITS.rules(text)


#: passes at most (the second one almost never finds anything, see ``redact``)
_MAX_PASSES = 4


def redact(text: str) -> tuple[str, int]:
    """Replace secrets in ``text``; return the cleaned text and how many secrets were replaced.

    A pass that replaced something is followed by another over the lines holding a marker: a
    replacement can complete a match that failed before (a token glued to a key that is now a
    marker). Repeating until a pass finds nothing makes ``redact`` idempotent by construction;
    a text without secrets (almost every text) takes one pass."""
    if len(text) <= _SHORT_TEXT:  # most calls: spare them the general path's calls
        rules = _SHORT_HITS.rules(text)
        if not rules:
            return text, 0
        text, total = _apply(text, rules)
    else:
        text, total = _redact(text, _TRIGGER)
    count = total
    for _ in range(_MAX_PASSES - 1):
        if not count:
            break
        text, count = _redact_marked_lines(text)
        total += count
    return text, total


def _redact_marked_lines(text: str) -> tuple[str, int]:
    """Another pass over the lines that hold a marker (a match never spans a newline, except
    the PEM and ``<private>`` blocks, which a marker then replaces whole)."""
    parts: list[str] = []
    total = done = 0
    at = text.find(MARKER_PREFIX)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        cleaned, count = _redact(text[start:end], _TRIGGER)
        parts += [text[done:start], cleaned]
        total += count
        done = end
        at = text.find(MARKER_PREFIX, end)
    parts.append(text[done:])
    return "".join(parts), total


#: A longer text is redacted in blocks of whole lines of about this size, each scanned only by
#: the rules whose literals it holds (a long text holds nearly all of them somewhere). No match
#: spans a line, except those of the multi-line rules, which scan the whole text first.
_BLOCK = 16_384
_MULTILINE_RULES = tuple(rule for rule in _RULES if rule.multiline)
_FINDER_RULES = tuple(rule for rule in _RULES if rule.finder is not None)
assert all(rule.finder is not None for rule in _RULES[len(_RULES) - len(_FINDER_RULES):]), (
    "the finder rules must come last: a long text runs them after its blocks")


def _redact(text: str, trigger: _Re2Trigger | None) -> tuple[str, int]:
    if len(text) <= _BLOCK:
        rules = _rules_for(text, trigger)
        return _apply(text, rules) if rules else (text, 0)
    text, total = _apply(text, _MULTILINE_RULES)
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = text.find("\n", start + _BLOCK)
        end = len(text) if end < 0 else end + 1
        for _ in range(8):  # a token wrapped over the boundary stays in one block
            following = text.find("\n", end)
            following = len(text) if following < 0 else following
            if end >= len(text) or not structure.continues(text[end:following].rstrip("\r")):
                break
            end = min(len(text), following + 1)
        block = text[start:end]
        rules = [rule for rule in _rules_for(block, trigger) if rule.finder is None]
        cleaned, count = _apply(block, rules, multiline=False)
        pieces.append(cleaned)
        total += count
        start = end
    # the finder rules come last in the rules' order and are linear: once over the whole text
    text, count = _apply("".join(pieces), _FINDER_RULES)
    return text, total + count


def _apply(text: str, rules: Iterable[Rule], *, multiline: bool = True) -> tuple[str, int]:
    """``text`` through ``rules`` in order (``multiline=False``: without the multi-line ones)."""
    total = 0
    for rule in rules:
        if not multiline and rule.multiline:
            continue
        text, count = apply_rule(rule, text)
        total += count
    return text, total


#: the longest string ``redact_value`` keeps in a caller's ``memo``
MEMO_CHARS = 512


def redact_value(value: object, memo: dict[str, tuple[str, int]] | None = None
                 ) -> tuple[object, int]:
    """``value`` (a JSON-shaped tool input: str, list, dict, scalars) with every string redacted,
    keys included, and how many secrets were replaced. A string under a key is also judged with
    its key, as ``{"key": "value"}``: ``{"DB_PASSWORD": "hunter2"}`` has no secret in either
    string alone.

    ``memo``: a dict the caller keeps between calls, holding ``redact``'s answer for strings
    of at most ``MEMO_CHARS`` (``redact`` is a pure function, so the result is the same): many
    values of one shape (the search index's tail states) repeat their keys and most strings."""
    if isinstance(value, str):
        return _redact_memo(value, memo)
    if isinstance(value, list | tuple):
        total = 0
        items: list[object] = []
        for item in value:
            clean, n = redact_value(item, memo)
            items.append(clean)
            total += n
        return items, total
    if isinstance(value, dict):
        total = 0
        result: dict[object, object] = {}
        for key, item in value.items():
            clean_key, n = _redact_memo(key, memo) if isinstance(key, str) else (key, 0)
            clean, m = redact_value(item, memo)
            if isinstance(key, str) and isinstance(clean, str) and clean:
                clean, p = _with_its_key(key, clean, memo)
                m += p
            result[clean_key] = clean
            total += n + m
        return result, total
    return value, 0


def _redact_memo(text: str, memo: dict[str, tuple[str, int]] | None) -> tuple[str, int]:
    if memo is None or len(text) > MEMO_CHARS:
        return redact(text)
    found = memo.get(text)
    if found is None:
        found = memo[text] = redact(text)
    return found


def _with_its_key(key: str, value: str, memo: dict[str, tuple[str, int]] | None = None
                  ) -> tuple[str, int]:
    paired, count = _redact_memo(json.dumps({key: value}), memo)
    if not count:
        return value, 0
    try:
        loaded = json.loads(paired)
    except ValueError:  # a rule took the closing quote (an unclosed <private>): hide it all
        return redaction_marker("private"), 1
    found = next(iter(loaded.values())) if isinstance(loaded, dict) and loaded else value
    return (found, 1) if isinstance(found, str) and found != value else (value, 0)

