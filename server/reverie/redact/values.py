"""A credential's value: where it ends, and whether it is a value at all.

After a name (``reverie.redact.structure``) or a tool's flag (``reverie.redact.shapes``), the
value runs to the end of its token (whitespace, or its closing quote) whatever symbols it
holds. It is kept only when it is a reference (``$VAR``, ``${VAR}``, ``{{ var }}``, a
placeholder) or, where the name is code, when the value is code too (``getpass()``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["MARKER_PREFIX", "Span", "constant_name", "continues", "is_code", "is_reference",
           "wrapped_end"]

MARKER_PREFIX = "[REDACTED:"


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    kind: str


#: a placeholder's words: ``your password``, ``API-KEY``, ``Db_Password`` (never digits or mixed
#: case inside a word, which is what a random value inside brackets looks like)
_WORDS = r"(?:[A-Z]?[a-z]+|[A-Z]+)(?:[ _.-](?:[A-Z]?[a-z]+|[A-Z]+)){0,6}"
_PLACEHOLDER = re.compile(
    r".*REDACTED.*|\*+|x{3,}|X{3,}|.{0,12}(?:\.{3,}|…)"
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
_SNAKE = re.compile(r"[A-Z]+(?:_[A-Z]+)+")
_VOWELS = frozenset("AEIOUY")
#: a character three times in a row (a run of capital X is a placeholder's, so it is allowed)
_TRIPLE = re.compile(r"([A-WYZ0-9])\1\1")


def _constant_like(name: str) -> bool:
    """Whether an UPPER_SNAKE value reads as a constant's name (``DB_PASSWORD_ENV``,
    ``YOUR_API_KEY``, ``HTTPS_PROXY``), made of word-like segments, and not as a random
    password of capitals and underscores (``AAAAAAAAAAAAAA_A``): no character three times in
    a row, no segment twice, no segment of one letter repeated (``AA``), at most one segment of
    one letter (``X_API_KEY``), and a segment of six letters or more holds a vowel."""
    if _TRIPLE.search(name):
        return False
    segments = name.split("_")
    if len(set(segments)) != len(segments) or sum(len(seg) == 1 for seg in segments) > 1:
        return False
    for segment in segments:
        letters = [c for c in segment if c.isalpha()]
        if len(segment) > 1 and len(set(segment)) == 1 and segment[0] != "X":
            return False
        if len(letters) >= 6 and not _VOWELS.intersection(letters):
            return False
    return True


#: Words that configuration names are made of: outside code, an UPPER_SNAKE value stands for
#: a name only when one of its segments is one of these (``DB_PASSWORD``, ``YOUR_KEY``,
#: ``GH_PAT``). Word-like segments alone are not enough: capitals and underscores are a valid
#: password too, and a random one can read as words (``AABAABAABAABAA_A``).
_NAME_WORDS = frozenset("""
    ACCESS ACCOUNT ADMIN API APP AUTH AWS AZURE BASIC BEARER BOT CERT CHANGE CLIENT CLOUD
    CONFIG CONN CONNECTION CRED CREDENTIAL CREDENTIALS CREDS DATABASE DB DEFAULT DEPLOY DEV
    ENV EXAMPLE FILE GCP GH GITHUB GITLAB GOOGLE HERE HOST HTTP HTTPS ID INSERT JWT KEY KEYS
    LOCAL LOGIN MAIL MASTER ME MY MYSQL NAME NEW NPM OAUTH OLD OPENAI ANTHROPIC PASS
    PASSPHRASE PASSWD PASSWORD PAT PG PLACEHOLDER POSTGRES PRIVATE PROD PROXY PUBLIC PWD
    REDACTED REDIS REFRESH REPLACE ROOT S3 SECRET SECRETS SERVER SERVICE SESSION SIGNING SMTP
    SSH SSL STAGING STRIPE TEST TOKEN TOKENS TLS URL USER USERNAME VALUE VAR VAULT WEBHOOK YOUR
""".split())


def constant_name(value: str) -> bool:
    """An UPPER_SNAKE name standing for a value (``password: DB_PASSWORD``, ``YOUR_API_KEY``),
    not a value of capitals and underscores: word-like segments, one of them a word that
    configuration names use."""
    return (_SNAKE.fullmatch(value) is not None and _constant_like(value)
            and not _NAME_WORDS.isdisjoint(value.split("_")))
_WORD = re.compile(r"[A-Za-z][a-z]*(?:[-_][A-Za-z][a-z]*)*")


@functools.lru_cache(maxsize=2048)
def is_reference(value: str) -> bool:
    """A variable, template or placeholder standing for the value, not the value itself."""
    low = value.lower()
    return (
        low in _NON_SECRET
        or value.startswith(MARKER_PREFIX)
        or _REFERENCE.fullmatch(value) is not None
        or _PLACEHOLDER.fullmatch(value) is not None
        or constant_name(value)
        or _VERSION.fullmatch(value) is not None
        or (value.isdigit() and len(value) <= 6)
    )


@functools.lru_cache(maxsize=2048)
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
    if _CONSTANT.fullmatch(core) and ("_" not in core or _constant_like(core)):
        return True  # ``password: DB_PASSWORD``
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


_FLAG = re.compile(r"-[A-Za-z]|-[a-z]{2,3}|--[a-z][a-z0-9-]*(?:=\S*)?")
_PROSE = frozenset({"to", "and", "or", "the", "a", "an", "is", "flag", "option", "with", "for",
                    "in", "on", "of", "if", "when", "instead", "argument", "parameter"})
_NATURAL_STOPS = "，。、；）」』】"
MAX_VALUE = 4096
_JSON_ESCAPE_LEAD = re.compile(r"\\[nrt]$")


@dataclass(slots=True)
class Context:
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



def in_raw_json(text: str, at: int) -> bool:
    """Whether ``at`` is inside raw JSON text (a JSONL line, a JSON tool result), where a
    value ends at an escape (``\\n``) or an unescaped quote."""
    if _JSON_ESCAPE_LEAD.search(text, max(0, at - 2), at) or text[max(0, at - 2):at] == '\\"':
        return True
    line_start = text.rfind("\n", max(0, at - 4096), at) + 1
    if line_start == 0 and at > 4096:  # a long line: is there a JSON key before the name?
        return text.rfind('":', max(0, at - 65536), at) >= 0
    return text.startswith(('{"', '[{', '["'), line_start)



def value_span(text: str, ctx: Context, at: int) -> Span | None:
    if at >= len(text):
        return None
    quote = "" if ctx.xml else quote_at(text, at)
    if quote:
        close = _closing(text, at + len(quote), quote, json=ctx.json)
        value_end = close if close >= 0 else _line_end(text, at)
        value = text[at + len(quote):value_end]
        if value.startswith(MARKER_PREFIX):
            return None  # redacted already
        # an escaped quote that is not the value's delimiter (unclosed, or more of the token
        # after it) may be the value's own backslash and quote (``Pwd=\\\"abc`` in raw
        # JSON is ``Pwd=\"abc``): it goes with the value
        opened = at if len(quote) > 1 else at + len(quote)
        if close < 0:
            if not value.strip() or is_reference(value.strip()):
                return None
            return Span(opened, value_end, _kind(ctx))
        after = close + len(quote)
        following = text[after:after + 1]
        if following and not following.isspace() and (
                not (ctx.code or ctx.quote) or not _structure_after(text, after, quote, ctx)):
            # ``X='abc'def`` (a shell joins the pieces), ``"abc"]0``: the token goes on past
            # the quote
            return Span(opened, _bare_end(text, after, ctx), _kind(ctx))
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


#: closing brackets and separators after a quoted value, and the escapes that may follow them
_CLOSERS = re.compile(r"[,;)\]}>]+")
_ESCAPES = re.compile(r"(\\{1,8})([nrt\"'])")
#: a quote's escaping (its backslashes) -> the backslashes before ``n`` of a line end at its level
_LEVELS = {0: 1, 1: 1, 3: 2, 7: 3}


def _structure_after(text: str, after: int, quote: str, ctx: Context) -> bool:
    """Whether the closers after a quoted value (``"v"]``, ``"v"),``) are structure around it,
    not more of its token (``"v"]0``): they run to the end of the text, a blank, a line end
    escaped at the value's level (raw JSON: ``\\n`` after ``\\"v\\"``, ``\\\\n`` after
    ``\\\\\\"v\\\\\\"``), or a quote other than the value's own (the enclosing
    string's); in code also to the next argument or statement (a ``,`` or ``;`` among them:
    ``f(password="v",timeout=3)``), a method (``.json()``) or Rust's ``?``."""
    run = _CLOSERS.match(text, after)
    if run is None:
        return False
    end = run.end()
    nxt = text[end:end + 1]
    if not nxt or nxt.isspace():
        return True
    if ctx.code and ("," in run.group(0) or ";" in run.group(0)):
        return True
    if not ctx.code and text.startswith(quote, end):
        return False
    if nxt in "\"'`":
        return True
    if nxt == "\\":
        escaped = _ESCAPES.match(text, end)
        if escaped is None:
            return False
        count, char = len(escaped.group(1)), escaped.group(2)
        level = len(quote) - 1
        if char in "nrt":
            return count == _LEVELS.get(level, 0)
        return count % 2 == 1 and (count < level or level == 0)
    if not ctx.code:
        return False
    if nxt == "?":
        return True
    return nxt == "." and (text[end + 1:end + 2].isalpha() or text[end + 1:end + 2] in "_$")


def _marker_inside(value: str) -> bool:
    return value.startswith(MARKER_PREFIX)


def _kind(ctx: Context) -> str:
    if ctx.upper and not (ctx.flag or ctx.xml or ctx.url):
        return "env"
    return ctx.kind


def _quoted_secret(value: str, ctx: Context) -> bool:
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


_QUOTE = re.compile(r"\\{0,3}[\"'`]")


def quote_at(text: str, at: int) -> str:
    found = _QUOTE.match(text, at, at + 4)
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
    limit = min(len(text), at + MAX_VALUE)
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
    end = text.find("\n", at, at + MAX_VALUE)
    return min(len(text), at + MAX_VALUE) if end < 0 else end


def _bare_end(text: str, at: int, ctx: Context) -> int:
    limit = min(len(text), at + MAX_VALUE)
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
    escapes = ctx.json or ctx.quote.startswith("\\")
    # the plain characters in one C call, then the loop from the first stop or backslash
    run = _bare_run(stops, escapes).match(text, at, limit)
    i = run.end() if run else at
    while i < limit:
        c = text[i]
        if c.isspace() or c in stops:
            break
        if c == "\\" and escapes:
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


@functools.lru_cache(maxsize=64)
def _bare_run(stops: str, escapes: bool) -> re.Pattern[str]:
    """A run of characters ``_bare_end`` passes one by one: not whitespace, not a stop, and not
    a backslash when backslashes escape."""
    return re.compile("[^\\s" + re.escape(stops) + ("\\\\" if escapes else "") + "]*")


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

