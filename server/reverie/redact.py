"""Secret redaction: applied to transcript text before any model call and before any write.

Hand-written, precompiled patterns rather than ``detect-secrets``: that library scans files line
by line with entropy plugins and a heavy plugin registry, while Reverie needs one fast in-memory
``str -> str`` pass over long transcripts with predictable output that is safe to run twice. Each
pattern is anchored on a literal prefix (``sk-``, ``ghp_``, ``AKIA``, ``-----BEGIN``...) so the
regex engine rejects most positions in one step, and every quantifier that could run long is
bounded, which keeps the whole pass linear in the length of the text.

Replacements look like ``[REDACTED:kind]``; none of the patterns can match a replacement, so
``redact(redact(x)[0]) == (redact(x)[0], 0)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["redact", "redaction_marker"]


def redaction_marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    #: Returns the replacement, or ``None`` to leave the match alone (not a secret after all).
    replace: Callable[[re.Match[str]], str | None]
    #: literals one of which every match contains: a text with none of them is not scanned
    #: (a substring test is about thirty times cheaper than the pattern's scan)
    needles: tuple[str, ...] = ()
    #: compare ``needles`` with the lower-cased text (patterns compiled with IGNORECASE)
    ignore_case: bool = False


def _whole(kind: str) -> Callable[[re.Match[str]], str | None]:
    marker = redaction_marker(kind)
    return lambda _match: marker


def _keep_prefix(kind: str) -> Callable[[re.Match[str]], str | None]:
    """Keep group ``prefix`` (a header name, ``Bearer``, ``NAME=``) and replace group ``secret``."""
    marker = redaction_marker(kind)

    def replace(match: re.Match[str]) -> str | None:
        return match.group("prefix") + marker

    return replace


# Values on the right of ``NAME=`` that are code, not secrets: ``settings.api_key``, ``None``.
_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# ``Bearer REDACTED_TOKEN``, ``API_KEY=YOUR_KEY_HERE``: placeholders, not secrets.
_PLACEHOLDER = re.compile(r"[A-Z]+(?:_[A-Z]+)+|.*REDACTED.*|\*+|x{3,}|X{3,}")
_SNAKE_IDENTIFIER = re.compile(r"[a-z_][a-z_]*")
_CODE_ASSIGNMENT = re.compile(r"\s[=:]")
_NON_SECRET_VALUES = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "changeme", "xxx", "your_key_here"}
)


def _env_assignment(match: re.Match[str]) -> str | None:
    value = match.group("secret")
    if (
        value.lower() in _NON_SECRET_VALUES
        or _DOTTED_IDENTIFIER.fullmatch(value)
        or _PLACEHOLDER.fullmatch(value)
        or (value.isdigit() and len(value) <= 6)  # MAX_TOKEN = 100
        # ``API_KEY = api_key`` in code (spaces around ``=``): a variable, not a value.
        or (_CODE_ASSIGNMENT.search(match.group("prefix")) and _SNAKE_IDENTIFIER.fullmatch(value))
    ):
        return None
    quote = match.group("quote")
    return match.group("prefix") + quote + redaction_marker("env") + quote


def _authorization(match: re.Match[str]) -> str | None:
    """With a scheme (``Basic abc...``) any literal counts; without one, only token-shaped text."""
    secret = match.group("secret")
    if _PLACEHOLDER.fullmatch(secret):
        return None
    if not match.group("scheme") and (len(secret) < 16 or not any(c.isdigit() for c in secret)):
        return None
    return match.group("prefix") + redaction_marker("authorization")


def _simple(kind: str, pattern: str, *needles: str) -> _Rule:
    return _Rule(kind, re.compile(pattern), _whole(kind), needles)


_TOKEN_TAIL = r"(?![A-Za-z0-9_-])"

_RULES: tuple[_Rule, ...] = (
    # <private>...</private>: everything inside, tags included. An unclosed tag hides the rest.
    _Rule(
        "private",
        re.compile(r"<private>.*?(?:</private>|\Z)", re.DOTALL | re.IGNORECASE),
        _whole("private"),
        ("<private>",),
        ignore_case=True,
    ),
    # PEM private keys. A bare BEGIN line without a key body (code that looks for the header)
    # is left alone; the lazy body is bounded so a missing END cannot scan the whole text.
    _Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]{0,16000}?-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:\\n|[\s])*[A-Za-z0-9+/=]{40,}(?:(?:\\n|[\s])+[A-Za-z0-9+/=]{4,}){0,400})"
        ),
        _whole("private_key"),
        ("PRIVATE KEY",),
    ),
    # Authorization headers with a literal credential (``Bearer $TOKEN`` is a variable: kept).
    _Rule(
        "authorization",
        re.compile(
            r"(?P<prefix>\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
            r"(?P<scheme>(?:basic|bearer|token|digest|negotiate|apikey|ntlm)\s+)?)"
            r"(?P<secret>[A-Za-z0-9._~+/=-]{8,4096})(?![A-Za-z0-9._~+/=$-])",
            re.IGNORECASE,
        ),
        _authorization,
        ("authorization",),
        ignore_case=True,
    ),
    _Rule(
        "bearer",
        re.compile(
            r"(?P<prefix>\bBearer\s+)(?P<secret>(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,4096})"
        ),
        _keep_prefix("bearer"),
        ("Bearer",),
    ),
    _simple("anthropic", r"\bsk-ant-[A-Za-z0-9_-]{20,512}" + _TOKEN_TAIL, "sk-ant-"),
    _Rule(
        "openai",
        re.compile(
            r"\bsk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]{20,}" + _TOKEN_TAIL + r")"
            r"(?=[A-Za-z_-]{0,512}[0-9])[A-Za-z0-9_-]{20,512}" + _TOKEN_TAIL
        ),
        _whole("openai"),
        ("sk-",),
    ),
    _simple("github", r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b",
            "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    _simple("github", r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b", "github_pat_"),
    _simple("aws", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", "AKIA", "ASIA", "ABIA", "ACCA"),
    _simple("slack", r"\bxox[abposre]-[A-Za-z0-9-]{10,255}", "xox"),
    _simple("slack", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,200}",
            "https://hooks.slack.com/services/"),
    _simple("google", r"\bAIza[0-9A-Za-z_-]{35}" + _TOKEN_TAIL, "AIza"),
    _simple("stripe", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,255}\b", "_live_", "_test_"),
    _simple("huggingface", r"\bhf_[A-Za-z0-9]{30,64}\b", "hf_"),
    _simple("npm", r"\bnpm_[A-Za-z0-9]{36}\b", "npm_"),
    _Rule(
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,2048}"),
        _whole("jwt"),
        ("eyJ",),
    ),
    # .env-style assignments: UPPER_CASE names ending in _KEY / _TOKEN / _SECRET / PASSWORD.
    _Rule(
        "env",
        re.compile(
            r"(?P<prefix>(?:^|(?<=[\s;\"'{(,]))(?:export\s+)?"
            r"[A-Z][A-Z0-9_]{0,80}(?:_KEY|_TOKEN|_SECRET|PASSWORD|_PASSWD)[\"']?\s*[=:]\s*)"
            r"(?P<quote>[\"']?)"
            r"(?P<secret>[^\s\"'`$(){}\[\]<>,;#\\]{3,4096})(?P=quote)"
            r"(?=\s|$|[,;}\)\"'])",
            re.MULTILINE,
        ),
        _env_assignment,
        ("_KEY", "_TOKEN", "_SECRET", "PASSWORD", "_PASSWD"),
    ),
)


def redact(text: str) -> tuple[str, int]:
    """Replace secrets in ``text``; return the cleaned text and how many secrets were replaced."""
    total = 0
    lowered: str | None = None
    for rule in _RULES:
        if not text:
            break
        if rule.needles:
            if rule.ignore_case:
                if lowered is None:
                    lowered = text.lower()
                haystack = lowered
            else:
                haystack = text
            if not any(needle in haystack for needle in rule.needles):
                continue
        count = 0

        def substitute(match: re.Match[str], rule: _Rule = rule) -> str:
            nonlocal count
            replacement = rule.replace(match)
            if replacement is None:
                return match.group(0)
            count += 1
            return replacement

        text = rule.pattern.sub(substitute, text)
        if count:
            total += count
            lowered = None  # the text changed
    return text, total
