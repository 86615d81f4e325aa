"""A person's query → a safe FTS5 ``MATCH`` expression.

The query is never handed to FTS5 as syntax: it is tokenised here (words and identifiers;
``"``, ``*``, ``:``, ``NEAR``, parentheses are just separators or words) and every term is
quoted, so no input can be an FTS5 syntax error. Terms are OR-ed: BM25 ranks documents that
hold more of the rarer terms first, which is what a question in natural words needs.
"""

from __future__ import annotations

import re

#: at most this much of a query is read (a 1 MB query is cut, not refused)
MAX_QUERY_CHARS = 2_000
#: at most this many distinct terms go into the expression
MAX_TERMS = 24

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
#: only words that are identifiers with parts: a lower-then-upper step, or an underscore
_IDENTIFIER = re.compile(r"\b[A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9_]*|\b[A-Za-z0-9]+_[A-Za-z0-9_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

#: words that carry no topic in an English question ("how did we fix the ...")
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves last time again also
tell show remember recall find look know please thing things something anything way ever
let lets let's did we us one get got make made use used using
""".split())


def query_terms(query: str) -> list[str]:
    """Distinct lower-case terms of ``query`` in order, stop words left out (unless nothing
    else is left), camelCase and snake_case identifiers also split into their parts."""
    text = query[:MAX_QUERY_CHARS]
    words: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group(0).replace("’", "'")
        words.append(word.lower().replace("'", ""))
        parts = _CAMEL.findall(word)
        if len(parts) > 1:
            words.extend(part.lower() for part in parts)
    seen: dict[str, None] = {}
    for word in words:
        if word and word not in seen:
            seen[word] = None
    terms = [w for w in seen if w not in STOP_WORDS and len(w) > 1]
    if not terms:
        terms = [w for w in seen if len(w) > 1] or list(seen)
    return terms[:MAX_TERMS]


def identifier_parts(text: str) -> str:
    """The parts of camelCase / snake_case identifiers in ``text``, space-separated (indexed
    beside the text so "discount" finds ``applyDiscount``)."""
    out: dict[str, None] = {}
    for word in _IDENTIFIER.findall(text):
        for chunk in word.split("_"):
            for piece in _CAMEL.findall(chunk):
                out[piece.lower()] = None
    return " ".join(out)


def quote(term: str) -> str:
    """One FTS5 string token (a ``"`` inside is doubled)."""
    return '"' + term.replace('"', '""') + '"'


def match_expression(terms: list[str]) -> str | None:
    """``"a" OR "b" OR …``; None when there is nothing to look for."""
    if not terms:
        return None
    return " OR ".join(quote(t) for t in terms)
