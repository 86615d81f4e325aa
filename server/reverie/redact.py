"""Secret redaction: applied to every string before any model call and before any write.

One component, one entry point: ``redact(text) -> (clean text, secrets replaced)``. Every other
module calls it (or ``redact_value`` for JSON-shaped tool inputs); nothing else decides what a
secret is. The rule set and what it deliberately leaves out are described in
``docs/security.md`` ("Secrets and redaction").

Why hand-written, precompiled patterns rather than ``detect-secrets`` or gitleaks: those scan
files line by line with plugin registries and entropy checks, while Reverie needs one fast
in-memory ``str -> str`` pass over long transcripts whose output is safe to run twice.

How it stays fast and linear:

- every pattern *starts with a literal* (``ghp_``, ``://``, ``assword``...), so the regex engine
  jumps between occurrences of that literal with its fast prefix search instead of trying a
  match at every position; a short text lacking every literal of a rule is not scanned by it;
- where a secret is usually glued to a longer word (``DB_PASSWORD``, ``aws_secret_access_key``)
  the pattern starts at the keyword and the name before it is checked by looking back a bounded
  distance, never by a leading ``[A-Za-z_]*`` that would be retried at every position;
- a token pattern checks that its literal starts a run of token characters (a look-behind
  placed *after* the literal, which keeps the prefix search), and scans the run with a
  possessive, bounded quantifier. Runs scanned from different starts are then disjoint, so
  ``eyJeyJeyJ...`` or ``sk-sk-sk-...`` cost one pass, not one pass per occurrence;
- a rule scans a text only when one of its literals is in it: one pass finds which are
  (``_HitScan``, or RE2's literal set when installed), and most texts hold none. Rules whose
  literals are words code is full of (``token``, ``api_key``) scan longer texts directly;
- a long text is redacted in blocks of whole lines (no match spans a line, except those of the
  two multi-line rules, which scan the whole text first), so each block runs only its own rules.

Replacements look like ``[REDACTED:kind]``; no rule matches a replacement (values may not start
with ``[``), so ``redact(redact(x)[0]) == (redact(x)[0], 0)``.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["kinds", "redact", "redact_value", "redaction_marker"]

logger = logging.getLogger(__name__)

MARKER_PREFIX = "[REDACTED:"


def redaction_marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"{MARKER_PREFIX}{kind}]"


Replace = Callable[[re.Match[str]], "str | None"]


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    #: Returns the replacement, or ``None`` to leave the match alone (not a secret after all).
    replace: Replace
    #: literals one of which every text the rule matches contains: see ``_HitScan``
    needles: tuple[str, ...]
    #: other kinds the rule reports (``sk-ant-`` under the ``sk-`` scan)
    also: tuple[str, ...] = ()
    #: its matches can span lines (a PEM block, ``<private>...</private>``): see ``_redact``
    multiline: bool = False
    #: its literal is a word code is full of (``token``, ``api_key``): in a longer text it is
    #: nearly always there, so the rule scans the text without being looked for first
    common: bool = False


def _whole(kind: str) -> Replace:
    marker = redaction_marker(kind)
    return lambda _match: marker


def _keep_prefix(kind: str) -> Replace:
    """Keep group ``prefix`` (a header name, ``Bearer``, ``user:``) and replace group ``secret``."""
    marker = redaction_marker(kind)

    def replace(match: re.Match[str]) -> str | None:
        if match.group("secret").startswith(MARKER_PREFIX):
            return None
        return match.group("prefix") + marker

    return replace


#: characters of a token's body; a token must not be glued to more of them on its left
_TOKEN_CHARS = "A-Za-z0-9_-"
_TOKEN_TAIL = rf"(?![{_TOKEN_CHARS}])"


def _starts_run(literal: str, chars: str = _TOKEN_CHARS) -> str:
    """``literal``, then a look-behind that the character before it is not one of ``chars``.

    The look-behind comes after the literal so the engine's prefix search still applies."""
    return rf"{re.escape(literal)}(?<![{chars}][\s\S]{{{len(literal)}}})"


@dataclass(frozen=True, slots=True)
class _Token:
    """A vendor token: ``literal`` at the start of a token run, then ``body``.

    Tokens are not scanned one by one: those whose literals share a first character become one
    pattern (``_merge_tokens``), because each scan of a long text costs about the same whatever
    it looks for, and the first character is where the engine's prefix search stops."""

    kind: str
    literal: str
    body: str
    tail: str = _TOKEN_TAIL
    chars: str = _TOKEN_CHARS
    #: other kinds sharing the literal, by longer prefix (``sk-ant-`` under ``sk-``)
    by_prefix: tuple[tuple[str, str], ...] = ()
    #: the literals to look for, when more specific than ``literal`` (``ghp_`` for ``gh``)
    needles: tuple[str, ...] = ()

    def regex_after_first(self) -> str:
        """The token's regex without its first character (the merged pattern's prefix)."""
        rest = re.escape(self.literal[1:])
        behind = rf"(?<![{self.chars}][\s\S]{{{len(self.literal)}}})"
        return rest + behind + self.body + self.tail

    def marker(self, found: str) -> str:
        kind = next((k for p, k in self.by_prefix if found.startswith(p)), self.kind)
        return redaction_marker(kind)


def _token(kind: str, literal: str, body: str, *, tail: str = _TOKEN_TAIL,
           chars: str = _TOKEN_CHARS, by_prefix: dict[str, str] | None = None,
           needles: tuple[str, ...] = ()) -> _Token:
    return _Token(kind, literal, body, tail, chars, tuple((by_prefix or {}).items()), needles)


def _merge_tokens(tokens: list[_Token]) -> _Rule:
    """One rule for tokens whose literals start with the same character; each alternative is a
    named group, and the group that matched says which token it was."""
    first = tokens[0].literal[0]
    alternatives = "|".join(f"(?P<t{i}>{t.regex_after_first()})" for i, t in enumerate(tokens))
    # a class test of the second character rejects most occurrences of a common first letter
    # in one step, before the alternatives are tried one by one
    seconds = {t.literal[1] for t in tokens if len(t.literal) > 1}
    check = ""
    if len(tokens) > 1 and all(len(t.literal) > 1 for t in tokens):
        check = "(?=[" + "".join(re.escape(c) for c in sorted(seconds)) + "])"
    pattern = re.compile(f"{re.escape(first)}{check}(?:{alternatives})")

    def replace(match: re.Match[str]) -> str | None:
        token = tokens[int((match.lastgroup or "t0")[1:])]
        return token.marker(match.group(0))

    kinds = sorted({t.kind for t in tokens} | {k for t in tokens for _, k in t.by_prefix})
    needles = tuple(n for t in tokens for n in (t.needles or (t.literal,)))
    return _Rule(kinds[0], pattern, replace, needles, tuple(kinds[1:]))


def _build(entries: tuple[_Rule | _Token, ...]) -> tuple[_Rule, ...]:
    """The rules in order, tokens merged by first character at the place of the first one."""
    groups: dict[str, list[_Token]] = {}
    for entry in entries:
        if isinstance(entry, _Token):
            groups.setdefault(entry.literal[0], []).append(entry)
    rules: list[_Rule] = []
    for entry in entries:
        if isinstance(entry, _Rule):
            rules.append(entry)
        elif entry is groups[entry.literal[0]][0]:
            rules.append(_merge_tokens(groups[entry.literal[0]]))
    return tuple(rules)


# --- values after a name: ``API_KEY=...``, ``password: "..."``, ``"token": "..."`` -----------

# Values that are code, not secrets: ``settings.api_key``, ``None``, ``str``.
_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
# ``Bearer REDACTED_TOKEN``, ``API_KEY=YOUR_KEY_HERE``, ``****``: placeholders, not secrets.
_PLACEHOLDER = re.compile(r"[A-Z]+(?:_[A-Z]+)+|.*REDACTED.*|\*+|x{3,}|X{3,}|\.{3,}|<[^>]*>")
# ``"@aws-sdk/credential-providers": "^3.948.0"``: a version, not a credential
_VERSION = re.compile(r"[\^~<>=v]{0,2}[0-9]+(?:\.[0-9x*]+)+(?:-[A-Za-z0-9.]+)?")
_SNAKE_IDENTIFIER = re.compile(r"[a-z_][a-z_]*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*")
_CODE_ASSIGNMENT = re.compile(r"\s[=:]")
_NON_SECRET_VALUES = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "changeme", "xxx", "your_key_here",
    "str", "string", "bytes", "int", "bool", "secretstr", "optional", "required", "any",
    "number", "object", "unknown", "text", "password", "secret", "token", "env", "os",
})
#: a value of only letters is a word, unless it is long and mixes cases like a random token
_LONG_MIXED = re.compile(r"(?=[a-zA-Z]*[A-Z])(?=[a-zA-Z]*[a-z])[A-Za-z]{16,}")

#: a quote closing a name (``"api_key": ``), JSON-escaped once or twice in raw JSONL text
_NAME_QUOTE = r"(?:\\{0,3}[\"'])?"
#: an unquoted value: one word, no quotes, brackets, separators or escapes, not ``$VAR``
_BARE_FIRST = r"[^\s\"'`$(){}\[\]<>,;&|#\\]"
_BARE_CHAR = r"[^\s\"'`(){}\[\]<>,;&|#\\]"
#: what may follow an unquoted value: a separator, a quote, a JSON escape (``\n``) or the end;
#: anything else (``KEY=value(``) makes it code
_BARE_ENDS = frozenset(",;&|})]\"'`\\")
#: a quoted value (the quote possibly JSON-escaped, ``\"``, in raw JSONL read through a tool)
_QUOTED = r"[^\s\"'`\\]"
#: Both forms are scanned possessively to the end of their run and never fail there: a match
#: that is not a secret is rejected by ``_secret_of`` after the scan, so a run is scanned once
#: however many names it holds (``A_KEY=A_KEY=...``), which keeps the rules linear.
_VALUE = (
    rf"(?:(?P<quote>\\{{0,3}}[\"'])(?P<qsecret>{_QUOTED}*+)(?P<close>(?P=quote))?"
    # ``os.environ[...]``, ``raw.get(...)``, ``api_key=api_key,``: a lower-case identifier is
    # code, told apart in the pattern (a bounded look at one word) because code like this is
    # common and a call to Python per occurrence is what redaction of code spends its time on
    rf"|(?![a-z_][a-z_]{{0,63}}+(?:[.(\[,;)}}\]\s\\]|$))(?P<usecret>{_BARE_FIRST}{_BARE_CHAR}*+))"
)


def _secret_of(match: re.Match[str], shortest: int) -> tuple[str, str] | None:
    """The value and its quote (``""`` when bare), or ``None`` when it is not a value."""
    quoted = match.group("qsecret")
    if quoted is not None:
        if match.group("close") is None or len(quoted) < shortest:
            return None
        return quoted, match.group("quote")
    value: str = match.group("usecret")
    text, end = match.string, match.end()
    if len(value) < shortest or (
        end < len(text) and not text[end].isspace() and text[end] not in _BARE_ENDS
    ):
        return None
    return value, ""


_GENERATED_SYMBOLS = frozenset("0123456789/+=!@#%^&*~")


def _looks_generated(value: str) -> bool:
    """Digits or symbols, or a long mix of cases: a key, not a word (``ollama``, ``none``)."""
    return any(c in _GENERATED_SYMBOLS for c in value) or _LONG_MIXED.fullmatch(value) is not None


def _value_is_code(value: str) -> bool:
    return (
        value.lower() in _NON_SECRET_VALUES
        or _DOTTED_IDENTIFIER.fullmatch(value) is not None
        or _PLACEHOLDER.fullmatch(value) is not None
        or (value.isdigit() and len(value) <= 6)  # MAX_TOKEN = 100
        or value.startswith(("$", "%(", MARKER_PREFIX))
        or _VERSION.fullmatch(value) is not None
        or "${" in value
        or "{{" in value
    )


# UPPER_CASE names: everything before the keyword, looked at backwards from it.
_UPPER_NAME_BEFORE = re.compile(r"[A-Z0-9_]{0,80}$")
#: what may come before an UPPER_CASE name: start, whitespace, a quote, ``;{(,``, or a JSON
#: escape (``\n``/``\t``/``\"``) in raw JSONL text
_NAME_LEAD = re.compile(r"(?:^|[\s;\"'{(,`?&]|\\[nrt\"])$")


def _name_start(text: str, keyword_start: int, name_before: re.Pattern[str]) -> int:
    """Where the name that ends at ``keyword_start`` begins (bounded look back)."""
    window = text[max(0, keyword_start - 80):keyword_start]
    found = name_before.search(window)
    return keyword_start - (len(window) - found.start()) if found else keyword_start


def _env_assignment(match: re.Match[str]) -> str | None:
    """``DB_PASSWORD=hunter2``, ``export SERVICE_TOKEN='x'``, ``\\nAPI_KEY=x`` in raw JSONL."""
    text = match.string
    name_from = _name_start(text, match.start(), _UPPER_NAME_BEFORE)
    if not text[name_from:name_from + 1].isalpha():
        return None
    if not _NAME_LEAD.search(text[max(0, name_from - 2):name_from]):
        return None
    found = _secret_of(match, 3)
    if found is None:
        return None
    value, quote = found
    if _value_is_code(value) or (
        # ``API_KEY = api_key`` in code (spaces around ``=``): a variable, not a value.
        _CODE_ASSIGNMENT.search(match.group("prefix")) and _SNAKE_IDENTIFIER.fullmatch(value)
    ):
        return None
    return match.group("prefix") + quote + redaction_marker("env") + quote


def _env(literal: str, rest: str = "", needles: tuple[str, ...] = ()) -> _Rule:
    """UPPER_CASE names ending in ``literal`` + ``rest`` (``_`` + ``KEY|TOKEN...``); the match
    starts there and the name before it is checked by looking back."""
    pattern = re.compile(
        rf"(?P<prefix>{re.escape(literal)}{rest}[A-Z0-9_]{{0,16}}+{_NAME_QUOTE}[ \t]*+[=:][ \t]*+)"
        + _VALUE
    )
    return _Rule("env", pattern, _env_assignment, needles or (literal,))


def _key_needles(head: str) -> tuple[str, ...]:
    """``pi_key``, ``pi-key``, ``pikey``, ``piKey``... for a keyword ending in ``[_-]?[Kk]ey``."""
    return tuple(f"{head}{sep}{k}ey" for sep in ("", "_", "-") for k in "kK")


# lower/camel-case names: ``password = "x"``, ``aws_secret_access_key = x``, ``"api_key": "x"``
_ANY_NAME_BEFORE = re.compile(r"[A-Za-z0-9_.-]{0,64}$")


def _keyword_assignment(kind: str) -> Replace:
    marker = redaction_marker(kind)

    def replace(match: re.Match[str]) -> str | None:
        found = _secret_of(match, 4)
        if found is None:
            return None
        value, quote = found
        if _value_is_code(value) or "{" in value:
            return None
        if not _looks_generated(value):
            # a word: a password when quoted (people choose words); otherwise a value only
            # after a command-line flag (``--token=Abcdef``): ``password: str``, ``apiKey:
            # 'ollama'`` and ``{"password": password}`` are code
            text = match.string
            # the match starts inside the name (``assword``, the ``ey`` of ``api_key``): the
            # rest of the name is before it
            name_from = _name_start(text, match.start() - 1, _ANY_NAME_BEFORE)
            flag = text.startswith("-", name_from)
            if not flag and not (quote and kind == "password"):
                return None
        return match.group("prefix") + quote + marker + quote

    return replace


def _keyword(kind: str, first: str, head: str, rest: str = "",
             needles: tuple[str, ...] = ()) -> _Rule:
    """A name keyword without its first letter: ``head`` (a literal, e.g. ``assword``) then
    ``rest`` (a regex); ``first`` is the class of the letter before it (``[Pp]``). One literal
    then finds ``password``, ``Password`` and ``db_password``."""
    pattern = re.compile(
        rf"(?P<prefix>{re.escape(head)}(?<={first}{re.escape(head)}){rest}"
        # the rest of the name: ``_access_key``, ``AccessKey``, ``-file``; never ``s`` (tokens)
        r"(?:[_.-][A-Za-z0-9]{1,16}+|[A-Z][a-z0-9]{0,16}+){0,3}+"
        + _NAME_QUOTE + r"[ \t]*+(?::=|=>|[=:])[ \t]*+)"
        + _VALUE
    )
    return _Rule(kind, pattern, _keyword_assignment(kind), needles or (head,), common=True)


def _named_keys(names: tuple[tuple[str, str, str], ...]) -> _Rule:
    """``api_key``, ``access_key``, ``private_key`` (``apiKey``, ``api-key``...) in one scan.

    Code is full of these names, so each would scan nearly every text; one scan starts at the
    ``ey`` they end in and tells them apart by looking back (one look-behind per spelling,
    each of fixed width), then goes on like ``_keyword``. ``names``: (kind, class of the first
    letter, the rest of the word before the separator)."""
    spellings: list[str] = []
    kinds: dict[str, str] = {}
    for index, (kind, first, head) in enumerate(names):
        for variant, separator in enumerate(("", "[_-]")):
            group = f"k{index}{variant}"
            spellings.append(f"(?<={first}{re.escape(head)}{separator}[Kk]ey)(?P<{group}>)")
            kinds[group] = kind
    pattern = re.compile(
        r"(?P<prefix>ey(?:" + "|".join(spellings) + ")"
        r"(?:[_.-][A-Za-z0-9]{1,16}+|[A-Z][a-z0-9]{0,16}+){0,3}+"
        + _NAME_QUOTE + r"[ \t]*+(?::=|=>|[=:])[ \t]*+)"
        + _VALUE
    )
    replacers = {group: _keyword_assignment(kind) for group, kind in kinds.items()}

    def replace(match: re.Match[str]) -> str | None:
        group = next(g for g in replacers if match.group(g) is not None)
        return replacers[group](match)

    needles = tuple(needle for _, _, head in names for needle in _key_needles(head))
    ordered = list(dict.fromkeys(kind for kind, _, _ in names))
    return _Rule(ordered[0], pattern, replace, needles, tuple(ordered[1:]), common=True)


# --- credentials inside a command line or URL ---------------------------------------------------


def _url_password(match: re.Match[str]) -> str | None:
    secret = match.group("secret")
    if secret.startswith(MARKER_PREFIX) or secret.startswith("$") or _PLACEHOLDER.fullmatch(secret):
        return None
    return match.group("prefix") + redaction_marker("url_password") + "@"


def _command_password(kind: str) -> Replace:
    marker = redaction_marker(kind)

    def replace(match: re.Match[str]) -> str | None:
        secret = match.group("secret")
        if secret.startswith(("$", MARKER_PREFIX)) or _PLACEHOLDER.fullmatch(secret):
            return None
        user = match.groupdict().get("user") or ""
        if user.isdigit() and secret.isdigit():  # -u 1000:1000 is a uid:gid
            return None
        quote = match.group("quote")
        return match.group("prefix") + quote + user + (":" if user else "") + marker + quote

    return replace


def _authorization(match: re.Match[str]) -> str | None:
    """With a scheme (``Basic abc...``) any literal counts; without one, only token-shaped text."""
    secret = match.group("secret")
    if _PLACEHOLDER.fullmatch(secret) or secret.startswith(MARKER_PREFIX):
        return None
    if not match.group("scheme") and (len(secret) < 16 or not any(c.isdigit() for c in secret)):
        return None
    return match.group("prefix") + redaction_marker("authorization")


def _authorization_rule(literal: str, first: str) -> _Rule:
    pattern = re.compile(
        rf"(?P<prefix>{literal}(?<={first}{literal}){_NAME_QUOTE}[ \t]*+[:=][ \t]*+{_NAME_QUOTE}"
        r"(?P<scheme>(?i:basic|bearer|token|digest|negotiate|apikey|ntlm)[ \t]++)?)"
        r"(?P<secret>[A-Za-z0-9._~+/=-]{8,4096}+)(?![$])"
    )
    return _Rule("authorization", pattern, _authorization, (literal,))


_COMMAND_WORDS = r"(?:[ \t]++[^\s|;&]{1,256}+){0,12}?"

_RULES: tuple[_Rule, ...] = _build((
    # <private>...</private>: everything inside, tags included. An unclosed tag hides the rest.
    _Rule(
        "private",
        re.compile(r"<(?:private|Private|PRIVATE)>.*?(?:</(?:private|Private|PRIVATE)>|\Z)",
                   re.DOTALL),
        _whole("private"),
        ("<private>", "<Private>", "<PRIVATE>"),
        multiline=True,
    ),
    # PEM private keys. A bare BEGIN line without a key body (code that looks for the header)
    # is left alone. The body never crosses another ``-----`` run, so a missing END or a run
    # of headers costs one pass.
    _Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?:[^-]|-(?!----)){0,16000}+-----END (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY"
            r"(?: BLOCK)?-----"
            r"|(?:\\n|\s)*+[A-Za-z0-9+/=]{40,}+(?:(?:\\n|\s)++[A-Za-z0-9+/=]{4,}+){0,400}+)"
        ),
        _whole("private_key"),
        ("-----BEGIN ",),
        multiline=True,
    ),
    # Authorization headers with a literal credential (``Bearer $TOKEN`` is a variable: kept).
    _authorization_rule("uthorization", "[Aa]"),
    _authorization_rule("UTHORIZATION", "A"),
    _Rule(
        "bearer",
        re.compile(
            r"(?P<prefix>Bearer(?<![A-Za-z0-9_]Bearer)[ \t]++)"
            r"(?P<secret>(?=[A-Za-z._~+/=-]{0,4096}+[0-9])"
            r"[A-Za-z0-9._~+/=-]{16,4096}+)(?![$])"
        ),
        _keep_prefix("bearer"),
        ("Bearer",)
    ),
    # vendor tokens, each anchored on its documented prefix
    # sk-ant-... (Anthropic) and sk-... / sk-proj-... (OpenAI): one scan, the kind by prefix
    _token("openai", "sk-", r"(?=[A-Za-z_-]{0,512}+[0-9])[A-Za-z0-9_-]{20,512}+",
           by_prefix={"sk-ant-": "anthropic"}),
    _token("github", "gh", r"[pousr]_[A-Za-z0-9]{36,255}+",
           needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _token("github", "github_pat_", r"[A-Za-z0-9_]{22,255}+"),
    _token("gitlab", "gl",
           r"(?:(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent|ffct)-[A-Za-z0-9_.-]{20,300}+"
           r"|c_[A-Za-z0-9+/]{32,400}+={0,3}|sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})",
           by_prefix={"glc_": "grafana", "glsa_": "grafana"},
           needles=("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glsoat-", "glft-",
                    "glimt-", "glagent-", "glffct-", "glc_", "glsa_")),
    _token("gitlab", "GR1348941", r"[A-Za-z0-9_-]{20,64}+"),
    _token("aws", "A", r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}+",
           needles=("AKIA", "ASIA", "ABIA", "ACCA", "A3T")),
    _token("slack", "xox", r"[abposre]-[A-Za-z0-9-]{10,255}+"),
    _token("slack", "xapp-", r"[0-9]-[A-Za-z0-9-]{10,255}+"),
    _token("slack", "hooks.slack.com/", r"(?:services|workflows|triggers)/[A-Za-z0-9/_+-]{20,200}+",
           chars="A-Za-z0-9_.-"),
    _token("discord", "discord", r"(?:app)?\.com/api/webhooks/[0-9]{5,30}+/[A-Za-z0-9_-]{20,200}+",
           chars="A-Za-z0-9_-"),
    _token("google", "AIza", r"[0-9A-Za-z_-]{35}"),
    _token("google", "GOCSPX-", r"[A-Za-z0-9_-]{20,64}+"),
    _token("google", "ya29.", r"[A-Za-z0-9_-]{30,2048}+"),
    _token("stripe", "sk_", r"(?:live|test|prod)_[0-9A-Za-z]{10,255}+"),
    _token("stripe", "rk_", r"(?:live|test|prod)_[0-9A-Za-z]{10,255}+"),
    _token("stripe", "whsec_", r"[0-9A-Za-z]{20,255}+"),
    _token("huggingface", "hf_", r"[A-Za-z0-9]{30,64}+"),
    _token("npm", "npm_", r"[A-Za-z0-9]{36}"),
    _token("pypi", "pypi-AgEIcHlwaS5vcmc", r"[A-Za-z0-9_-]{50,1000}+"),
    _token("rubygems", "rubygems_", r"[a-f0-9]{48}"),
    _token("sendgrid", "SG.", r"[A-Za-z0-9_-]{16,32}+\.[A-Za-z0-9_-]{16,64}+"),
    _token("sendinblue", "xkeysib-", r"[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _token("twilio", "SK", r"[0-9a-fA-F]{32}"),
    _token("age", "AGE-SECRET-KEY-1", r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _Rule(  # 123456789:AA... (the bot id before the colon is public, the rest is the secret)
        "telegram",
        re.compile(r"(?P<prefix>:)(?<=[0-9]{5}:)(?P<secret>AA[A-Za-z0-9_-]{30,40}+)" + _TOKEN_TAIL),
        _keep_prefix("telegram"),
        (":AA",)
    ),
    _token("databricks", "dapi", r"[a-f0-9]{32}(?:-[0-9])?"),
    _token("digitalocean", "do", r"[opr]_v1_[a-f0-9]{64}",
           needles=("doo_v1_", "dop_v1_", "dor_v1_")),
    _token("shopify", "shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
           needles=("shpat_", "shpca_", "shppa_", "shpss_")),
    _token("vault", "hv", r"[sb]\.[A-Za-z0-9_-]{24,300}+", chars="A-Za-z0-9_.-",
           needles=("hvs.", "hvb.")),
    _token("doppler", "dp.pt.", r"[A-Za-z0-9]{40,48}+", chars="A-Za-z0-9_.-"),
    _token("linear", "lin_api_", r"[A-Za-z0-9]{40}"),
    _token("postman", "PMAK-", r"[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    _token("pulumi", "pul-", r"[a-f0-9]{40}"),
    _token("perplexity", "pplx-", r"[A-Za-z0-9]{40,64}+"),
    _token("groq", "gsk_", r"[A-Za-z0-9]{40,64}+"),
    _token("sentry", "sntry", r"[su]_[A-Za-z0-9+/=_]{40,400}+"),
    _token("heroku", "HRKU-AA", r"[0-9a-zA-Z_-]{58}"),
    _token("atlassian", "ATATT3", r"[A-Za-z0-9_=-]{150,300}+"),
    _token("artifactory", "AKCp", r"[A-Za-z0-9]{69}"),
    _token("dynatrace", "dt0c01.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    _token("alibaba", "LTAI", r"[A-Za-z0-9]{20}"),
    _token("flyio", "fo1_", r"[A-Za-z0-9_-]{43}"),
    _token("flyio", "fm2_", r"[A-Za-z0-9+/]{100,}+={0,3}"),
    _token("onepassword", "ops_eyJ", r"[A-Za-z0-9+/]{250,}+={0,3}"),
    _token("planetscale", "pscale_", r"(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}+"),
    _token("notion", "ntn_", r"[0-9]{11}[A-Za-z0-9]{35}"),
    _token("newrelic", "NRAK-", r"[A-Za-z0-9]{27}"),
    _token("square", "sq0", r"(?:atp|csp)-[A-Za-z0-9_-]{22,60}+", needles=("sq0atp-", "sq0csp-")),
    _token("openshift", "sha256~", r"[A-Za-z0-9_-]{43}"),
    _token("easypost", "EZ", r"[AT]K[A-Za-z0-9]{54}", needles=("EZAK", "EZTK")),
    _token("flutterwave", "FLWSECK", r"(?:_TEST)?-[a-hA-H0-9]{32}-X"),
    _token("jwt", "eyJ", r"[A-Za-z0-9_-]{8,4096}+\.eyJ[A-Za-z0-9_-]{8,8192}+"
                         r"\.[A-Za-z0-9_-]{8,2048}+",
           tail=r"(?![A-Za-z0-9_.-])"),
    # Azure storage / service bus connection strings: AccountKey=..., SharedAccessKey=...
    _Rule("azure",
          re.compile(r"(?P<prefix>Key=(?:(?<=AccountKey=)|(?<=SharedAccessKey=)))"
                     r"(?P<secret>[A-Za-z0-9+/]{20,}+={0,2})"),
          _keep_prefix("azure"), ("AccountKey=", "SharedAccessKey=")),
    # scheme://user:PASSWORD@host (databases, brokers, git remotes, proxies). The password may
    # itself hold an ``@``: the last one before the host ends it.
    _Rule(
        "url_password",
        re.compile(
            r"(?P<prefix>://[^\s:/@\"'`<>\\]{0,128}+:)"
            r"(?P<secret>[^\s/\"'`<>\\]{1,256})@(?=[^\s@/\"'`<>\\]{0,253}+(?:[/?#\s\"'`<>\\]|$))"
        ),
        _url_password,
        # looked for by its ``@``: rarer in transcripts than ``://``, and every match has one
        ("@",)
    ),
    # curl -u user:password / --user user:password
    _Rule(
        "basic_auth",
        re.compile(
            r"(?P<prefix>curl(?<![A-Za-z0-9_-]curl)" + _COMMAND_WORDS
            + r"[ \t]++(?:-u|--user)(?:[ \t]++|=))"
            r"(?P<quote>[\"']?)(?P<user>[^\s:\"'@]{0,64}+):(?P<secret>[^\s\"']{1,256}+)(?P=quote)"
        ),
        _command_password("basic_auth"),
        ("curl",)
    ),
    # mysql -pPASSWORD (the password glued to -p; ``-p`` alone prompts)
    _Rule(
        "mysql_password",
        re.compile(
            r"(?P<prefix>mysql(?<![A-Za-z0-9_-]mysql)[a-z]*+" + _COMMAND_WORDS + r"[ \t]++-p)"
            r"(?P<quote>[\"']?)(?P<secret>[^\s\"'-][^\s\"']{0,255}+)(?P=quote)"
        ),
        _command_password("mysql_password"),
        ("mysql",)
    ),
    # .env-style assignments: UPPER_CASE names ending in _KEY / _TOKEN / _SECRET / PASSWORD.
    _env("_", "(?:KEY|TOKEN|SECRET|PASSWD)", ("_KEY", "_TOKEN", "_SECRET", "_PASSWD")),
    _env("PASSWORD"),
    # lower / camel case names in code, config and JSON
    _keyword("password", "[Pp]", "ass", "(?:word|wd)", ("assword", "asswd")),
    _keyword("secret", "[Ss]", "ecret"),
    _keyword("token", "[Tt]", "oken"),
    _named_keys((("api_key", "[Aa]", "pi"), ("access_key", "[Aa]", "ccess"),
                 ("private_key", "[Pp]", "rivate"))),
    _keyword("credential", "[Cc]", "redential", "s?"),
))


def kinds() -> list[str]:
    """The kinds of secret the rules know, sorted (for documentation and tests)."""
    return sorted({kind for rule in _RULES for kind in (rule.kind, *rule.also)})


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

    def __init__(self, rules: tuple[_Rule, ...], always: frozenset[int] = frozenset()) -> None:
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

    def rules(self, text: str) -> tuple[_Rule, ...]:
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


def _direct_rules(rules: tuple[_Rule, ...]) -> frozenset[int]:
    return frozenset(
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


_TRIGGER = _load_trigger()
_SHORT_HITS = _HitScan(_RULES)
_LONG_HITS = _HitScan(_RULES, always=_direct_rules(_RULES))


def _rules_for(text: str, trigger: _Re2Trigger | None) -> Sequence[_Rule]:
    if len(text) <= _SHORT_TEXT:  # faster than a call into RE2 at this length
        return _SHORT_HITS.rules(text)
    if trigger is not None:
        hits = trigger.present(text)
        return [_RULES[index] for index in sorted({i for hit in hits for i in _OWNERS[hit]})]
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
        block = text[start:end]
        cleaned, count = _apply(block, _rules_for(block, trigger), multiline=False)
        pieces.append(cleaned)
        total += count
        start = end
    return "".join(pieces), total


def _apply(text: str, rules: Iterable[_Rule], *, multiline: bool = True) -> tuple[str, int]:
    """``text`` through ``rules`` in order (``multiline=False``: without the multi-line ones)."""
    total = 0
    for rule in rules:
        if not multiline and rule.multiline:
            continue
        # a search is cheaper than ``sub`` when nothing matches (most texts); when something
        # does, the matches are walked from there and the text rebuilt only if one is replaced
        # (most matches are code, not secrets: ``password_min_length: 12``)
        first = rule.pattern.search(text)
        if first is None:
            continue
        pieces: list[str] = []
        done = 0
        for match in rule.pattern.finditer(text, first.start()):
            replacement = rule.replace(match)
            if replacement is not None:
                pieces += (text[done:match.start()], replacement)
                done = match.end()
        if pieces:
            pieces.append(text[done:])
            text = "".join(pieces)
            total += len(pieces) // 2
    return text, total


def redact_value(value: object) -> tuple[object, int]:
    """``value`` (a JSON-shaped tool input: str, list, dict, scalars) with every string redacted,
    keys included, and how many secrets were replaced. A string under a key is also judged with
    its key, as ``{"key": "value"}``: ``{"DB_PASSWORD": "hunter2"}`` has no secret in either
    string alone."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        total = 0
        items: list[object] = []
        for item in value:
            clean, n = redact_value(item)
            items.append(clean)
            total += n
        return items, total
    if isinstance(value, dict):
        total = 0
        result: dict[object, object] = {}
        for key, item in value.items():
            clean_key, n = redact_value(key) if isinstance(key, str) else (key, 0)
            clean, m = redact_value(item)
            if isinstance(key, str) and isinstance(clean, str) and clean:
                clean, p = _with_its_key(key, clean)
                m += p
            result[clean_key] = clean
            total += n + m
        return result, total
    return value, 0


def _with_its_key(key: str, value: str) -> tuple[str, int]:
    paired, count = redact(json.dumps({key: value}))
    if not count:
        return value, 0
    try:
        loaded = json.loads(paired)
    except ValueError:  # a rule took the closing quote (an unclosed <private>): hide it all
        return redaction_marker("private"), 1
    found = next(iter(loaded.values())) if isinstance(loaded, dict) and loaded else value
    return (found, 1) if isinstance(found, str) and found != value else (value, 0)
