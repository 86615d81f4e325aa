"""Secret redaction: every pattern, no false positives on code or the real fixtures, idempotence."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.redact import redact

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"

# Built from pieces so that no complete secret-shaped literal sits in the repository.
OPENAI = "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
CASES = [
    ("openai", f"key = {OPENAI} end", OPENAI),
    ("openai", "token sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2 here", "A1b2C3d4E5f6G7h8I9j0K1l2"),
    ("anthropic", "export ANTH=sk-" + "ant-api03-" + "x" * 30 + "9", "api03"),
    ("github", "ghp_" + "a1B2" * 9, "a1B2a1B2"),
    ("github", "gho_" + "Z9y8" * 9, "Z9y8Z9y8"),
    ("github", "github_pat_" + "11ABCDEFG0" * 4, "11ABCDEFG0"),
    ("aws", "aws id " + "AKIA" + "IOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("slack", "xoxb-" + "1234567890-abcdefghijkl", "1234567890"),
    ("google", "key=AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "SyD-9tSrke72"),
    ("stripe", "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWD"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "SflKxwRJSMeKKF2QT4fw",
     "SflKxwRJSMeKKF2QT4fw"),
    ("bearer", "curl -H 'X: Bearer " + "abcdef0123456789abcdef012345'", "abcdef0123456789"),
    ("authorization", 'curl -H "Authorization: Basic dXNlcjpwYXNzd29yZA"', "dXNlcjpwYXNzd29yZA"),
    ("authorization", "Authorization: token " + "f00dfeedcafe1234", "f00dfeedcafe1234"),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAn" + "q" * 64
     + "\nabcd\n-----END RSA PRIVATE KEY-----", "qqqqqqqq"),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU"
     + "Q" * 50 + "\\n", "QQQQQQQQ"),
    ("env", "DB_PASSWORD=hunter22", "hunter22"),
    ("env", "export SERVICE_TOKEN='s3cr3t-value'", "s3cr3t-value"),
    ("env", "APP_SECRET: 'zzTopSecret'", "zzTopSecret"),
    ("env", 'PASSWORD="correct horse"', "correct"),  # quoted with a space: not an env value
    ("private", "before <private>my home address</private> after", "home address"),
    ("private", "start <PRIVATE>unclosed secret text", "unclosed secret"),
]


@pytest.mark.parametrize(("kind", "text", "secret"), CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                                 enumerate(CASES)])
def test_each_pattern_is_redacted(kind: str, text: str, secret: str) -> None:
    cleaned, count = redact(text)
    if secret == "correct":
        # a value with a space is a sentence, not an assignment: left alone
        assert count == 0 and cleaned == text
        return
    assert secret not in cleaned
    assert count == 1
    assert f"[REDACTED:{kind}]" in cleaned


def test_surrounding_text_is_kept() -> None:
    cleaned, count = redact(f"use {OPENAI} for the demo\nnext line")
    assert cleaned == "use [REDACTED:openai] for the demo\nnext line"
    assert count == 1
    cleaned, _ = redact("export GITHUB_TOKEN=ghp_" + "k" * 36)
    assert cleaned == "export GITHUB_TOKEN=[REDACTED:github]"


ORDINARY_CODE = '''
import os
API_KEY = os.environ["API_KEY"]
api_key = settings.api_key
API_KEY = settings.api_key
SECRET_KEY = None
MAX_TOKEN = 100
headers = {"Authorization": f"Bearer {token}"}
curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com
authorization = request.headers.get("Authorization")
if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):
    raise ValueError("risk-assessment-for-the-project-2024")
task-sk-something and sk-learn are words
password = getpass.getpass()
OPENAI_API_KEY=YOUR_API_KEY
Authorization: Bearer REDACTED_TOKEN
def get_token(self) -> str: return self._token
eyJ is how base64 JSON starts
'''


def test_no_false_positives_on_ordinary_code() -> None:
    cleaned, count = redact(ORDINARY_CODE)
    assert count == 0
    assert cleaned == ORDINARY_CODE


#: Redactions per real fixture file. Only one has any: test code in a Codex session assigning
#: literal test values (``CODEMIE_API_KEY: 'sk-secret'``, ``'test-key'``, ``'my-key'``), which are
#: credential-shaped assignments and rightly hidden. Everything else must come out untouched.
EXPECTED_FIXTURE_COUNTS = {
    "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl": 6,
}


def test_real_fixtures_counts() -> None:
    files = [p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "SOURCES.md"]
    assert len(files) >= 15
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        cleaned, count = redact(text)
        assert count == EXPECTED_FIXTURE_COUNTS.get(path.name, 0), path.name
        if count == 0:
            assert cleaned == text


def test_codex_fixture_redacts_the_test_values_only() -> None:
    path = next(FIXTURES.rglob(next(iter(EXPECTED_FIXTURE_COUNTS))))
    cleaned, _ = redact(path.read_text(encoding="utf-8"))
    assert "CODEMIE_API_KEY: 'sk-secret'" not in cleaned
    assert cleaned.count("CODEMIE_API_KEY: '[REDACTED:env]'") == 6
    assert ".toBe('sk-secret')" in cleaned  # a bare word in an assertion is not a secret


@pytest.mark.parametrize("text", [c[1] for c in CASES] + [ORDINARY_CODE])
def test_idempotent(text: str) -> None:
    once, _ = redact(text)
    twice, count = redact(once)
    assert twice == once
    assert count == 0


def test_fast_and_linear_on_long_text() -> None:
    chunk = ORDINARY_CODE + "sk-" + "a" * 19 + " Bearer short " + "-----BEGIN PRIVATE KEY-----\n"
    text = chunk * 2_000  # ~1.4 MB of near-misses
    started = time.perf_counter()
    _, count = redact(text)
    elapsed = time.perf_counter() - started
    assert count == 0
    assert elapsed < 2.0, f"redaction took {elapsed:.2f}s"
    doubled = text * 2
    started = time.perf_counter()
    redact(doubled)
    assert time.perf_counter() - started < elapsed * 4 + 0.5  # no quadratic blow-up


def _redact_every_rule(text: str) -> tuple[str, int]:
    """The reference: every pattern scans the text, whatever the needles say."""
    from reverie import redact as module

    total = 0
    for rule in module._RULES:
        count = 0

        def substitute(match: re.Match[str], rule: object = rule) -> str:
            nonlocal count
            replacement = rule.replace(match)  # type: ignore[attr-defined]
            if replacement is None:
                return match.group(0)
            count += 1
            return replacement

        text = rule.pattern.sub(substitute, text)
        total += count
    return text, total


_PIECES = [c[1] for c in CASES] + [
    ORDINARY_CODE, "authorization", "AUTHORIZATION: Bearer ", "<Private>", "sk-", "_KEY=",
    " ", "\n", "x" * 20, "0123456789", "ghp_", "hooks.slack.com/services/", "İ", "eyJ", ".",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=8), st.randoms(use_true_random=False))
def test_needles_never_change_the_result(pieces: list[str], rng: random.Random) -> None:
    """A rule skipped for lack of its literal could not have matched: same text, same count."""
    text = "".join(p[: rng.randint(0, len(p))] if rng.random() < 0.3 else p for p in pieces)
    assert redact(text) == _redact_every_rule(text)


def test_needles_make_ordinary_text_cheap() -> None:
    """A real session: most rules find no literal of theirs and are skipped."""
    text = next(FIXTURES.rglob("tool_heavy.jsonl")).read_text(encoding="utf-8")
    started = time.perf_counter()
    for _ in range(5):
        redact(text)
    filtered = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(5):
        _redact_every_rule(text)
    unfiltered = time.perf_counter() - started
    assert filtered < unfiltered / 2, (filtered, unfiltered)
