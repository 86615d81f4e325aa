"""The second, independent layer: a long random-looking value where values go.

The first layers know secrets by their vendor's prefix or by the name before them. A credential
of a shape no rule names (``X_AUTHZ=`` + 40 random characters, ``--session 9fQ...``) is still
caught here by where it stands (after ``=`` or ``:``, a URL's ``?x=``, a flag) and by what it
looks like: 20 to 512 characters of a token alphabet, mixed upper case, lower case and digits,
high Shannon entropy for its length, changing character class often, and few vowels (random
text has about one letter in five a vowel; identifiers and words have two in five).

Not caught, by design: hex strings (hashes, commit ids, UUIDs), paths and dotted names made of
words, identifiers whose letters are mostly camel-case words of four or more, identifiers of
known services (``toolu_...``, ``msg_...``, Stripe object ids), values of
integrity fields (``sha512-...``). The false-positive rate is measured by
``tests/bench/redact_entropy.py`` on this repository's own code and docs and on the fixture
transcripts' text.

Why not ``detect-secrets``' ``Base64HighEntropyString`` / ``HexHighEntropyString``: they judge
every quoted string of a line by entropy alone (limits 4.5 and 3.0), which flags hashes and
base64 test data, and they run per line through a plugin registry with global settings; this
layer needs one linear pass over long texts inside ``redact`` and a position to anchor on. The
entropy measure is the same (Shannon, over the string's own characters).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

from reverie.redact.structure import Span

__all__ = ["KIND", "find", "looks_random"]

KIND = "high_entropy"

#: a value position: after ``=`` / ``:`` (assignments, headers, JSON, URL queries) or a flag
_VALUE = r"[\"'`]?(?P<value>[A-Za-z0-9+/_~.-]{20,512}+={0,2})(?![A-Za-z0-9+/_~.=-])"
#: each position its own pattern, so each starts with a literal the engine searches for fast
_POSITIONS = (
    ("=", re.compile(r"=[ \t]{0,3}+" + _VALUE)),
    (":", re.compile(r":[ \t]{0,3}+" + _VALUE)),
    (" -", re.compile(r"-(?<=\s-)-?[A-Za-z][\w-]{0,40}+[ \t]++" + _VALUE)),
)
_HEX = re.compile(r"[0-9a-fA-F-]+")
_INTEGRITY = re.compile(r"sha(?:1|256|384|512)-")
#: object ids of well-known services: identifiers, not credentials
_ID_PREFIXES = re.compile(
    r"(?:toolu|msg|req|call|chatcmpl|resp|run|file|org|proj|asst|thread|batch|evt|ch|cus|sub|pi|"
    r"in|price|prod|acct|src|txn|tok_test|srvtoolu|compl|cmpl|item|conv|sess|span|trace|gen|user|"
    r"usr|team|ws|wrk|job|task|dep|bld|art|img|vid|doc|ses|act|evt|obj)[_-]"
)
_WORDS = re.compile(r"[A-Za-z]+|[0-9]+")
_KEY_BEFORE = re.compile(r"(?P<key>[A-Za-z0-9_.-]{1,40})[\"'\\]{0,3}[ \t]*[=:]$")
#: names of fields that hold identifiers, digests and versions, not credentials
_STRUCTURAL_KEY = re.compile(
    r"(?i)(?:id|ids|uuid|guid|signature|hash|sha|digest|etag|checksum|integrity|version|ref|"
    r"commit|slug|nonce_id|revision|rev|fingerprint)$"
)
_VOWELS = frozenset("aeiouAEIOU")


def find(text: str) -> list[Span]:
    """Long random-looking values in value positions of ``text``."""
    spans: list[Span] = []
    if len(text) < 21:
        return spans
    found_all = [found for literal, pattern in _POSITIONS if literal in text
                 for found in pattern.finditer(text)]
    found_all.sort(key=lambda found: found.start("value"))
    done = -1
    for found in found_all:
        if found.start("value") < done:
            continue
        done = found.end("value")
        value = found.group("value")
        if value.startswith("[REDACTED") or not looks_random(value):
            continue
        key = _KEY_BEFORE.search(text, max(0, found.start() - 48), found.start() + 1)
        if key and _STRUCTURAL_KEY.search(key.group("key")):
            continue  # ``"toolUseID": ...``, ``sha: ...``: an identifier by its name
        spans.append(Span(found.start("value"), found.end("value"), KIND))
    return spans


def looks_random(value: str) -> bool:
    """Whether ``value`` looks generated rather than written (see the module's docstring)."""
    core = value.rstrip("=")
    if len(core) < 20 or _HEX.fullmatch(core) or _INTEGRITY.match(core) or _ID_PREFIXES.match(
            core):
        return False
    if not (any(c.isdigit() for c in core) and any(c.isupper() for c in core)
            and any(c.islower() for c in core)):
        return False
    if _made_of_words(core) or core.startswith(("/", "./", "../", "~")) or core.count("/") >= 3:
        return False  # words, or a path (a temp folder's random name is not a credential)
    if _reads_as_identifier(core):
        return False  # ``x25519.X25519PublicKey``, ``CapsAfterLoginNNTPv2Handler``
    letters = [c for c in core if c.isalpha()]
    if sum(c in _VOWELS for c in letters) > 0.3 * len(letters):
        return False
    if _class_changes(core) < 0.35 * len(core):
        return False
    return _entropy(core) >= min(4.0, 0.82 * math.log2(len(core)))


def _made_of_words(value: str) -> bool:
    """``src/app/Settings.py``, ``my-project.v2.Build``: pieces that are words or numbers."""
    pieces = re.split(r"[/._~+-]+", value)
    if len(pieces) < 2:
        return False
    return all(len(p) <= 12 and len(_WORDS.findall(p)) <= 2 for p in pieces if p)


_CAMEL_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def _reads_as_identifier(value: str) -> bool:
    """Most letters in camel-case words of four or more (``PrintableString``, ``NNTP``): code.
    A random string's letters fall mostly into pieces of one to three (``aB3xQ`` is five)."""
    letters = sum(c.isalpha() for c in value)
    long = sum(len(w) for w in _CAMEL_WORDS.findall(value) if len(w) >= 4)
    return long >= 0.7 * letters


def _class_changes(value: str) -> int:
    def cls(c: str) -> int:
        return 0 if c.islower() else 1 if c.isupper() else 2 if c.isdigit() else 3

    return sum(cls(a) != cls(b) for a, b in itertools.pairwise(value))


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(k / n * math.log2(k / n) for k in counts.values())
