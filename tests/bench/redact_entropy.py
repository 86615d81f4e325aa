"""The entropy layer's false-positive rate, and what it catches that no other rule does.

False positives: every line of this repository's own code and docs (``server/``, ``tests/``
without the fixtures, ``docs/``, ``vscode-client/src``), every text of the fixture
transcripts (message text, tool inputs and outputs, as ``redact`` sees them) and, with
``--python``, a large corpus of ordinary code and prose written by others (the standard library
of the running Python with its tests, every ``.py``/``.pyi``/``.md``/``.rst``/``.txt`` of the
installed site-packages, the text files under ``/usr/share/doc``) goes through
``reverie.redact.entropy.find``; each line with a hit counts. A hit the other rules confirm is
a secret-shaped literal (test data), reported apart. Goal: at most 1 per 10,000 lines.

Catches: random credentials (20 to 64 characters of base62 / base64) after names no rule knows
(``X_AUTHZ=``, ``"session": ``, ``--cookie``), as a share of those planted.

Run: ``.venv/bin/python tests/bench/redact_entropy.py [--python] [--show]``
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
from collections.abc import Iterator
from pathlib import Path

from reverie.redact import entropy, redact
from reverie.redact.rules import RULES, apply_rule

#: every rule but the entropy layer: a hit they confirm is a secret-shaped literal, not a
#: false positive (the repository's tests hold a few on purpose)
_OTHERS = tuple(rule for rule in RULES if rule.kind != entropy.KIND)


def _confirmed(line: str) -> bool:
    return any(apply_rule(rule, line)[1] for rule in _OTHERS)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"


def _code_lines() -> Iterator[tuple[str, str]]:
    for folder in ("server", "tests", "docs", "vscode-client/src"):
        for path in sorted((ROOT / folder).rglob("*")):
            if not path.is_file() or "fixtures" in path.parts or path.suffix not in (
                    ".py", ".md", ".ts", ".json", ".toml", ".yml", ".yaml", ".txt"):
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for line in text.splitlines():
                yield str(path.relative_to(ROOT)), line


_TEXT_SUFFIXES = (".py", ".pyi", ".md", ".rst", ".txt")


def _python_lines() -> Iterator[tuple[str, str]]:
    """The standard library, the site-packages and the system's documentation, line by line."""
    import site
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    roots = [stdlib, *map(Path, site.getsitepackages()), Path("/usr/share/doc")]
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix not in _TEXT_SUFFIXES or not path.is_file() or (
                    root == stdlib and "site-packages" in path.parts):
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for line in text.splitlines():
                yield str(path), line


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in ("id", "uuid", "parentUuid", "signature", "tool_use_id", "requestId",
                        "sessionId", "leafUuid", "messageId", "promptId"):
                continue  # structure, never shown as text
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _transcript_lines() -> Iterator[tuple[str, str]]:
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.name == "SOURCES.md":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        name = str(path.relative_to(ROOT))
        if path.suffix in (".jsonl", ".json"):
            for raw in text.splitlines():
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                for piece in _strings(record):
                    for line in piece.splitlines():
                        yield name, line
        else:
            for line in text.splitlines():
                yield name, line


def _catch_rate(rng: random.Random, count: int = 2_000) -> float:
    alphabet = string.ascii_letters + string.digits
    forms = ["X_AUTHZ={s}", '"session": "{s}"', "curl --cookie {s} https://x", "opaque: {s}",
             "https://api.example.com/v1?k={s}&x=1", "X-Custom-Auth: {s}"]
    caught = 0
    for i in range(count):
        secret = "".join(rng.choice(alphabet) for _ in range(rng.randint(24, 64)))
        cleaned, _ = redact(forms[i % len(forms)].format(s=secret))
        caught += secret not in cleaned
    return caught / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--show", action="store_true", help="print every false positive")
    parser.add_argument("--python", action="store_true",
                        help="also the standard library, site-packages and /usr/share/doc")
    args = parser.parse_args()
    ok = True
    corpora = [("code+docs", _code_lines()), ("transcripts", _transcript_lines())]
    if args.python:
        corpora.append(("python+docs", _python_lines()))
    for label, lines in corpora:
        total = hits = false = 0
        for source, line in lines:
            total += 1
            if entropy.find(line):
                hits += 1
                confirmed = _confirmed(line)
                false += not confirmed
                if args.show:
                    print(f"   {'' if confirmed else 'FALSE '}{source}: {line.strip()[:140]}")
        rate = false / total * 10_000 if total else 0.0
        print(f"{label:12s} {total:8d} lines  {hits:4d} hit, {hits - false} of them secret-shaped "
              f"literals the other rules confirm: {rate:.2f} false positives per 10,000 lines")
        ok = ok and rate <= 1.0
    print(f"catches      {_catch_rate(random.Random(1)) * 100:5.1f}% of random credentials after "
          "names no other rule knows")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
