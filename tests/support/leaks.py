"""The forms a password takes in a transcript, and what counts as a leak (redaction tests and
``tests/bench/redact_leaks.py``).

Each form renders a password the way its structure needs (JSON-escaped inside JSON, doubled
quotes in SQL, base64 in ``.npmrc``...) and returns the text with the secret as it appears in it.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Callable

__all__ = ["CODE_FORMS", "FORMS", "leaked", "render", "wrapped_leak"]

#: YAML plain scalars cannot start with these (they would be a list, a quote, an alias...)
_YAML_INDICATORS = "-?:,[]{}#&*!|>'\"%@`"


def _plain(password: str) -> str:
    return password


def _json(password: str) -> str:
    return json.dumps(password)


def _yaml_plain(password: str) -> str:
    # a YAML plain scalar: no indicator first, no `` #`` or ``: `` inside (none: no spaces)
    return ("x" + password) if password[0] in _YAML_INDICATORS else password


def _single_doubled(password: str) -> str:
    return "'" + password.replace("'", "''") + "'"


def _python_repr(password: str) -> str:
    return repr(password)


def _xml(password: str) -> str:
    return password.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _base64(password: str) -> str:
    return base64.b64encode(password.encode()).decode()


def _url(password: str) -> str:
    return urllib.parse.quote(password, safe="")


def _pgpass(password: str) -> str:
    return password.replace("\\", "\\\\").replace(":", "\\:")


#: form name -> (template with ``{s}``, how the password is written there)
FORMS: dict[str, tuple[str, Callable[[str], str]]] = {
    "env": ("DB_PASSWORD={s}", _plain),
    "env export": ("export SMTP_PASS={s}", _plain),
    "env pwd": ("MYSQL_PWD={s}", _plain),
    "env apikey": ("STRIPE_APIKEY={s} npm start", _plain),
    "env credentials": ("GOOGLE_CREDENTIALS={s}", _plain),
    "env passphrase": ("GPG_PASSPHRASE={s}", _plain),
    "env secret": ("set CLIENT_SECRET={s}", _plain),
    "env lower": ("spring.datasource.password={s}", _plain),
    "yaml upper": ("  DB_PASSWORD: {s}", _yaml_plain),
    "yaml lower": ("  password: {s}", _yaml_plain),
    "yaml quoted": ("  password: {s}", _json),
    "json": ('{{"db": {{"password": {s}, "port": 5432}}}}', _json),
    "python": ("password = {s}", _python_repr),
    "flag space": ("deploy --password {s} --verbose", _plain),
    "flag equals": ("deploy --db-password={s}", _plain),
    "flag token": ("gh auth login --with-token --token {s}", _plain),
    "docker login": ("docker login -u admin -p {s} ghcr.io", _plain),
    "redis-cli": ("redis-cli -h cache -a {s} ping", _plain),
    "xml": ("<settings><password>{s}</password></settings>", _xml),
    "k8s": ("env:\n  - name: DB_PASSWORD\n    value: {s}\n", _json),
    "k8s plain": ("env:\n  - name: API_TOKEN\n    value: {s}\n", _yaml_plain),
    "json name value": ('[{{"name": "DB_PASSWORD", "value": {s}}}]', _json),
    "powershell": ("$env:DB_PASSWORD = {s}", _single_doubled),
    "os.environ": ("os.environ['DB_PASSWORD'] = {s}", _python_repr),
    "setdefault": ('os.environ.setdefault("DB_PASSWORD", {s})', _json),
    "ado.net": ("Server=db;Database=app;User Id=sa;Pwd={s};", _plain),
    "sql identified by": ("CREATE USER app IDENTIFIED BY {s};", _single_doubled),
    "sql with password": ("CREATE ROLE app WITH LOGIN PASSWORD {s};", _single_doubled),
    "npmrc": ("//registry.npmjs.org/:_auth={s}", _base64),
    "docker auths": ('{{"auths": {{"ghcr.io": {{"auth": "{s}"}}}}}}', _base64),
    "kubeconfig": ("users:\n- name: me\n  user:\n    client-key-data: {s}\n", _base64),
    "pgpass": ("db.internal:5432:app:app:{s}", _pgpass),
    "netrc": ("machine api.example.com login me password {s}", _plain),
    "url": ("postgres://app:{s}@db.internal:5432/app", _url),
    "signed url": ("https://acct.blob.core.windows.net/c/b?sv=2022&sig={s}&se=2026", _url),
    "signed url aws": ("https://b.s3.amazonaws.com/k?X-Amz-Date=1&X-Amz-Signature={s}&x=1",
                       _url),
    "signed url gcs": ("https://storage.googleapis.com/b/o?X-Goog-Signature={s}", _url),
    "german": ("Passwort: {s}", _plain),
    "french": ("mot de passe : {s}", _plain),
    "spanish": ("contraseña = {s}", _plain),
    "portuguese": ("senha: {s}", _plain),
    "russian": ("пароль: {s}", _plain),
    "japanese": ("パスワード：{s}", _plain),
    "chinese": ("密码: {s}", _plain),
}


#: forms where the name may be code (``password: str`` in TypeScript, ``password: pw`` in
#: JavaScript): a value that is a plain word or identifier is kept there by design, so their
#: property tests draw uniformly random passwords instead of hypothesis' adversarial text
CODE_FORMS = frozenset({"yaml lower"})


def render(form: str, password: str) -> tuple[str, str]:
    """The text of ``form`` holding ``password``, and the secret as written in it."""
    template, encode = FORMS[form]
    secret = encode(password)
    return template.format(s=secret), secret


_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def leaked(secret: str, text: str, cleaned: str, window: int = 4) -> bool:
    """Whether any piece of ``secret`` is still in ``cleaned``: each ``window`` characters of
    it that the text around it does not hold anyway (the template's own words)."""
    if secret and secret in cleaned:
        return True
    around = text.replace(secret, "\x00")
    rest = _MARKER.sub("\x00", cleaned)
    for start in range(0, max(1, len(secret) - window + 1)):
        piece = secret[start:start + window]
        if piece in rest and piece not in around:
            return True
    return False


def wrapped_leak(template: str, cleaned: str, before: str, after: str) -> bool:
    """Whether any character of a token wrapped over several lines is left: between ``before``
    and ``after`` there must be the template's text up to the token, one marker, and nothing
    after it."""
    if not (cleaned.startswith(before) and cleaned.endswith(after)):
        return True
    region = _MARKER.sub("\x00", cleaned[len(before):len(cleaned) - len(after)])
    head, marker, tail = region.rpartition("\x00")
    return not marker or "\x00" in head or tail != "" or not template.startswith(head)
