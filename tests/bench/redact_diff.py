"""Differential check: the redactor of another commit and this tree's, over the same texts.

A speed change to ``reverie.redact`` must not change what it redacts. This loads the package as
it was at ``--base`` (``git show``, into a temporary folder under another name, so both run in
one process) and runs both over:

- the bench corpus of ``tests/bench/redact.py`` (every string, one call each, and each whole
  JSONL file), same seed and size;
- every file under ``tests/fixtures`` (and the folders given as arguments): each whole file,
  each of its lines, and for JSON / JSONL every string inside (keys and values), and
  ``redact_value`` of each JSON record (a string judged with its key);
- the pathological 1 MB lines of ``tests/support/secrets.py``.

Every text whose output (clean text, count) differs is counted and the first ones shown; exit 1
when there is any. Run: ``.venv/bin/python tests/bench/redact_diff.py [--base REV] [DIR ...]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

if __name__ == "__main__" and not __package__:
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench import redact as bench
from reverie.redact import redact, redact_value
from support.secrets import pathological_lines

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "server/reverie/redact"
_ALIAS = "_redact_at_base"


def load_base(rev: str, into: Path) -> ModuleType:
    """``reverie.redact`` as it was at ``rev``, importable as ``_redact_at_base``."""
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{rev}:{PACKAGE}"], cwd=ROOT, check=True,
        capture_output=True, text=True).stdout.split()
    package = into / _ALIAS
    package.mkdir()
    for name in names:
        if not name.endswith(".py"):
            continue
        source = subprocess.run(["git", "show", f"{rev}:{PACKAGE}/{name}"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout
        (package / name).write_text(source.replace("reverie.redact", _ALIAS), encoding="utf-8")
    sys.path.insert(0, str(into))
    return importlib.import_module(_ALIAS)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _file_texts(path: Path) -> Iterator[tuple[str, object]]:
    """("text", str) for the file, each line and each JSON string; ("value", obj) per record."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return
    yield "text", text
    lines = text.splitlines()
    for line in lines:
        yield "text", line
    if path.suffix not in (".json", ".jsonl"):
        return
    records: list[object] = []
    try:
        records.append(json.loads(text))
    except ValueError:
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    for record in records:
        for string in _strings(record):
            yield "text", string
        yield "value", record


def corpus(dirs: list[Path], mb: float, seed: int) -> Iterator[tuple[str, str, object]]:
    """(where, "text" or "value", the input) for everything the check runs."""
    rng = random.Random(seed)
    real = bench._fixture_texts()
    sessions = [bench.generate_session(rng, real, 2_000_000) for _ in range(int(mb / 2) or 1)]
    for records in sessions:
        yield "bench file", "text", "\n".join(json.dumps(r) for r in records) + "\n"
        for record in records:
            for string in bench._strings_in(record["message"]):
                yield "bench string", "text", string
    for folder in dirs:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                for kind, item in _file_texts(path):
                    yield str(path), kind, item
    for name, line in pathological_lines(1_000_000).items():
        yield f"pathological {name}", "text", line


def compare(base: ModuleType, items: Iterator[tuple[str, str, object]], show: int) -> int:
    old_text: Callable[[str], tuple[str, int]] = base.redact
    old_value: Callable[[object], tuple[object, int]] = base.redact_value
    checked = differ = chars = 0
    for where, kind, item in items:
        checked += 1
        if kind == "text":
            assert isinstance(item, str)
            chars += len(item)
            old, new = old_text(item), redact(item)
        else:
            old, new = old_value(item), redact_value(item)
        if old != new:
            differ += 1
            if differ <= show:
                print(f"DIFF {where} ({kind}):\n  input {str(item)[:300]!r}\n"
                      f"  base  {str(old)[:300]!r}\n  now   {str(new)[:300]!r}")
    print(f"{checked} inputs ({chars / 1e6:.1f} MB of text), {differ} with a different output")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="*", type=Path, help="more folders of fixtures")
    parser.add_argument("--base", default="HEAD", help="the commit to compare with")
    parser.add_argument("--mb", type=float, default=4.0, help="bench corpus size in MB")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--show", type=int, default=10, help="differences to print")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = load_base(args.base, Path(tmp))
        dirs = [ROOT / "tests" / "fixtures", *args.dirs]
        differ = compare(base, corpus(dirs, args.mb, args.seed), args.show)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
