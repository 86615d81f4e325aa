"""Which names hold a credential: ``DB_PASSWORD``, ``apiKey``, ``client-key-data``, ``Passwort``.

A name is split into segments (``_``, ``.``, ``-``, camelCase) and judged from its last
credential-like segment: what follows that segment may describe the credential instead of
holding it (``password_min_length``, ``token_budget``). Used by ``reverie.redact.structure``.
"""

from __future__ import annotations

import functools
import re

__all__ = ["METADATA", "credential_kind"]

#: literals whose presence (in the lower-cased text) makes the scanner look closer
ASCII_KEYWORDS = (
    "password", "passwd", "passphrase", "passcode", "passwort", "passord", "pass", "pwd",
    "secret", "token", "key", "credentials", "credential", "creds", "auth", "sig", "signature",
    "mot de passe",
    "kennwort", "contrase", "senha", "wachtwoord", "haslo", "sifre", "losenord", "salasana",
    "heslo", "jelszo", "adgangskode", "kata sandi", "identified",
)
#: other languages' words for password (checked only in texts that are not ASCII)
WORLD_KEYWORDS = (
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
METADATA = frozenset({
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
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


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
        if any(t in METADATA for t in trailing) or len(trailing) > 3:
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

