"""Redaction by structure (issue 27): after a credential-like name, in every structure that pairs
a name with a value, the value goes to the end of its token whatever symbols it holds.

Each class the security review reported is reproduced here (the attack as it was) and must now
fail; random printable passwords go through every covered form (``FORMS``) and none may leave a
piece behind. The 10,000-per-form run is ``tests/bench/redact_leaks.py`` (and the ``bench`` test
below); the default run uses fewer examples.
"""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reverie.redact import redact, redact_value
from support.leaks import CODE_FORMS, FORMS, leaked, render, wrapped_leak

#: printable characters a password can hold (no whitespace: a token ends there)
PRINTABLE = string.ascii_letters + string.digits + string.punctuation


# --- the review's findings, as they were reported ---------------------------------------------

# Built from pieces so that no complete secret-shaped literal sits in the repository.
_PW = "Tr0ub4dor" + ".Horse9"
REPORTED = [
    f"DB_PASSWORD={_PW}",
    "DB_PASSWORD=P@ss#" + "2024",
    "DB_PASSWORD=S3cure" + "(pass)",
    'password: "a' + '.b"',
    "DB_PASSWORD=abc;" + "tail-of-it",
    "DB_PASSWORD=abc&" + "tail-of-it",
    "DB_PASSWORD=abc," + "tail-of-it",
    "SMTP_PASS=" + "hunter22x",
    "MYSQL_PWD=" + "hunter22x",
    "STRIPE_APIKEY=" + "hunter22x",
    "GOOGLE_CREDENTIALS=" + "hunter22x",
    "GPG_PASSPHRASE=" + "hunter22x",
    "CLIENT_SECRET=" + "hunter22x",
    "deploy --password " + "hunter22x",
    "docker login -u admin -p " + "hunter22x" + " ghcr.io",
    "redis-cli -h cache -a " + "hunter22x" + " ping",
    "<password>" + "hunter22x" + "</password>",
    "- name: DB_PASSWORD\n  value: " + "hunter22x",
    "$env:DB_PASSWORD = '" + "hunter22x" + "'",
    "os.environ['DB_PASSWORD'] = '" + "hunter22x" + "'",
    "Server=db;User Id=sa;Pwd=" + "hunter22x" + ";",
    "CREATE USER app IDENTIFIED BY '" + "hunter22x" + "';",
    "CREATE ROLE app WITH LOGIN PASSWORD '" + "hunter22x" + "';",
    "//registry.npmjs.org/:_auth=" + "aHVudGVyMjJ4",
    "db.internal:5432:app:app:" + "hunter22x",
    '{"auths": {"ghcr.io": {"auth": "' + "aHVudGVyMjJ4" + '"}}}',
    "    client-key-data: " + "LS0tLS1CRUdJTiBSU0Eg" + "UFJJVkFURSBLRVktLS0t",
    "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=" + "hunter22x" + "&se=2026",
    "https://b.s3.amazonaws.com/k?X-Amz-Date=1&X-Amz-Signature=" + "hunter22x" + "&x=1",
    "https://storage.googleapis.com/b/o?X-Goog-Signature=" + "hunter22x",
    "git clone https://" + "hunter22x" + "0a1b2c3d4e5f6a7b8c9d" + "@github.com/acme/app.git",
    "Passwort: " + "hunter22x",
    "mot de passe : " + "hunter22x",
    "contraseña: " + "hunter22x",
    "senha=" + "hunter22x",
    "пароль: " + "hunter22x",
    "パスワード：" + "hunter22x",
    "密码: " + "hunter22x",
    "machine api.example.com login me password " + "hunter22x",
]
SECRETS = (_PW, "P@ss#2024", "S3cure", "a.b", "tail-of-it", "hunter22x", "aHVudGVyMjJ4",
           "LS0tLS1CRUdJTiBSU0Eg", "UFJJVkFURSBLRVktLS0t")


@pytest.mark.parametrize("text", REPORTED, ids=range(len(REPORTED)))
def test_each_reported_form_is_redacted(text: str) -> None:
    cleaned, count = redact(text)
    assert count >= 1, text
    for secret in SECRETS:
        assert secret not in cleaned, cleaned
    assert redact(cleaned) == (cleaned, 0)


def test_what_around_the_value_is_kept() -> None:
    assert redact("export DB_PASSWORD=P@ss#1 && make")[0] == (
        "export DB_PASSWORD=[REDACTED:env] && make")
    assert redact("<password>P@ss#1</password>")[0] == "<password>[REDACTED:password]</password>"
    assert redact("x?sig=abc%2F123&se=1")[0] == "x?sig=[REDACTED:signature]&se=1"
    assert redact('{"password": "a\\"b"}')[0] == '{"password": "[REDACTED:password]"}'


def test_a_pem_body_without_its_begin_line() -> None:
    body = "\n".join("".join(random.Random(i).choice(string.ascii_letters) for _ in range(64))
                     for i in range(5))
    text = f"...truncated\n{body}\n-----END RSA PRIVATE KEY-----\n"
    cleaned, _ = redact(text)
    assert body.split("\n")[0] not in cleaned and body.split("\n")[-1] not in cleaned
    assert cleaned.startswith("...truncated\n")


def test_a_putty_key() -> None:
    rng = random.Random(4)
    public = "\n".join("".join(rng.choice(string.ascii_letters) for _ in range(64))
                       for _ in range(2))
    private = "\n".join("".join(rng.choice(string.ascii_letters) for _ in range(64))
                        for _ in range(3))
    mac = "".join(rng.choice("0123456789abcdef") for _ in range(64))
    text = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me\n"
            f"Public-Lines: 2\n{public}\nPrivate-Lines: 3\n{private}\nPrivate-MAC: {mac}\n")
    cleaned, _ = redact(text)
    for line in private.split("\n"):
        assert line not in cleaned
    assert mac not in cleaned
    assert public.split("\n")[0] in cleaned  # the public half is not a secret


# --- where the name is code, code stays ------------------------------------------------------

KEPT = [
    "password = getpass.getpass()",
    "api_key = settings.api_key",
    "client = Client(api_key=api_key, timeout=30)",
    "password: str = Field(min_length=8)",
    '"password_min_length": 12, "max_tokens": 4096, "tokenizer": "cl100k_base"',
    "SECRET_KEY = None",
    'API_KEY = os.environ["API_KEY"]',
    "token = await fetch_token(user)",
    "apiKey: 'ollama', secret: process.env.SECRET,",
    "const envMapping = { apiKey: [] }",
    "litellmApiKey: isLiteLLM ? env.KEY : undefined,",
    '"time_to_first_token_ms":1200,',
    "export DB_PASSWORD=$DB_PASSWORD",
    'password: "${DB_PASSWORD}"',
    "password: '{{ vault_db_password }}'",
    "docker login -u me --password-stdin ghcr.io",
    "PWD=/home/me/project",
    "--api-key <key>   Override API key",
    "codemie --api-key sk-... run",
    "the --password flag is ignored",
    "a path identified by other passed in",
    "input type=\"password\" name=\"pw\"",
]


@pytest.mark.parametrize("text", KEPT, ids=range(len(KEPT)))
def test_code_and_references_are_kept(text: str) -> None:
    assert redact(text) == (text, 0)


# --- property tests: random printable passwords in every covered form --------------------------


#: ``--hypothesis-profile=deep`` (tests/conftest.py) raises it
@settings(max_examples=max(300, settings.default.max_examples), deadline=None)
@given(st.sampled_from(sorted(FORMS)), st.text(PRINTABLE, min_size=16, max_size=16),
       st.integers(min_value=0, max_value=2**32))
@example("env", "AAAAAAAAAAAAAA_A", 0)  # found by this test: kept as a constant's name
@example("url", "AAAAAAAAAAAAAA_A", 0)
@example("chinese", "AABAABAABAABAA_A", 0)  # word-like segments, no configuration word
def test_random_passwords_in_every_form_leave_nothing(form: str, password: str, seed: int) -> None:
    if form in CODE_FORMS:
        rng = random.Random(seed)
        password = "".join(rng.choice(PRINTABLE) for _ in range(16))
    text, secret = render(form, password)
    cleaned, _ = redact(text)
    assert not leaked(secret, text, cleaned), (form, text, cleaned)


@settings(max_examples=max(150, settings.default.max_examples), deadline=None)
@given(st.sampled_from(sorted(FORMS)), st.text(PRINTABLE, min_size=16, max_size=16),
       st.integers(min_value=0, max_value=2**32))
# found by this test: the quoted part taken as the whole value, ``]0`` left behind
@example("chinese", '"000000000000"]0', 0)
@example("chinese", '"000000000000"]"0', 0)
@example("german", "'000000000000'),0", 0)
@example("env", '"000000000000"}\\0', 0)
# found with the deep profile: the password's own backslash and quote read as an escaped quote
@example("ado.net", '\\"00000000000000', 0)
@example("ado.net", '\\"0000000\\"000000', 0)
def test_random_passwords_in_a_jsonl_field_leave_nothing(
    form: str, password: str, seed: int
) -> None:
    """The same forms as raw JSONL text (``read_file`` of a transcript): JSON-escaped once."""
    if form in CODE_FORMS:
        rng = random.Random(seed)
        password = "".join(rng.choice(PRINTABLE) for _ in range(16))
    text, secret = render(form, password)
    # as the agents write it (JSON.stringify keeps non-ASCII characters as they are)
    raw = json.dumps({"type": "user", "message": {"content": text}}, ensure_ascii=False)
    cleaned, _ = redact(raw)
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
    assert not leaked(escaped, raw, cleaned), (form, raw, cleaned)


# --- a quoted value followed by closers: structure, or more of the token ------------------------

#: raw JSONL (``content`` of a message) where closers after the quoted part are no structure:
#: the token goes on (``]0``), so the whole of it goes
QUOTED_THEN_MORE = [
    ('密码: "Zq7vLw2xPn4k"]0', "]0"),
    ('密码: "Zq7vLw2xPn4k"]"0', ']\\"0'),
    ('Passwort: "Zq7vLw2xPn4k")x9', ")x9"),
    ("DB_PASSWORD='Zq7vLw2xPn4k'],tail", "],tail"),
]


@pytest.mark.parametrize(("content", "tail"), QUOTED_THEN_MORE,
                         ids=range(len(QUOTED_THEN_MORE)))
def test_closers_glued_to_more_of_the_token_go_with_it(content: str, tail: str) -> None:
    raw = json.dumps({"type": "user", "message": {"content": content}}, ensure_ascii=False)
    cleaned, count = redact(raw)
    assert count == 1 and "Zq7vLw2xPn4k" not in cleaned, cleaned
    assert tail not in cleaned, cleaned
    json.loads(cleaned)  # the line stays JSON


#: closers that are structure (the value's bracket, call, object; then a blank, the end, the
#: next argument or a method): the value alone goes, the structure stays
QUOTED_THEN_STRUCTURE = [
    ('rows = [{"password": "Zq7vLw2xPn4k"}]\n', 'rows = [{"password": "[REDACTED:password]"}]\n'),
    ('{"password":"Zq7vLw2xPn4k"},{"a":1}', '{"password":"[REDACTED:password]"},{"a":1}'),
    ('login(password="Zq7vLw2xPn4k").json()', 'login(password="[REDACTED:password]").json()'),
    ('Client(api_key="Zq7vLw2xPn4k",timeout=3)',
     'Client(api_key="[REDACTED:api_key]",timeout=3)'),
    ('connect(password="Zq7vLw2xPn4k")?;', 'connect(password="[REDACTED:password]")?;'),
    ('Client(api_key="${API_KEY}",timeout=3).run()', None),
    ('{"content": "密码: \\"Zq7vLw2xPn4k\\"]"}', '{"content": "密码: \\"[REDACTED:password]\\"]"}'),
    ('{"content": "密码: \\"Zq7vLw2xPn4k\\"]\\nnext"}',
     '{"content": "密码: \\"[REDACTED:password]\\"]\\nnext"}'),
]


@pytest.mark.parametrize(("text", "expected"), QUOTED_THEN_STRUCTURE,
                         ids=range(len(QUOTED_THEN_STRUCTURE)))
def test_closers_that_are_structure_stay(text: str, expected: str | None) -> None:
    cleaned, _ = redact(text)
    assert cleaned == (text if expected is None else expected)


# --- UPPER_SNAKE values: a password of capitals and underscores, or a constant's name -----------

#: found by hypothesis: capitals and underscores that read as no name (a letter three times
#: in a row, one letter repeated, a segment twice, segments of one letter)
SNAKE_PASSWORDS = ["AAAAAAAAAAAAAA_A", "A_BBBBBBBBBBBBBB", "AB_AB_AB_AB_AB_C", "QQ_WERTY_UIOPASD",
                   "X_Y_ZEBRA_CASTLE", "BCDFGHJKLM_NPQRS",
                   # word-like segments, none of them a word configuration names use
                   "AABAABAABAABAA_A", "AABAABAABAACAA_A", "AABAABAACAABDE_A"]


@pytest.mark.parametrize("password", SNAKE_PASSWORDS)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_upper_snake_password_is_redacted(form: str, password: str) -> None:
    text, secret = render(form, password)
    cleaned, _ = redact(text)
    assert not leaked(secret, text, cleaned), (form, text, cleaned)


#: references to a constant, not values: the fixtures' own (a Codex session's ``.env`` advice,
#: escaped as in its JSONL) and the usual shapes in code
CONSTANT_REFERENCES = [
    "Minimal variables:\\n\\n```env\\nBINANCE_API_KEY=YOUR_KEY\\nBINANCE_API_SECRET=YOUR_SECRET"
    "\\nDATABASE_URL=postgresql://t",
    "BINANCE_API_KEY=YOUR_KEY",
    "PASSWORD = DB_PASSWORD_ENV",
    "password: SECRET_NAME",
    "  password: DB_PASSWORD",
    "api_key = OPENAI_API_KEY",
    "token: GITHUB_TOKEN",
    "DB_PASSWORD=CHANGE_ME",
    "export AWS_SECRET_ACCESS_KEY=YOUR_AWS_SECRET_ACCESS_KEY_HERE",
    "proxy_password = HTTPS_PROXY_PASSWORD",
    "client_secret: X_CLIENT_SECRET",
    "curl -u admin:ADMIN_PASSWORD https://api.example.com",
    "postgres://app:DB_PASSWORD@db.internal:5432/app",
]


@pytest.mark.parametrize("text", CONSTANT_REFERENCES, ids=range(len(CONSTANT_REFERENCES)))
def test_a_constant_reference_is_kept(text: str) -> None:
    assert redact(text) == (text, 0)


WRAP_TEMPLATES = ["API_TOKEN={t}", "export GITHUB_TOKEN=ghp_{t}", "token: {t}",
                  "Authorization: Bearer 9{t}", "client_secret={t}", "  DB_PASSWORD: {t}"]


def _wrapped(token: str, width: int, template: str) -> tuple[str, str, str, str]:
    if "ghp_" in template:  # a vendor token has its vendor's alphabet
        token = "".join(c if c.isalnum() else "x" for c in token)
    line = template.format(t=token)
    wrapped = "\n".join(line[i:i + width] for i in range(0, len(line), width))
    before, after = "$ cat .env\n", "\n$ make deploy\n"
    return before + wrapped + after, before, after, template


@settings(max_examples=200, deadline=None)
@given(st.text(string.ascii_letters + string.digits + "+/_-", min_size=40, max_size=240),
       st.integers(min_value=40, max_value=120), st.sampled_from(WRAP_TEMPLATES))
def test_wrapped_tokens_leave_no_character(token: str, width: int, template: str) -> None:
    """A token hard-wrapped at the terminal's width: its continuation lines go too."""
    text, before, after, template = _wrapped(token, width, template)
    cleaned, _ = redact(text)
    assert not wrapped_leak(template, cleaned, before, after), (width, text, cleaned)


@pytest.mark.bench
def test_ten_thousand_wrapped_tokens() -> None:
    """The issue's goal for wrapped tokens, counted: 0 characters left in 10,000."""
    rng = random.Random(27)
    alphabet = string.ascii_letters + string.digits + "+/_-"
    leaks = 0
    for i in range(10_000):
        token = "".join(rng.choice(alphabet) for _ in range(rng.randint(40, 240)))
        text, before, after, template = _wrapped(token, rng.randint(40, 120),
                                                 WRAP_TEMPLATES[i % len(WRAP_TEMPLATES)])
        leaks += wrapped_leak(template, redact(text)[0], before, after)
    assert leaks == 0


@settings(max_examples=200, deadline=None)
@given(st.text(string.ascii_letters + string.digits + "_-", min_size=20, max_size=80)
       .filter(lambda t: any(c.isdigit() for c in t) and any(c.isalpha() for c in t)),
       st.sampled_from(["git clone https://{t}@github.com/acme/app.git",
                        "remote: https://{t}@gitlab.example.com:8443/x.git",
                        '"url": "https://{t}@example.com/v1"']))
def test_a_token_as_a_urls_user_leaves_nothing(token: str, template: str) -> None:
    text = template.format(t=token)
    cleaned, _ = redact(text)
    assert not leaked(token, text, cleaned), (text, cleaned)


def test_redact_value_pairs_a_key_with_its_value() -> None:
    cleaned, count = redact_value({"DB_PASSWORD": "P@ss#" + "2024;x", "n": 1})
    assert count == 1 and cleaned == {"DB_PASSWORD": "[REDACTED:env]", "n": 1}


@pytest.mark.bench
def test_ten_thousand_random_passwords_per_form() -> None:
    """The issue's goal, counted: 0 leaks in 10,000 random printable passwords in each form."""
    rng = random.Random(27)
    leaks = {}
    for form in sorted(FORMS):
        count = 0
        for _ in range(10_000):
            password = "".join(rng.choice(PRINTABLE) for _ in range(16))
            text, secret = render(form, password)
            if leaked(secret, text, redact(text)[0]):
                count += 1
        leaks[form] = count
    assert sum(leaks.values()) == 0, {f: n for f, n in leaks.items() if n}


def test_the_forms_are_what_they_say() -> None:
    """Each form's rendering really carries the password (encoded the way the form needs)."""
    password = "a'b\"c\\d:e;f&g<h"
    for form in FORMS:
        text, secret = render(form, password)
        assert secret in text, form
    assert render("npmrc", password)[1] == base64.b64encode(password.encode()).decode()
    assert render("url", password)[1] == urllib.parse.quote(password, safe="")


def test_a_names_character_is_a_lowercase_name_character_or_any_non_ascii_one() -> None:
    """The gates' name class is written by what it excludes (a compile of ``\\x80-\\U0010ffff``
    costs ~20 ms per gate at every start-up): it must still be exactly that set."""
    import re
    import sys

    from reverie.redact.structure import _NAME_CHAR

    every = "".join(map(chr, range(sys.maxunicode + 1)))
    left = re.sub(_NAME_CHAR, "", every)
    expected = "".join(c for c in map(chr, range(128))
                       if not (c.isdigit() or "a" <= c <= "z" or c in "_.-"))
    assert left == expected
