"""Where symbols occur: a bounded text scan of the project's source files.

Why a text scan and not a parser (docs/architecture.md, "Anchors"): the question a check asks is
"does `applyDiscount` still occur in the code", and a word-bounded scan answers it for every
language at once, with no grammar to ship; it can only err towards "still there" (a stale name
left in a comment keeps a fact valid), never towards retiring a true fact. Definitions are told
apart from mentions with a few language-neutral patterns (``def``, ``function``, ``class``,
``const x =``, ``func``, ``fn``, imports), used where a name is ambiguous (a bare PascalCase word).
All names wanted by one check are looked for in one pass over the files: one compiled
alternation, each file read once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from reverie.anchors.tree import GENERATED_DIRS, WorkTree

SOURCE_EXTENSIONS = frozenset("""
ts tsx js jsx mjs cjs mts cts py pyi go rs java kt kts scala rb php c h cc cpp hpp cs swift m
vue svelte astro sql graphql gql proto ex exs erl hs ml lua dart zig sol prisma sh bash zsh
""".split())
_NAMES_PER_PATTERN = 400


def is_source(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[1].lower() in SOURCE_EXTENSIONS


def definition_pattern(name: str) -> re.Pattern[str]:
    """Where ``name`` is defined: ``def``/``function``/``class``/``const x =``/``func``..."""
    n = re.escape(name)
    return re.compile(
        rf"(?:\b(?:def|class|function|func|fn|type|interface|struct|enum|trait|const|let|var|"
        rf"val|module|object|record|macro)\s+(?:\([^)]*\)\s*)?\*?{n}(?![\w$])"
        rf"|(?<![\w$.]){n}\s*(?::\s*[^=\n]{{1,80}})?=\s*(?:async\b|function\b|\(|\w+\s*=>)"
        rf"|^\s*{n}\s*[:=]"
        rf"|\b(?:public|private|protected|static|async)\s+[\w<>\[\], ]*(?<![\w$]){n}\s*\()",
        re.MULTILINE)


def import_pattern(name: str) -> re.Pattern[str]:
    """Where ``name`` is imported or re-exported (it exists, defined elsewhere)."""
    n = re.escape(name)
    return re.compile(rf"\bimport\b[^\n;]*(?<![\w$]){n}(?![\w$])"
                      rf"|\bexport\s*\{{[^}}]*(?<![\w$]){n}(?![\w$])")


@dataclass(frozen=True)
class Location:
    path: str
    defined: bool


class SymbolIndex:
    """Finds files where names occur, for one work tree (results cached)."""

    def __init__(self, tree: WorkTree) -> None:
        self.tree = tree
        self._cache: dict[str, Location | None] = {}

    def occurs_in(self, name: str, path: str) -> bool:
        text = self.tree.read_text(path)
        return text is not None and _word(name).search(text) is not None

    def present(self, names: Iterable[str], near: Iterable[str] = ()) -> dict[str, str]:
        """For each name that occurs in a source file: one such file. The files next to
        ``near`` (where the names were last seen) are read first, and the whole tree is listed
        and read only for the names not found there: a moved symbol is usually next door.
        (``locate`` tells where a name is defined; the check only asks whether it occurs.)"""
        wanted = set(names)
        out = {n: loc.path for n in wanted if (loc := self._cache.get(n)) is not None}
        wanted -= set(out) | {n for n in wanted if n in self._cache}  # known absent
        if wanted:
            folders = dict.fromkeys(p.rsplit("/", 1)[0] if "/" in p else "" for p in near)
            files = [f for folder in folders for f in self._listed(folder)]
            hits = _occurrences(self.tree, sorted(wanted), files)
            out.update(hits)
            wanted -= set(hits)
        if wanted:
            out.update({n: loc.path for n, loc in self.locate(wanted).items()})
        return out

    def _listed(self, folder: str) -> list[str]:
        """The source files directly in ``folder``, as the tree's walk would list them: not
        in a generated or dot folder, not through a symlinked folder, no symlinked file."""
        parts = folder.split("/") if folder else []
        if any(p in GENERATED_DIRS or p.startswith(".") or p in ("", "..") for p in parts):
            return []
        real_root = os.path.realpath(self.tree.root)
        path = os.path.join(real_root, folder) if folder else real_root
        if os.path.realpath(path) != path:
            return []
        prefix = f"{folder}/" if folder else ""
        try:
            with os.scandir(path) as entries:
                return sorted(prefix + e.name for e in entries
                              if e.is_file(follow_symlinks=False) and is_source(e.name))
        except OSError:
            return []

    def locate(self, names: Iterable[str], near: Iterable[str] = ()) -> dict[str, Location]:
        """For each name that occurs in a source file: where (a file defining it preferred).
        Files in the folders of ``near`` (where the names were last seen) are read first: a
        moved symbol is usually next door, and the scan stops once every name is defined."""
        names = list(names)
        wanted = sorted({n for n in names if n not in self._cache})
        if wanted:
            files = self.tree.files()
            folders = {p.rsplit("/", 1)[0] for p in near if "/" in p}
            if folders:
                files = sorted(files, key=lambda p: p.rsplit("/", 1)[0] not in folders)
            found: dict[str, Location] = {}
            for start in range(0, len(wanted), _NAMES_PER_PATTERN):
                chunk = wanted[start:start + _NAMES_PER_PATTERN]
                found.update(self._scan(chunk, files))
            for name in wanted:
                self._cache[name] = found.get(name)
        return {n: loc for n in names if (loc := self._cache.get(n)) is not None}

    def _scan(self, names: list[str], files: list[str]) -> dict[str, Location]:
        alternation = re.compile(
            r"(?<![\w$])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
            + r")(?![\w$])")
        first: dict[str, str] = {}
        imported: dict[str, str] = {}
        defined: dict[str, str] = {}
        remaining = set(names)
        for path in files:
            if not remaining:
                break
            if not is_source(path):
                continue
            text = self.tree.read_text(path)
            if text is None:
                continue
            hits = set(alternation.findall(text)) & remaining
            for name in hits:
                first.setdefault(name, path)
                if definition_pattern(name).search(text):
                    defined[name] = path
                    remaining.discard(name)  # found where it is defined: look no further
                elif name not in imported and import_pattern(name).search(text):
                    imported[name] = path
        out = {name: Location(path, False) for name, path in first.items()}
        out.update({name: Location(path, True) for name, path in imported.items()})
        out.update({name: Location(path, True) for name, path in defined.items()})
        return out


def _occurrences(tree: WorkTree, names: list[str], files: list[str]) -> dict[str, str]:
    """Name -> the first of ``files`` it occurs in (one alternation, each file read once)."""
    if not names or not files:
        return {}
    alternation = re.compile(
        r"(?<![\w$])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
        + r")(?![\w$])")
    found: dict[str, str] = {}
    for path in files:
        text = tree.read_text(path)
        if text is None:
            continue
        for name in set(alternation.findall(text)):
            found.setdefault(name, path)
        if len(found) == len(names):
            break
    return found


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
