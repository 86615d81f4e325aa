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

``find(text)`` returns the spans to replace; ``reverie.redact.rules`` runs it as one rule.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "Span", "credential_kind", "find", "is_code", "is_reference", "wrapped_end"]

#: the kinds this layer reports besides ``env`` (an UPPER_CASE name: ``DB_PASSWORD=...``)
KINDS = ("access_key", "api_key", "auth", "credential", "password", "private_key", "secret",
         "signature", "token", "url_token")

MARKER_PREFIX = "[REDACTED:"


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    kind: str


# --- names -----------------------------------------------------------------------------------

#: literals whose presence (in the lower-cased text) makes the scanner look closer
_ASCII_KEYWORDS = (
    "password", "passwd", "passphrase", "passcode", "passwort", "passord", "pass", "pwd",
    "secret", "token", "key", "credentials", "credential", "creds", "auth", "sig", "signature",
    "mot de passe",
    "kennwort", "contrase", "senha", "wachtwoord", "haslo", "sifre", "losenord", "salasana",
    "heslo", "jelszo", "adgangskode", "kata sandi", "identified",
)
#: other languages' words for password (checked only in texts that are not ASCII)
_WORLD_KEYWORDS = (
    "contraseña", "hasło", "şifre", "lösenord", "jelszó", "пароль", "парола", "パスワード",
    "密码", "密碼", "口令", "비밀번호", "암호", "mật khẩu", "รหัสผ่าน", "كلمة المرور",
    "كلمة السر", "رمز عبور", "סיסמה", "पासवर्ड", "κωδικός",
)
#: a name segment ending in one of these is a credential (``dbpassword``, ``authtoken``)
_SUFFIX_WORDS = {
    "password": "password", "passwd": "password", "passphrase": "password",
    "passcode": "password", "passwort": "password", "kennwort": "password",
    "wachtwoord": "password", "contraseña": "password", "contrasena": "password",
    "senha": "password", "hasło": "password", "haslo": "password", "şifre": "password",
    "sifre": "password", "lösenord": "password", "losenord": "password", "passord": "password",
    "salasana": "password", "heslo": "password", "jelszó": "password", "jelszo": "password",
    "adgangskode": "password", "secret": "secret", "token": "token", "apikey": "api_key",
    "credentials": "credential", "credential": "credential", "accesskey": "access_key",
    "secretkey": "secret", "privatekey": "private_key",
}
#: a whole segment equal to one of these is a credential (``DB_PASS``, ``Pwd``)
_EXACT_WORDS = {"pass": "password", "pwd": "password", "pw": "password", "creds": "credential"}
#: ``<owner>_key`` names that hold a key (``primary_key``, ``sort_key`` do not)
_KEY_OWNERS = frozenset({
    "api", "access", "secret", "private", "master", "encryption", "encrypt", "signing", "sign",
    "client", "app", "account", "auth", "service", "shared", "storage", "subscription",
    "consumer", "hmac", "webhook", "license", "admin", "deploy", "ssh", "gpg", "pgp", "jwt",
    "session", "cookie", "crypto", "aes", "root", "user", "x",
})
#: segments after the credential word that make the name describe it, not hold it
_METADATA = frozenset({
    "file", "files", "path", "dir", "url", "uri", "host", "name", "names", "type", "types",
    "length", "len", "size", "count", "min", "max", "policy", "policies", "regex", "pattern",
    "hint", "label", "prompt", "placeholder", "field", "fields", "header", "param", "params",
    "env", "var", "vars", "variable", "ttl", "timeout", "expiry", "expires", "expiration",
    "enabled", "required", "optional", "provider", "providers", "manager", "store", "stdin",
    "format", "strength", "reset", "rotation", "endpoint", "source", "ref", "arn", "mode",
    "id", "ids", "index", "limit", "budget", "usage", "kind", "version", "template", "prefix",
    "suffix", "location", "dialog", "input", "form", "error", "errors", "message", "callback",
    "handler", "cache", "changed", "set", "helper", "command", "cmd", "script", "class", "test",
    "ms", "sec", "secs", "seconds", "minutes", "hours", "days", "at", "by", "on", "when", "since",
    "total", "used", "left", "remaining", "estimate", "rate", "ratio", "pct", "percent", "num",
    "flag", "option", "options", "config", "settings", "schema", "spec", "docs", "doc", "help",
})
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+|[^\x00-\x7f]+")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _segments(name: str) -> list[str]:
    parts: list[str] = []
    for piece in re.split(r"[_.\-\s:]+", name):
        parts += [p.lower() for p in _CAMEL.findall(piece)] if not piece.isupper() else [
            piece.lower()]
    return [p for p in parts if p]


@functools.lru_cache(maxsize=4096)
def credential_kind(name: str, *, url: bool = False) -> str | None:
    """The kind of credential ``name`` holds, or ``None`` (``password_min_length``, ``tokens``)."""
    segments = _segments(name.lstrip("-$@"))
    if not segments:
        return None
    upper = name.strip("-$@_").replace("_", "").isupper()
    for index in range(len(segments) - 1, max(-1, len(segments) - 5), -1):
        segment = segments[index]
        kind = _segment_kind(segments, index, upper=upper, url=url)
        if kind is None:
            continue
        trailing = segments[index + 1:]
        if any(t in _METADATA for t in trailing) or len(trailing) > 3:
            return None
        if trailing and segment in ("pass", "pwd", "pw", "auth", "sig", "signature"):
            return None
        return kind
    return None


def _segment_kind(segments: list[str], index: int, *, upper: bool, url: bool) -> str | None:
    segment = segments[index]
    if segment in _EXACT_WORDS:
        if segment == "pw" and len(segments) == 1:
            return None  # ``pw`` alone is too short to tell
        return _EXACT_WORDS[segment]
    if segment == "key":
        owner = segments[index - 1] if index else ""
        if owner in _KEY_OWNERS or (upper and index):
            return "secret" if "secret" in segments[:index] else (
                "private_key" if owner == "private" else
                "access_key" if owner == "access" else "api_key")
        return None
    if segment == "data" and index and segments[index - 1] == "key":  # client-key-data
        return "private_key"
    if segment == "auth" and (index == len(segments) - 1):
        return "auth"
    if url and segment in ("sig", "signature"):
        return "signature"
    for word, kind in _SUFFIX_WORDS.items():
        if segment.endswith(word):
            return kind
    return None


# --- values ----------------------------------------------------------------------------------

#: a placeholder's words: ``your password``, ``API-KEY``, ``Db_Password`` (never digits or mixed
#: case inside a word, which is what a random value inside brackets looks like)
_WORDS = r"(?:[A-Z]?[a-z]+|[A-Z]+)(?:[ _.-](?:[A-Z]?[a-z]+|[A-Z]+)){0,6}"
_PLACEHOLDER = re.compile(
    r"[A-Z]+(?:_[A-Z]+)+|.*REDACTED.*|\*+|x{3,}|X{3,}|.{0,12}(?:\.{3,}|…)"
    rf"|<{_WORDS}>|\[{_WORDS}\]|your[-_][\w-]+|YOUR[-_][\w-]+"
)
_REFERENCE = re.compile(
    r"\$(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)|\$\{[A-Za-z_][\w]*(?:[:?+-][^}]{0,80})?\}"
    r"|\$\([a-z][\w .|/'\"-]{0,200}\)"
    r"|%(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)%|%\([\w]+\)[sd]|\{\{.{1,200}\}\}|\{[A-Za-z_][\w.]*\}|\$\{\{.{1,200}\}\}"
    r"|@\{[\w.]+\}|#\{[\w.]+\}|:[a-z_]+|\?|%s|\{\}"
    r"|[\"']?\$(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)[\"']?|[\"']?\$\{[A-Za-z_][\w]*\}[\"']?"
)
_VERSION = re.compile(r"[\^~<>=v]{0,2}[0-9]+(?:\.[0-9x*]+)+(?:-[A-Za-z0-9.]+)?")
_NON_SECRET = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "changeme", "xxx", "your_key_here",
    "str", "string", "bytes", "int", "bool", "secretstr", "optional", "required", "any",
    "number", "object", "unknown", "text", "password", "secret", "token", "env", "os", "yes",
    "no", "on", "off", "redacted", "hidden", "omitted", "empty", "example", "dummy", "sample",
    "placeholder", "default", "test", "foo", "bar", "baz", "string?", "str?", "todo", "key",
    "value", "pass", "pwd", "prompt", "ask", "stdin", "input", "keyring", "vault",
})
#: a code identifier chain: ``settings.api_key``, ``os.environ``, ``this.apiKey``, ``SecretStr``
_SEGMENT = (r"(?:[a-z_$][a-z_]*(?:[A-Z]{1,4}[a-z_]+)*[A-Z]{0,4}"
            r"|[A-Z]{1,4}[a-z_]+(?:[A-Z]{1,4}[a-z_]+)*[A-Z]{0,4}|[A-Z_$][A-Z_]*)")
_IDENT = re.compile(_SEGMENT)
_CHAIN = re.compile(rf"{_SEGMENT}[0-9]*(?:(?:\.|::|->|\?\.){_SEGMENT}[0-9]*)+")
_CALL = re.compile(
    rf"(?:new |await )?{_SEGMENT}[0-9]*(?:(?:\.|::|->|\?\.){_SEGMENT}[0-9]*)*"
    r"(?P<args>(?:[(\[<][\w\"'.,= :/()\[\]<>-]*[)\]>]|\??\.[A-Za-z_$][\w$]*)+)[;,]?"
)
_CONSTANT = re.compile(r"[A-Z]{1,7}|[A-Z][A-Z0-9]{0,11}(?:_[A-Z0-9]{1,12}){1,5}")
_WORD = re.compile(r"[A-Za-z][a-z]*(?:[-_][A-Za-z][a-z]*)*")


def is_reference(value: str) -> bool:
    """A variable, template or placeholder standing for the value, not the value itself."""
    low = value.lower()
    return (
        low in _NON_SECRET
        or value.startswith(MARKER_PREFIX)
        or _REFERENCE.fullmatch(value) is not None
        or _PLACEHOLDER.fullmatch(value) is not None
        or _VERSION.fullmatch(value) is not None
        or (value.isdigit() and len(value) <= 6)
    )


def is_code(value: str) -> bool:
    """A value that is code (where the name is code): ``getpass.getpass()``, ``os.environ[...]``,
    ``api_key``, ``str``, ``await``. Values with digits inside words, symbols or random-looking
    casing are not code (``Tr0ub4dor.Horse9``, ``S3cure(pass)``, ``hunter2``)."""
    core = value.rstrip(",;")
    closing = len(core) - len(core.rstrip(")]}"))
    if closing <= 2:  # ``password}`` in ``{"password": password}``
        core = core[:len(core) - closing]
    if not core or value[0] in "[{":
        return True  # a list, an object: ``apiKey: []``
    if (_IDENT.fullmatch(core) and not core.isupper() and _cased_like_code(core)) or (
            _CHAIN.fullmatch(core) and all(map(_cased_like_code, re.split(r"\.|::|->", core)))):
        return True
    if _CONSTANT.fullmatch(core):  # ``password: DB_PASSWORD``
        return True
    called = _CALL.fullmatch(value.rstrip(",;"))
    if called:
        callee = re.split(r"[(\[<]", core, maxsplit=1)[0]
        args = called.group("args")
        return len(callee) >= 3 and args[0] in "([<" and _balanced(args)
    return False


def _cased_like_code(name: str) -> bool:
    """camelCase has a few capitals (``getApiKeyFromEnv``); random letters have half."""
    letters = [c for c in name if c.isalpha()]
    if len(letters) < 8 or name.isupper():
        return True
    return sum(c.isupper() for c in letters) <= (0.35 if len(letters) >= 12 else 0.45) * len(
        letters)


_PAIRS = {")": "(", "]": "[", ">": "<"}
#: what a subscript holds in code: a quoted key, a number, a name (``os.environ["KEY"]``)
_SUBSCRIPT = re.compile(r"\[(?:\"[\w.-]*\"|'[\w.-]*'|[0-9]+|[A-Za-z_][\w.]*)\]")


def _balanced(args: str) -> bool:
    """Brackets that pair up, subscripts that hold a key: code, not random symbols."""
    stack: list[str] = []
    for index, char in enumerate(args):
        if char in "([<":
            if char == "[" and not stack and not _SUBSCRIPT.match(args, index):
                return False
            stack.append(char)
        elif char in _PAIRS:
            if not stack or stack.pop() != _PAIRS[char]:
                return False
    return not stack


def _looks_generated(value: str) -> bool:
    return any(not c.isalpha() for c in value) or (
        len(value) >= 16 and not value.islower() and not value.isupper()
        and _IDENT.fullmatch(value) is None
    )


def _encoded(value: str) -> bool:
    """Base64-like material (``auth`` values: Docker's ``auths``, ``.npmrc``'s ``_auth``)."""
    return len(value) >= 8 and (_looks_generated(value) or _IDENT.fullmatch(value) is None)


# --- the scan --------------------------------------------------------------------------------

_SEPARATOR = re.compile(
    r"(?:\\{0,3}[\"'`])?\]?(?:[ \t]++=>|=>(?=[\s\"'`\\])|[ \t]*+(?::=|\?:|[=:：])|[>,]|(?=\s))"
)
_JSON_ESCAPE_LEAD = re.compile(r"\\[nrt]$")
_NAMED_LEAD = re.compile(
    r"(?:^|[\s{,\[(])-?[ \t]*(?:\\{0,3}[\"'])?(?:name|key|variable)"
    r"(?:\\{0,3}[\"'])?[ \t]*[:=][ \t]*(?:\\{0,3}[\"'])?$"
)
_VALUE_KEY = re.compile(
    r"(?<![\w-])(?:\\{0,3}[\"'])?(?:value|Value|VALUE)(?:\\{0,3}[\"'])?[ \t]*[:=][ \t]*"
)
_FLAG = re.compile(r"-[A-Za-z]|-[a-z]{2,3}|--[a-z][a-z0-9-]*(?:=\S*)?")
_PROSE = frozenset({"to", "and", "or", "the", "a", "an", "is", "flag", "option", "with", "for",
                    "in", "on", "of", "if", "when", "instead", "argument", "parameter"})
_NATURAL_STOPS = "，。、；）」』】"
_MAX_VALUE = 4096


@dataclass(slots=True)
class _Context:
    """What surrounds a name: decides where its value ends and whether code rules apply."""

    kind: str
    name: str
    flag: bool = False
    xml: bool = False
    url: bool = False
    natural: bool = False
    json: bool = False
    quote: str = ""  # the quote enclosing ``NAME=value`` (``"DB_PASSWORD=x"``)
    code: bool = False
    upper: bool = False


def find(text: str) -> list[Span]:
    """The values to replace in ``text``, in order, not overlapping."""
    low = text.lower()
    if len(low) != len(text):  # a few characters lower-case to two (``İ``): keep positions
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    words = _KEYWORDS.present(text, low)
    spans: list[Span] = []
    if words:
        spans += _names(text, low, words)
        if any(word in _TOOL_WORDS for word in words):
            spans += _short_flags(text, low)
        if "identified" in words:
            spans += _sql(text, low)
    for finder in _FINDERS:
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
        self._words = (*_ASCII_KEYWORDS, *_TOOL_WORDS, *_WORLD_KEYWORDS)
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
        words = [w for w in _ASCII_KEYWORDS if w in low]
        words += [w for w in _TOOL_WORDS if w in text]
        if not low.isascii():
            words += [w for w in _WORLD_KEYWORDS if w in low]
        return words


def _keywords(low: str, words: list[str]) -> Iterator[tuple[str, int]]:
    for word in words:
        if word in _TOOL_WORDS and word not in _ASCII_KEYWORDS:
            continue
        start = low.find(word)
        while start >= 0:
            yield word, start
            start = low.find(word, start + len(word))


def _names(text: str, low: str, words: list[str]) -> list[Span]:
    spans: list[Span] = []
    done = -1  # a name already handled (``password`` holds ``pass`` and ``sword``...)
    for word, at in sorted(_keywords(low, words), key=lambda item: item[1]):
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
            while start > 0 and text[start - 1] in _NAME_CHARS and at - start < 64:
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
        span = _at_name(text, low, start, end)
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


def _at_name(text: str, low: str, start: int, end: int) -> Span | None:
    name = text[start:end]
    natural = not name.isascii() or " " in name or name.lower().strip("$") in _NATURAL_ASCII
    before = text[start - 1] if start else "\n"
    url = before in "?&" or low.endswith("&amp;", 0, start)
    kind = "password" if natural else credential_kind(name, url=url)
    if kind is None:
        return None
    upper = not natural and name.lstrip("$-").replace("_", "").replace("-", "").isupper()
    ctx = _Context(kind, name, flag=name.startswith("-"), url=url, natural=natural, upper=upper)
    window = low[max(0, start - 40):start]
    if ("name" in window or "key" in window or "variable" in window) and _NAMED_LEAD.search(
            window):
        return _named_value(text, ctx, end)
    separator = _SEPARATOR.match(text, end)
    if kind == "password" and _netrc(low, start):  # ``login me password =x``: the value whole
        gap = _GAP.match(text, end)
        return _value(text, ctx, gap.end()) if gap else None
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
        if _quote_at(text, value_at) == "":
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
    ctx.json = _in_raw_json(text, start)
    return _value(text, ctx, value_at)


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


def _in_raw_json(text: str, at: int) -> bool:
    """Whether ``at`` is inside raw JSON text (a JSONL line, a JSON tool result), where a
    value ends at an escape (``\\n``) or an unescaped quote."""
    if _JSON_ESCAPE_LEAD.search(text, max(0, at - 2), at) or text[max(0, at - 2):at] == '\\"':
        return True
    line_start = text.rfind("\n", max(0, at - 4096), at) + 1
    if line_start == 0 and at > 4096:  # a long line: is there a JSON key before the name?
        return text.rfind('":', max(0, at - 65536), at) >= 0
    return text.startswith(('{"', '[{', '["'), line_start)


def _netrc(low: str, start: int) -> bool:
    """``machine h login u password p``: the name follows ``login <user>`` on its line."""
    line = low[max(0, start - 200, low.rfind("\n", max(0, start - 200), start) + 1):start]
    return "login" in line and _NETRC.search(line) is not None


_NETRC = re.compile(r"(?:^|\s)login\s+\S+\s+$")


def _named_value(text: str, ctx: _Context, end: int) -> Span | None:
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
    ctx.json = _in_raw_json(text, end) or '\\"' in between
    return _value(text, ctx, found.end())


def _value(text: str, ctx: _Context, at: int) -> Span | None:
    if at >= len(text):
        return None
    quote = "" if ctx.xml else _quote_at(text, at)
    if quote:
        close = _closing(text, at + len(quote), quote, json=ctx.json)
        value_end = close if close >= 0 else _line_end(text, at)
        value = text[at + len(quote):value_end]
        if value.startswith(MARKER_PREFIX):
            return None  # redacted already
        if close < 0:
            if not value.strip() or is_reference(value.strip()):
                return None
            return Span(at + len(quote), value_end, _kind(ctx))
        after = close + len(quote)
        following = text[after:after + 1]
        if following and not following.isspace() and (
                not (ctx.code or ctx.quote) or following not in ",;)]}>"):
            # ``X='abc'def`` (a shell joins the pieces): the token goes on past the quote
            return Span(at + len(quote), _bare_end(text, after, ctx), _kind(ctx))
        if not _quoted_secret(value, ctx):
            return None
        return Span(at + len(quote), value_end, _kind(ctx))
    value_end = _bare_end(text, at, ctx)
    value = text[at:value_end]
    if not value or is_reference(value) or _marker_inside(value):
        return None
    if ctx.flag and (_FLAG.fullmatch(value) or value.lower() in _PROSE):
        return None
    plain = value.replace('\\"', '"').replace("\\\\", "\\") if ctx.json else value
    if ctx.code and (is_code(plain) or value in ("=", "==", "=>", "{", "[", "(")):
        return None
    if ctx.name in ("PWD", "OLDPWD") and value[:1] in "/~":
        return None  # the shell's working directory
    if len(value) < 3 and not ctx.natural:
        return None
    if ctx.kind == "auth" and not _encoded(value):
        return None
    return Span(at, wrapped_end(text, value_end, value), _kind(ctx))


def _marker_inside(value: str) -> bool:
    return value.startswith(MARKER_PREFIX)


def _kind(ctx: _Context) -> str:
    if ctx.upper and not (ctx.flag or ctx.xml or ctx.url):
        return "env"
    return ctx.kind


def _quoted_secret(value: str, ctx: _Context) -> bool:
    if not value or is_reference(value) or _marker_inside(value):
        return False
    if ctx.kind == "password" or ctx.natural:  # pass phrases hold spaces
        return not (any(c.isspace() for c in value) and len(value) > 128)
    if any(c.isspace() for c in value):
        return False
    if ctx.upper:
        return len(value) >= 3
    if len(value) < 4:
        return False
    if ctx.kind == "auth":
        return _encoded(value)
    return not (_WORD.fullmatch(value) and len(value) <= 32)  # ``apiKey: 'proxy-handled'``


def _quote_at(text: str, at: int) -> str:
    found = re.match(r"\\{0,3}[\"'`]", text[at:at + 4])
    return found.group(0) if found else ""


def _closing(text: str, at: int, quote: str, *, json: bool = False) -> int:
    """Where ``quote`` closes the value starting at ``at`` (-1: not on this line).

    In single quotes a backslash escapes the quote in Python and JavaScript, and is a plain
    character in shells, PowerShell and SQL (which double the quote instead): both readings
    are tried and the longer one wins, so neither leaves a tail behind."""
    first = _closing_as(text, at, quote, backslash=True, json=json)
    if quote == "'":
        other = _closing_as(text, at, quote, backslash=False, json=json)
        if first < 0 or other < 0:
            return -1
        return max(first, other)
    return first


def _closing_as(text: str, at: int, quote: str, *, backslash: bool, json: bool) -> int:
    char = quote[-1]
    escapes = len(quote) - 1
    limit = min(len(text), at + _MAX_VALUE)
    i = at
    while i < limit:
        c = text[i]
        if c == "\n":
            return -1
        if c == "\\" and escapes == 0 and json and char != '"':
            # raw JSON around a ``'`` string: ``\\\\`` is one backslash of the decoded text
            if text[i + 1:i + 2] == "\\":
                i += 3 if backslash else 2
            elif text[i + 1:i + 2] in ("n", "r"):
                return -1
            else:
                i += 2
            continue
        if c == "\\" and escapes == 0 and backslash:
            i += 2
            continue
        if c == char:
            run = 0
            while run < i - at and text[i - 1 - run] == "\\":
                run += 1
            if escapes:
                if run == escapes:
                    return i - escapes
            elif char == "'" and text[i + 1:i + 2] == "'":
                i += 2  # ``''`` inside single quotes (SQL, PowerShell)
                continue
            else:
                return i
        i += 1
    return -1


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at, at + _MAX_VALUE)
    return min(len(text), at + _MAX_VALUE) if end < 0 else end


def _bare_end(text: str, at: int, ctx: _Context) -> int:
    limit = min(len(text), at + _MAX_VALUE)
    stops = ""
    if ctx.quote:
        stops += ctx.quote[-1]
    if ctx.json:
        stops += '"'
    if ctx.url:
        stops += "&#\"'<>`"
    if ctx.xml:
        stops += "<"
    if ctx.natural:
        stops += _NATURAL_STOPS
    i = at
    while i < limit:
        c = text[i]
        if c.isspace() or c in stops:
            break
        if c == "\\" and (ctx.json or ctx.quote.startswith("\\")):
            # raw JSON: the decoded value ends where the decoded text has whitespace (``\\n``,
            # ``\\t``) or its string ends; an escaped quote or backslash belongs to the value,
            # unless that quote is what encloses ``NAME=value``
            nxt = text[i + 1:i + 2]
            if nxt in ("n", "r", "t", "") or (nxt == '"' and ctx.quote == '\\"'):
                break
            i += 2
            continue
        i += 1
    return i


#: the characters of a token wrapped over several lines
_TOKEN_ALPHABET = re.compile(r"[A-Za-z0-9+/=_.~-]+")


def continues(line: str) -> bool:
    """Whether ``line`` could be the continuation of a wrapped token (the engine keeps such
    lines in the block of the line before them)."""
    return bool(line) and _TOKEN_ALPHABET.fullmatch(line) is not None


def wrapped_end(text: str, end: int, value: str) -> int:
    """Past the continuation lines of a token wrapped at the end of its line.

    A token that runs to the end of a line of 40 or more characters (a terminal, a log or an
    editor wrapped it) goes on at the start of the next line when that line is one run of the
    same alphabet no longer than the first; each further full-width line continues it."""
    if end >= len(text) or text[end] not in "\r\n" or not _TOKEN_ALPHABET.fullmatch(value):
        return end
    line_start = text.rfind("\n", 0, end) + 1
    width = end - line_start
    if width < 16:
        return end
    pos = end
    while True:
        nl = pos + (2 if text.startswith("\r\n", pos) else 1)
        next_end = text.find("\n", nl)
        next_end = len(text) if next_end < 0 else next_end
        line = text[nl:next_end].rstrip("\r")
        if not line or len(line) > width or not _TOKEN_ALPHABET.fullmatch(line):
            return pos
        if width < 40 and not _looks_generated(line):
            return pos
        pos = nl + len(line)
        if len(line) < width:
            return pos


# --- structures without a name keyword before the value ---------------------------------------

_SHORT_FLAG_TOOLS = (
    (re.compile(r"(?<![\w-])login\b[^\n|;&]{0,400}?[ \t]-p[ \t]+"), "password"),
    (re.compile(r"(?<![\w-])redis-cli\b[^\n|;&]{0,400}?[ \t]-a[ \t]+"), "password"),
    (re.compile(r"(?<![\w-])sshpass\b[^\n|;&]{0,100}?[ \t]-p[ \t]*"), "password"),
    (re.compile(r"(?<![\w-])mongo(?:sh|dump|restore|import|export)?\b[^\n|;&]{0,400}?"
                r"[ \t]-p[ \t]+"), "password"),
    (re.compile(r"(?<![\w-])sqlcmd\b[^\n|;&]{0,400}?[ \t]-P[ \t]*"), "password"),
    (re.compile(r"(?<![\w-])bcp\b[^\n|;&]{0,400}?[ \t]-P[ \t]*"), "password"),
)
_TOOL_WORDS = ("login", "redis-cli", "sshpass", "mongo", "sqlcmd", "bcp")


def _tool_name(pattern: re.Pattern[str]) -> str:
    return next(word for word in _TOOL_WORDS if word in pattern.pattern)


def _short_flags(text: str, low: str) -> list[Span]:
    spans: list[Span] = []
    for pattern, kind in _SHORT_FLAG_TOOLS:
        if _tool_name(pattern) not in text:
            continue
        for found in pattern.finditer(text):
            ctx = _Context(kind, "-p", flag=True)
            span = _value(text, ctx, found.end())
            if span is not None:
                spans.append(span)
    return spans


_IDENTIFIED = re.compile(r"identified[ \t]+(?:with[ \t]+\w+[ \t]+)?by[ \t]+(?:password[ \t]+)?"
                         r"(?=\\{0,3}['\"]|[^\s]*[ \t]*(?:;|$))", re.MULTILINE)


def _sql(text: str, low: str) -> list[Span]:
    spans: list[Span] = []
    for found in _IDENTIFIED.finditer(low):
        span = _value(text, _Context("password", "identified by", natural=True), found.end())
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
    done = -1
    for gate in _PGPASS_GATE.finditer(text):
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
        json = json or lead == '"' or _in_raw_json(text, host)
        start = fields.end()
        end = start
        limit = min(len(text), start + _MAX_VALUE)
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


_FINDERS = (_url_user, _pgpass, _pem_tail, _putty)
_KEYWORDS = _KeywordSet()
