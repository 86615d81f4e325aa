"""Credentials found by the structure around a name, not by the shape of the value.

After a credential-like name (``DB_PASSWORD``, ``apiKey``, ``client-key-data``, ``Passwort``,
``パスワード``), in any structure that pairs a name with a value (``X=v``, ``X: v``, JSON, YAML,
``--password v``, ``<password>v</password>``, ``- name: X`` / ``value: v``, ``$env:X = 'v'``,
``os.environ['X'] = v``, ``Pwd=v;``, ``IDENTIFIED BY 'v'``, ``.npmrc`` ``_auth=v``), the value
runs to the end of its token (whitespace, or its closing quote) whatever symbols it holds. A
value is kept only when it is a reference (``$VAR``, ``${VAR}``, ``{{ var }}``, a placeholder)
or, where the *name* is code (``password = getpass()``, ``api_key=api_key,``,
``password: str``), when the value is code too.

Names are matched in any casing: the keywords are looked for in ``text.lower()`` (one C call,
same length as the text for every character but a few), and only where a keyword stands is
the original text looked at. Each keyword is a literal, so each scan is the regex engine's
fast literal search; texts without any keyword (most) cost a few ``in`` tests.

``find(text)`` returns the spans to replace; ``reverie.redact.rules`` runs it as one rule. Which
names hold a credential is ``names``; where a value ends and whether it is one, ``values``;
structures without a name keyword before the value (``redis-cli -a``, ``.pgpass``), ``shapes``.
"""

from __future__ import annotations

import bisect
import importlib
import re
from collections.abc import Iterator
from typing import Any

from reverie.redact.names import (
    ASCII_KEYWORDS,
    METADATA,
    NAME_CHARS,
    WORLD_KEYWORDS,
    credential_kind,
)
from reverie.redact.shapes import FINDERS, TOOL_WORDS, short_flags, sql_values
from reverie.redact.values import (
    MARKER_PREFIX,
    Context,
    Span,
    constant_name,
    continues,
    in_raw_json,
    is_code,
    is_reference,
    quote_at,
    value_span,
    wrapped_end,
)

__all__ = ["KINDS", "MARKER_PREFIX", "Span", "constant_name", "continues", "credential_kind",
           "find", "is_code", "is_reference", "wrapped_end"]

#: the kinds this layer reports besides ``env`` (an UPPER_CASE name: ``DB_PASSWORD=...``)
KINDS = ("access_key", "api_key", "auth", "credential", "password", "private_key", "secret",
         "signature", "token", "url_token")

_SEPARATOR = re.compile(
    r"(?:\\{0,3}[\"'`])?\]?(?:[ \t]++=>|=>(?=[\s\"'`\\])|[ \t]*+(?::=|\?:|[=:：])|[>,]|(?=\s))"
)
_NAMED_LEAD = re.compile(
    r"(?:^|[\s{,\[(])-?[ \t]*(?:\\{0,3}[\"'])?(?:name|key|variable)"
    r"(?:\\{0,3}[\"'])?[ \t]*[:=][ \t]*(?:\\{0,3}[\"'])?$"
)
_VALUE_KEY = re.compile(
    r"(?<![\w-])(?:\\{0,3}[\"'])?(?:value|Value|VALUE)(?:\\{0,3}[\"'])?[ \t]*[:=][ \t]*"
)


def find(text: str) -> list[Span]:
    """The values to replace in ``text``, in order, not overlapping."""
    low = text.lower()
    if len(low) != len(text):  # a few characters lower-case to two (``İ``): keep positions
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    words = _KEYWORDS.present(text, low)
    spans: list[Span] = []
    if words:
        spans += _names(text, low, words)
        if any(word in TOOL_WORDS for word in words):
            spans += short_flags(text, low)
        if "identified" in words:
            spans += sql_values(text, low)
    for finder in FINDERS:
        spans += finder(text, low)
    if not spans:
        return spans
    spans.sort(key=lambda s: (s.start, -s.end))
    merged: list[Span] = []
    for span in spans:
        if merged and span.start < merged[-1].end:
            if span.end > merged[-1].end:
                merged[-1] = Span(merged[-1].start, span.end, merged[-1].kind)
            continue
        merged.append(span)
    return merged


class _KeywordSet:
    """Which keywords a text holds: one pass of RE2's case-insensitive literal set when it is
    installed (``reverie[fast]``), else an ``in`` test per keyword on the lower-cased text."""

    def __init__(self) -> None:
        self._words = (*ASCII_KEYWORDS, *TOOL_WORDS, *WORLD_KEYWORDS)
        self._set: Any = None
        try:
            re2 = importlib.import_module("re2")
            options = re2.Options()
            options.literal = True
            options.case_sensitive = False
            self._set = re2.Set.SearchSet(options)
            for word in self._words:
                self._set.Add(word)
            self._set.Compile()
        except (ImportError, AttributeError, RuntimeError, ValueError):
            self._set = None

    def present(self, text: str, low: str) -> list[str]:
        if self._set is not None and len(text) > 512:
            found = self._set.Match(text.encode("utf-8", "surrogatepass")) or []
            return [self._words[index] for index in found]
        words = [w for w in ASCII_KEYWORDS if w in low]
        words += [w for w in TOOL_WORDS if w in text]
        if not low.isascii():
            words += [w for w in WORLD_KEYWORDS if w in low]
        return words


def _keywords(low: str, words: list[str], begin: int = 0, end: int | None = None
              ) -> Iterator[tuple[str, int]]:
    for word in words:
        if word in TOOL_WORDS and word not in ASCII_KEYWORDS:
            continue
        start = low.find(word, begin, end)
        while start >= 0:
            yield word, start
            start = low.find(word, start + len(word), end)


def _occurrences(text: str, low: str, words: list[str], *, ascii: bool = False
                 ) -> tuple[list[tuple[str, int]], bool]:
    """Where the keywords stand, in order: every occurrence, or only those a value can follow.

    Code is full of ``token`` and ``key`` (``max_tokens``, ``token_budget)``, ``key\n``), and
    judging each occurrence in Python cost most of the redaction time. Each keyword's gate
    (``_GATES``) is one regex over the lower-cased text that keeps an occurrence only when
    what follows its name can be a separator and a value (a necessary condition of
    ``_at_name``): the others are dropped in C. All occurrences inside one name end where it
    ends, so a dropped one never decides for a kept one (``done`` in ``_names``).

    The ``- name: X`` / ``value: v`` structure is judged by what stands *before* the name: on
    the line of such a lead and the next one (a name never spans lines), every occurrence is
    taken. So is every occurrence of a text holding a keyword the gates do not know (with a
    space, not ASCII). The flag says whether a lead may stand anywhere (else ``_at_name`` need
    not look for one)."""
    if any(word not in _GATES and (word not in TOOL_WORDS or word in ASCII_KEYWORDS)
           for word in words):
        return sorted(_keywords(low, words), key=lambda item: item[1]), True
    regions = _lead_regions(low)
    found = [(word, hit.start()) for word in words if word in _GATES
             for hit in _GATES[word].finditer(low)
             # (a name over 64 characters is taken as it is: ``_KEY_KEY...`` stays linear)
             if (hit.group("check") is None or hit.group("long") is not None
                 or (tail := _TAIL_MATCH(text, hit.end())) is None or not _rejected(tail, word))
             and (hit.group("blank") is None or not ascii
                  or _blank_value_may_follow(low, hit.start()))]
    if not regions:
        found.sort(key=lambda item: item[1])
        return found, False
    starts = [start for start, _ in regions]

    def inside(at: int) -> bool:
        index = bisect.bisect_right(starts, at) - 1
        return index >= 0 and at < regions[index][1]

    found = [item for item in found if not inside(item[1])]
    for start, end in regions:
        found += _keywords(low, words, start, end)
    order = {word: index for index, word in enumerate(words)}
    found.sort(key=lambda item: (item[1], order[item[0]]))
    return found, True


def _rejected(tail: re.Match[str], word: str) -> bool:
    """Whether ``_names`` would reject the occurrence of ``word`` that ``tail`` (``_TAIL``)
    follows, whatever follows its name: a lower-case letter glued after the keyword
    (``tokens``, ``keyboard``), or a name ending in segments that describe a credential
    (``token_budget``, ``password_min_length``, ``API_KEY_ENV``), which ``credential_kind``
    rejects (every credential segment before them has them among its trailing segments, and
    none of them is a credential). Cased as ``credential_kind`` splits them (``budget``,
    ``Budget``, ``BUDGET``), so each is one segment there."""
    if tail.group("glued"):
        return word not in _GLUED_BEFORE
    return all(part.lower() in METADATA for part in _SEGMENT_SPLIT.split(tail.group(0))[1:])


#: after a keyword: a lower-case letter glued to it, or up to four segments of letters each
#: one word in ``credential_kind``'s reading, up to where the name ends (not a name character)
_TAIL = re.compile(r"(?P<glued>[a-z])|(?:[_.\-](?:[A-Z][a-z]{1,15}|[a-z]{1,16}|[A-Z]{1,16})){1,4}+"
                   r"(?![A-Za-z0-9_.\-]|[^\x00-\x7f])")
_TAIL_MATCH = _TAIL.match
_SEGMENT_SPLIT = re.compile(r"[_.\-]")


def _blank_value_may_follow(low: str, at: int) -> bool:
    """Whether a value after blanks only (``NAME value``) may count for the name holding ``at``
    (``_at_name``: the name is a flag, or follows ``setx`` / ``env`` / ``login <user>``; a
    password's quoted value is let through by the gate itself). Looks at the lower-cased text
    of an ASCII text, where a name's characters are the same as in the text."""
    found = _NAME_TO_AT.search(low, max(0, at - 64), at)
    start = found.start() if found else at
    if low.startswith("-", start) or "setx" in low[max(0, start - 8):start + 1] or (
            "env" in low[max(0, start - 8):start + 1]):
        return True
    # ``login <user> NAME value``: where ``_names`` starts the name (after an escape's
    # letter, before a ``$``), ``_netrc`` must hold there (not ``login(`` three lines up)
    if start >= 1 and low[start - 1] == "\\" and low[start:start + 1] in ("n", "r", "t") and (
            start < 2 or low[start - 2] != "\\"):
        start += 1
    if start > 0 and low[start - 1] == "$":
        start -= 1
    return "login" in low[max(0, start - 202):start + 1] and _netrc(low, start)


#: a name's characters up to the keyword (searched from 64 characters before it, as ``_names``
#: goes back at most 64)
_NAME_TO_AT = re.compile(r"[a-z0-9_.\-]*\Z")


def _lead_regions(low: str) -> list[tuple[int, int]]:
    """The lines where a name may follow a ``name: `` / ``"key": "`` / ``variable=`` lead
    (``_NAMED_LEAD``: the lead word not glued to a word before it, or padded with blanks to the
    edge of the 40 characters ``_at_name`` looks at): the lead's line and the next, sorted and
    merged."""
    regions: list[tuple[int, int]] = []
    for lead, gate in _LEAD_GATES:
        if lead not in low:
            continue
        for found in gate.finditer(low):
            at = found.start()
            if found.group("pad") is None and not any(
                    word in found.group("name") for word in _GATES):
                continue
            line_end = low.find("\n", at)
            line_end = len(low) if line_end < 0 else low.find("\n", line_end + 1)
            regions.append((low.rfind("\n", 0, at) + 1, len(low) if line_end < 0 else line_end))
    regions.sort()
    merged: list[tuple[int, int]] = []
    for start, end in regions:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _names(text: str, low: str, words: list[str]) -> list[Span]:
    spans: list[Span] = []
    done = -1  # a name already handled (``password`` holds ``pass`` and ``sword``...)
    found, leads = _occurrences(text, low, words, ascii=text.isascii())
    for word, at in found:
        if at < done:
            continue
        if word[0].isascii() and " " not in word:
            after = at + len(word)
            if text[after:after + 1] in _LOWER and word not in _GLUED_BEFORE:
                continue  # ``tokens``, ``keyboard``, ``author``: a longer word
            if at and text[at - 1] in _LOWER and (
                    word in _ALONE or (word == "key" and not low.endswith(_KEY_GLUED, 0, at))):
                continue  # ``bypass``, ``monkey``, ``oauth``, ``design``
            start = at
            while start > 0 and text[start - 1] in NAME_CHARS and at - start < 64:
                start -= 1
            tail = _NAME_AFTER.match(text, after)
            end = tail.end() if tail else after
            while end > after and text[end - 1] in ".-":
                end -= 1
            if start >= 1 and text[start - 1] == "\\" and text[start] in "nrt" and (
                    start < 2 or text[start - 2] != "\\"):
                start += 1  # ``\nAPI_KEY=`` in raw JSONL: the ``n`` belongs to the escape
            if start > 0 and text[start - 1] == "$":
                start -= 1  # ``$password = '...'`` (PowerShell, PHP)
        else:
            start, end = at, at + len(word)
        done = end
        following = text[end:end + 1]
        if following in _NOT_AFTER_A_NAME:
            continue
        if following == "\\" and text[end + 1:end + 2] in ("n", "r", "t"):
            pass  # ``- name: DB_PASSWORD\\n`` in raw JSON: a line ends there
        elif following in _QUOTES_AND_BRACKETS:  # ``"api_key": ``, ``['KEY'] = ``, ``"KEY")``
            i = end
            while i < len(text) and i - end < 4 and text[i] in _QUOTES_AND_BRACKETS:
                i += 1
            if text[i:i + 1] not in _AFTER_A_QUOTED_NAME:
                continue
        name = text[start:end]
        if name.isascii() and name.lower().strip("$") not in _NATURAL_ASCII and credential_kind(
                name, url=start > 0 and text[start - 1] in "?&") is None:
            continue
        span = _at_name(text, low, start, end, leads=leads)
        if span is not None:
            spans.append(span)
            done = max(done, span.end)
    return spans


_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
#: keywords that are whole words when glued to letters after them (``passwort`` is its own)
_GLUED_BEFORE = frozenset({"contrase", "kennwort", "wachtwoord", "haslo", "sifre", "losenord",
                           "salasana", "heslo", "jelszo", "adgangskode"})
#: keywords never glued to a lower-case word before them (``bypass``, ``oauth``, ``design``)
_ALONE = frozenset({"pass", "pwd", "auth", "sig", "signature", "creds"})
_KEY_GLUED = ("api", "access", "secret", "private")
_QUOTES_AND_BRACKETS = frozenset("\"'`\\]")
_AFTER_A_QUOTED_NAME = frozenset(" \t=:：,>\n\r")
_NAME_AFTER = re.compile(r"(?:[A-Za-z0-9_.\-]|[^\x00-\x7f])+")
#: what cannot follow a name that a value follows (a call, an attribute, a path, a word)
_NOT_AFTER_A_NAME = frozenset("(){}/|;+*!%^~@#&[") | frozenset("abcdefghijklmnopqrstuvwxyz")


def _at_name(text: str, low: str, start: int, end: int, *, leads: bool = True) -> Span | None:
    name = text[start:end]
    natural = not name.isascii() or " " in name or name.lower().strip("$") in _NATURAL_ASCII
    before = text[start - 1] if start else "\n"
    url = before in "?&" or low.endswith("&amp;", 0, start)
    kind = "password" if natural else credential_kind(name, url=url)
    if kind is None:
        return None
    upper = not natural and name.lstrip("$-").replace("_", "").replace("-", "").isupper()
    ctx = Context(kind, name, flag=name.startswith("-"), url=url, natural=natural, upper=upper)
    window = low[max(0, start - 40):start] if leads else ""
    if ("name" in window or "key" in window or "variable" in window) and _NAMED_LEAD.search(
            window):
        return _named_value(text, ctx, end)
    separator = _SEPARATOR.match(text, end)
    if kind == "password" and _netrc(low, start):  # ``login me password =x``: the value whole
        gap = _GAP.match(text, end)
        return value_span(text, ctx, gap.end()) if gap else None
    if separator is None:
        return None
    sep = separator.group(0)
    mark = sep.strip(" \t\"'`\\]")
    name_quoted = sep.lstrip("\\")[:1] in ("\"", "'", "`") and before in "\"'`"
    ctx.xml = before == "<" and mark == ">"
    if mark == ">" and not ctx.xml:
        return None
    value_at = separator.end()
    space_before = sep[:len(sep) - len(mark)].endswith((" ", "\t")) if mark else True
    space_after = text[value_at:value_at + 1] in (" ", "\t")
    if not mark:  # no separator: a flag's value, ``PASSWORD 'x'`` (SQL), ``setx NAME value``
        gap = _GAP.match(text, value_at)
        if gap is None:
            return None
        value_at = gap.end()
        following = text[value_at:value_at + 1]
        lead_word = low[max(0, start - 6):start].split()[-1:]
        if not (ctx.flag or (kind == "password" and following in ("\"", "'"))
                or lead_word in (["setx"], ["env"]) or _netrc(low, start)):
            return None
    elif mark == ",":  # ``setdefault("DB_PASSWORD", "x")``, ``SetEnvironmentVariable(...)``
        opening = start - 1
        while opening > 0 and text[opening - 1] == "\\":
            opening -= 1
        if not name_quoted or _previous_char(text, opening) != "(":
            return None
        value_at = _skip_blanks(text, value_at)
        if quote_at(text, value_at) == "":
            return None
    else:
        value_at = _skip_blanks(text, value_at)
    if not (ctx.flag or ctx.xml or url or natural or not mark):
        lead = _previous_char(text, start)
        if name_quoted or lead in ("(", ","):
            ctx.code = True
        elif upper:
            ctx.code = mark in ("=", ":=") and (space_before or space_after)
        else:
            ctx.code = mark != "=" or space_before or space_after
    if before in "\"'`" and not name_quoted:
        ctx.quote = '\\"' if before == '"' and text[start - 2:start - 1] == "\\" else before
    ctx.json = in_raw_json(text, start)
    return value_span(text, ctx, value_at)


_GAP = re.compile(r"[ \t]+")
_BLANKS = re.compile(r"[ \t]*")
_NATURAL_ASCII = frozenset({
    "passwort", "kennwort", "wachtwoord", "contrasena", "senha", "haslo", "sifre", "losenord",
    "passord", "salasana", "heslo", "jelszo", "adgangskode", "mot de passe", "kata sandi",
})


def _skip_blanks(text: str, at: int) -> int:
    found = _BLANKS.match(text, at)
    return found.end() if found else at


def _previous_char(text: str, at: int) -> str:
    """The last character before ``at`` that is not a space or a tab (bounded look back)."""
    i = at - 1
    while i >= 0 and at - i < 64 and text[i] in " \t":
        i -= 1
    return text[i] if i >= 0 else ""



def _netrc(low: str, start: int) -> bool:
    """``machine h login u password p``: the name follows ``login <user>`` on its line."""
    line = low[max(0, start - 200, low.rfind("\n", max(0, start - 200), start) + 1):start]
    return "login" in line and _NETRC.search(line) is not None


_NETRC = re.compile(r"(?:^|\s)login\s+\S+\s+$")


def _named_value(text: str, ctx: Context, end: int) -> Span | None:
    """``- name: DB_PASSWORD`` / ``value: x``, ``{"name": "X_TOKEN", "value": "x"}``,
    ``<add key="DbPassword" value="x"/>``: the name is a value, the secret follows it."""
    window_end = min(len(text), end + 300)
    found = _VALUE_KEY.search(text, end, window_end)
    if found is None:
        return None
    between = text[end:found.start()]
    if re.search(r"(?:^|\n)[ \t]*-[ \t]|\bname\b|\bkey\b", between) or between.count("\n") > 2:
        return None
    ctx.code = False
    ctx.json = in_raw_json(text, end) or '\\"' in between
    return value_span(text, ctx, found.end())


#: a name's character: ``[a-z0-9_.\-]`` or any non-ASCII one, written as the ASCII characters it
#: excludes: ``re`` builds a class with a range up to U+10FFFF code point by code point (~20 ms
#: a compile, 0.6 s of every process's start-up for the gates below); the same set, checked
#: over every code point in tests/unit/security/test_redact_structure.py
_NAME_CHAR = r"[^\x00-\x2c/\x3a-\x5e`\x7b-\x7f]"
#: after a name (its characters in the lower-cased text, not ending in ``.`` or ``-``): what
#: ``_at_name`` needs there, whatever follows it: an optional closing quote and bracket, then
#: a separator and the start of a value (``=``, ``:``, ``=>``, ``:=``, ``?:``, ``>``), a quoted
#: name's ``,`` (``setdefault("X", "v")``), or blanks and a value (a flag's, ``.netrc``'s). The
#: name is looked at for 64 characters at most, so each keyword costs a bounded scan.
_AFTER_NAME = (r"(?=" + _NAME_CHAR + r"{0,64}+(?:(?<![.\-])"
               r"(?:\\{0,3}[\"'`]\]?,|(?:\\{0,3}[\"'`])?\]?"
               r"(?:[ \t]*+(?:[=:：>]|\?:)[ \t]*+[^ \t\r\n]|[ \t]++[\"']|(?P<blank>[ \t]++[^\s])))"
               # a name longer than that is taken (a run of 1 MB is not scanned per keyword)
               r"|(?P<long>" + _NAME_CHAR + ")))")
_GATES = {
    # ``check``: a letter, ``_``, ``.`` or ``-`` right after the keyword, where ``_TAIL`` may
    # reject the name (the other hits skip that match: ``A_KEY=x`` a million times)
    word: re.compile(re.escape(word) + r"(?:(?=(?P<check>)[a-z_.\-]))?" + _AFTER_NAME)
    for word in ASCII_KEYWORDS if " " not in word
}
#: ``name: `` / ``"key": "`` / ``variable=`` before a name (its first characters), the lead word
#: not glued to a word before it, or before 22 blanks and separators (the lead may then start
#: its window: ``^`` in ``_NAMED_LEAD``); one pattern per lead word, each starting with its
#: literal (an alternation is ~100x slower)
_LEAD_GATES = tuple(
    (lead, re.compile(
        re.escape(lead) + r"(?:(?=(?:\\{0,3}[\"'])?(?P<pad>[ \t:=]{22}))"
        rf"|(?<![a-z0-9_]{lead})(?=(?:\\{{0,3}}[\"'])?[ \t]*[:=][ \t]*"
        r"(?:\\{0,3}[\"'])?\n?\$?(?P<name>[a-z0-9_.\-]{1,80})))"))
    for lead in ("name", "key", "variable")
)
_KEYWORDS = _KeywordSet()
