"""Credentials in structures without a name keyword right before the value.

A tool's short flag (``docker login -p``, ``redis-cli -a``), SQL's ``IDENTIFIED BY``, a token
as a URL's user, ``.pgpass`` lines, a PEM body whose BEGIN line is elsewhere and PuTTY keys.
Each finder takes ``(text, lower-cased text)`` and returns the spans to replace.
"""

from __future__ import annotations

import re

from reverie.redact.values import MAX_VALUE, Context, Span, in_raw_json, is_reference, value_span

__all__ = ["FINDERS", "TOOL_WORDS"]

#: each pattern starts with its tool's literal, the look-behind after it (``login`` not glued
#: to a word or ``-`` before it): a leading look-behind stops the engine's literal search and
#: made each scan of a long text ~40x slower
_SHORT_FLAG_TOOLS = (
    (re.compile(r"login(?<![\w-]login)\b[^\n|;&]{0,400}?[ \t]-p[ \t]+"), "password"),
    (re.compile(r"redis-cli(?<![\w-]redis-cli)\b[^\n|;&]{0,400}?[ \t]-a[ \t]+"), "password"),
    (re.compile(r"sshpass(?<![\w-]sshpass)\b[^\n|;&]{0,100}?[ \t]-p[ \t]*"), "password"),
    (re.compile(r"mongo(?<![\w-]mongo)(?:sh|dump|restore|import|export)?\b[^\n|;&]{0,400}?"
                r"[ \t]-p[ \t]+"), "password"),
    (re.compile(r"sqlcmd(?<![\w-]sqlcmd)\b[^\n|;&]{0,400}?[ \t]-P[ \t]*"), "password"),
    (re.compile(r"bcp(?<![\w-]bcp)\b[^\n|;&]{0,400}?[ \t]-P[ \t]*"), "password"),
)
TOOL_WORDS = ("login", "redis-cli", "sshpass", "mongo", "sqlcmd", "bcp")


def _tool_name(pattern: re.Pattern[str]) -> str:
    return next(word for word in TOOL_WORDS if word in pattern.pattern)


def short_flags(text: str, low: str) -> list[Span]:
    spans: list[Span] = []
    for pattern, kind in _SHORT_FLAG_TOOLS:
        if _tool_name(pattern) not in text:
            continue
        for found in pattern.finditer(text):
            ctx = Context(kind, "-p", flag=True)
            span = value_span(text, ctx, found.end())
            if span is not None:
                spans.append(span)
    return spans


_IDENTIFIED = re.compile(r"identified[ \t]+(?:with[ \t]+\w+[ \t]+)?by[ \t]+(?:password[ \t]+)?"
                         r"(?=\\{0,3}['\"]|[^\s]*[ \t]*(?:;|$))", re.MULTILINE)


def sql_values(text: str, low: str) -> list[Span]:
    spans: list[Span] = []
    for found in _IDENTIFIED.finditer(low):
        span = value_span(text, Context("password", "identified by", natural=True), found.end())
        if span is not None:
            spans.append(span)
    return spans


_URL_USER = re.compile(r"://(?P<user>[A-Za-z0-9_-]{20,255}+)@(?=[A-Za-z0-9.-]+[/:\s\"'`?#]|[A-Za-z0-9.-]+$)")


def _url_user(text: str, low: str) -> list[Span]:
    """``https://<token>@host``: a token as a URL's user (no password after it)."""
    spans: list[Span] = []
    if "@" not in text or "://" not in text:
        return spans
    for found in _URL_USER.finditer(text):
        user = found.group("user")
        if any(c.isdigit() for c in user) and any(c.isalpha() for c in user):
            spans.append(Span(found.start("user"), found.end("user"), "url_token"))
    return spans


_PGPASS_GATE = re.compile(r":(?:[0-9]{1,5}|\*):")
_PGPASS_FIELDS = re.compile(r"[A-Za-z0-9._*%-]+:(?:[^\s:\\\"]|\\.)+:")
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._*%-[]")


def _pgpass(text: str, low: str) -> list[Span]:
    """``host:port:database:user:password`` lines (``~/.pgpass``), also inside raw JSON."""
    spans: list[Span] = []
    first = _PGPASS_GATE.search(text)  # most texts have none: no iterator for them
    if first is None:
        return spans
    done = -1
    for gate in _PGPASS_GATE.finditer(text, first.start()):
        if gate.start() < done:
            continue
        host = gate.start()
        while host > 0 and text[host - 1] in _HOST_CHARS and gate.start() - host < 256:
            host -= 1
        json = False
        if host >= 1 and text[host - 1] == "\\" and text[host] in "nt":
            host += 1  # ``\ndb:5432:...`` in raw JSON
            json = True
        lead = text[host - 1] if host else "\n"
        if host == gate.start() or not (lead.isspace() or lead in "\"'`" or json):
            continue
        fields = _PGPASS_FIELDS.match(text, gate.end())
        if fields is None:
            continue
        json = json or lead == '"' or in_raw_json(text, host)
        start = fields.end()
        end = start
        limit = min(len(text), start + MAX_VALUE)
        while end < limit and text[end] not in "\r\n":
            if text[end] == "\\":
                if json and text[end + 1:end + 2] in ("n", "r", "t"):
                    break
                end += 2
                continue
            if json and text[end] == '"':
                break
            end += 1
        end = min(end, limit)
        secret = text[start:end].rstrip(" \t")
        if secret and not is_reference(secret) and " " not in text[host:gate.start()]:
            spans.append(Span(start, start + len(secret), "password"))
            done = start + len(secret)
    return spans


_PEM_END = re.compile(r"-----END (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_BASE64_LINE = re.compile(r"[A-Za-z0-9+/=]{16,}")


def _pem_tail(text: str, low: str) -> list[Span]:
    """A PEM body whose BEGIN line is elsewhere (a file read from an offset, a cut log): the
    base64 lines before its END line."""
    spans: list[Span] = []
    if "PRIVATE KEY-----" not in text:
        return spans
    for found in _PEM_END.finditer(text):
        start = found.start()
        pos = start
        while pos > 0:
            escaped = text.endswith("\\n", 0, pos)
            line_end = pos - (2 if escaped else 1)
            if line_end < 0 or (not escaped and text[line_end] != "\n"):
                break
            prev = max(text.rfind("\n", 0, line_end), text.rfind("\\n", 0, line_end) + 1)
            line = text[prev + 1:line_end].strip()
            if not _BASE64_LINE.fullmatch(line):
                break
            pos = prev + 1 - (1 if text.startswith("\\n", prev) else 0)
            start = prev + 1
        if start < found.start():
            spans.append(Span(start, found.end(), "private_key"))
    return spans


_PUTTY = re.compile(r"Private-Lines:[ \t]*(?P<count>[0-9]{1,4})[ \t]*\r?\n")
_PUTTY_MAC = re.compile(r"(?:Private-MAC|Private-Hash):[ \t]*(?P<secret>[0-9a-fA-F]{16,})")


def _putty(text: str, low: str) -> list[Span]:
    """A PuTTY key: the ``Private-Lines`` that follow the count, and the MAC."""
    spans: list[Span] = []
    if "Private-" not in text:
        return spans
    for found in _PUTTY.finditer(text):
        pos = found.end()
        for _ in range(int(found.group("count"))):
            nl = text.find("\n", pos)
            nl = len(text) if nl < 0 else nl
            if not _BASE64_LINE.fullmatch(text[pos:nl].strip()):
                break
            pos = nl + 1
        if pos > found.end():
            spans.append(Span(found.end(), min(pos, len(text)), "private_key"))
    for found in _PUTTY_MAC.finditer(text):
        spans.append(Span(found.start("secret"), found.end("secret"), "private_key"))
    return spans


FINDERS = (_url_user, _pgpass, _pem_tail, _putty)
