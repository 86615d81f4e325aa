"""The second layer: random values after names no rule knows are caught; what code and prose
hold in the same positions (hashes, ids, paths, identifiers) is not."""

from __future__ import annotations

import random
import string

import pytest

from reverie.redact import redact
from reverie.redact.entropy import find, looks_random

_RNG = random.Random(27)
_TOKEN = "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(40))


@pytest.mark.parametrize("template", [
    "X_AUTHZ={s}", '{{"session": "{s}"}}', "curl --cookie {s} https://x.example",
    "opaque: {s}", "https://api.example.com/v1?k={s}&x=1", "X-Custom-Auth: {s}",
])
def test_a_random_value_where_values_go_is_caught(template: str) -> None:
    cleaned, count = redact(template.format(s=_TOKEN))
    assert _TOKEN not in cleaned and count == 1  # by this layer, or by a name it knows


@pytest.mark.parametrize("text", [
    "commit: 4f3a9c1e5b2d4e6f7a8b9c0d1e2f3a4b5c6d7e8f",
    "id: 123e4567-e89b-12d3-a456-426614174000",
    '"integrity": "sha512-Qw3rTy7UiOp9AsDfGh1JkLzXcVbNm2QwErTyUiOpAsDfGhJkLzXcVbNm=="',
    "path: src/reverie/redact/Structure2Finder.py",
    "tool_use_id: toolu_01WyMPKcmwzZEMhPZ4epV79P",
    "class: getApiKeyFromEnvironment2Settings",
    "image: /private/var/folders/49/kxrdwwbx0h9bchx99397477c0000gn/T/tmp1.png",
    "version: 2026.05.11-build.1234+Linux-x86_64",
    "title: TheQuickBrownFox2JumpsOverTheLazyDog",
    '{"toolUseID": "bash_Kq8Zr2Vx9Lm4Tn7Pw3Yb6Fc1"}',
    # identifiers from the standard library and site-packages (the corpus bench's hits)
    "NameOID.COUNTRY_NAME: _ASN1Type.PrintableString,",
    'c_function_name="CPyBytesWriter_WriteF32LE",',
    "handler_class = CapsAfterLoginNNTPv2Handler",
    '("prompts/get", "2024-11-05"): v2025.GetPromptRequest,',
    "Argon2d = rust_openssl.kdf.Argon2d",
])
def test_what_code_and_prose_hold_there_is_kept(text: str) -> None:
    assert find(text) == [] and redact(text) == (text, 0)


def test_random_strings_look_random_and_words_do_not() -> None:
    rng = random.Random(5)
    alphabet = string.ascii_letters + string.digits
    samples = ["".join(rng.choice(alphabet) for _ in range(32)) for _ in range(500)]
    assert sum(map(looks_random, samples)) >= 425  # 90%: the rest have too few digits
    assert not looks_random("ThisIsAnOrdinaryIdentifier2024")
