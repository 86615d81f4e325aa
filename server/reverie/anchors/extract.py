"""Find what a fact depends on, resolved against the workspace.

Precision first: an anchor that later goes missing retires the fact, so a word becomes one only
when the tree (or its git history) confirms it:

- a path: a code span or path-shaped word (a slash, or a known file extension) that exists, or
  that git history shows existed on this branch; a plain word only when it names an existing file
  in a code span;
- a symbol: an identifier in code form (a code span, ``name()``, camelCase, snake_case) that
  occurs in the project's source files (a bare PascalCase word only where it is defined or
  imported);
- a command (a code span that runs something): the package.json script, make / just target,
  pyproject script or compose service it runs, the tool's dependency, else the binary;
- a dependency a manifest declares, named in the text (``@tanstack/react-query``, ``structlog``);
- a config key (``server.port: 5173``) found in a config file the fact names;
- the lockfile of the package manager a rule picks ("Use pnpm" -> ``pnpm-lock.yaml``).

What the fact says is no longer used (``never npm``, ``instead of SWR``, the old side of a
rename, a quoted error message) is never an anchor.
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from reverie.anchors import manifests as mf
from reverie.anchors.model import Anchor
from reverie.anchors.symbols import SymbolIndex, is_source
from reverie.anchors.tree import WorkTree

FILE_EXTENSIONS = frozenset("""
ts tsx js jsx mjs cjs mts cts json jsonc json5 md mdx rst txt py pyi toml yaml yml lock go mod sum
rs java kt kts scala rb php c h cc cpp hpp cs swift m sql sh bash zsh ps1 cfg ini conf env html htm
css scss sass less vue svelte astro graphql gql proto tf hcl xml gradle properties dockerfile
ipynb r jl ex exs erl hs ml lua dart zig nim sol prisma csv tsv
""".split())
#: a fact longer than this (a pasted log) is read for anchors only this far
MAX_FACT_CHARS = 4_000
MAX_TOKENS = 400
_NEGATION = re.compile(
    r"\b(?:never|not|no|don'?t|do not|does not|doesn'?t|avoid|instead of|rather than|no longer|"
    r"without|formerly|stop using|stopped using|drop|dropped|dropping|unwanted|stray|remove|"
    r"removed|delete|deleted|away from|move off|moved off|old|legacy|deprecated)\b"
    r"[^;.,()]{0,40}$", re.IGNORECASE)
_RENAME_OLD = re.compile(
    r"(?P<old>`[^`]+`|\S+)\s+(?:(?:was|were|is|has been|got|have been)\s+)?"
    r"(?:renamed|moved|migrated|replaced)\s+(?:to|into|by|with)\b", re.IGNORECASE)
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_QUOTED = re.compile(r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”")
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*$")
_DOTTED = re.compile(r"^[A-Za-z_$][\w$-]*(?:\.[A-Za-z_$][\w$-]*)+$")
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z_][\w.-]*)\s*[:=]\s*(?P<value>.+?)\s*,?$")
_UPPER_SNAKE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://|^www\.|^mailto:", re.IGNORECASE)
_WORD_STRIP = "()[]{}<>,;:!?\"'“”‘’*_"
_MANAGERS = ("pnpm", "yarn", "npm", "bun", "uv", "poetry", "pipenv")
_JS_RUNNERS = frozenset({"pnpm", "npm", "yarn", "bun"})
_JS_BUILTINS = frozenset("""
install i add remove rm uninstall update up upgrade ci init publish create why outdated audit link
pack prune rebuild config store list ls login logout version exec dlx x import setup env cache
""".split())
_PY_RUNNERS = frozenset({"uv", "poetry", "pipenv", "hatch", "pdm", "rye"})
_NOT_BINARIES = frozenset("""
cd echo export set unset source cat ls rm cp mv mkdir touch grep rg sed awk head tail less more
find xargs sudo env true false test exit which type time sleep kill chmod chown printf read eval
then else fi do done for while if
""".split())
_COMMON_WORDS = frozenset("""
the and for with from that this into then when what which your their about after again also always
build test tests lint run runs dev start serve server client api app core main utils util common
config data docs doc site page pages file files code type types error errors fix log logs logger
logging debug request requests date time path paths make task tasks job jobs queue cache store
model models view views user users auth admin test_utils react next node python go rust ruby java
""".split())


@dataclass
class _Token:
    text: str
    start: int
    code: bool  # inside a code span


@dataclass
class _Draft:
    """One fact's candidates before the tree confirms them."""

    text: str
    anchors: list[Anchor] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)  # path-shaped, found nowhere
    symbols: list[tuple[str, bool]] = field(default_factory=list)  # (name, strict)


class Extractor:
    """Extracts anchors for many facts against one work tree (symbol lookups are batched: one
    pass over the source files for all facts)."""

    def __init__(self, tree: WorkTree, symbols: SymbolIndex | None = None) -> None:
        self.tree = tree
        self.symbols = symbols or SymbolIndex(tree)
        self._past: dict[tuple[str, str], set[str]] = {}
        #: per text of the last ``extract_many``: path-shaped words that resolved nowhere
        self.unresolved: list[list[str]] = []

    def _defined(self, rel: str, reader: Callable[[str], set[str]], name: str,
                 kind: str) -> bool:
        """``name`` is defined in ``rel`` now, or was in a version git history has (it is an
        anchor either way; the check then says whether it still holds)."""
        text = self.tree.read_text(rel)
        if text is not None and name in reader(text):
            return True
        key = (kind, rel)
        if key not in self._past:
            found: set[str] = set()
            for version in self.tree.versions(rel):
                found |= reader(version)
            self._past[key] = found
        return name in self._past[key]

    def extract(self, text: str) -> list[Anchor]:
        return self.extract_many([text])[0]

    def extract_many(self, texts: Sequence[str]) -> list[list[Anchor]]:
        drafts = [self._draft(text) for text in texts]
        self.unresolved = [d.unresolved for d in drafts]
        wanted = {name for d in drafts for name, _ in d.symbols}
        found = self.symbols.locate(wanted) if wanted else {}
        lenient = {name for d in drafts for name, strict in d.symbols
                   if not strict and name not in found}
        past = self.tree.past_occurrences(lenient, is_source) if lenient else {}
        out: list[list[Anchor]] = []
        for draft in drafts:
            anchors = list(draft.anchors)
            for name, strict in draft.symbols:
                where = found.get(name)
                if where is None:
                    if not strict and name in past:  # renamed or removed since
                        anchors.append(Anchor(kind="symbol", value=name, where=past[name]))
                    continue
                if strict and not where.defined:
                    continue
                anchors.append(Anchor(kind="symbol", value=name, where=where.path))
            out.append(_unique(anchors))
        return out

    # --- one fact --------------------------------------------------------------------------
    def _draft(self, text: str) -> _Draft:
        draft = _Draft(text=text)
        if not self.tree.root.is_dir():
            return draft
        masked = _mask_excluded(text[:MAX_FACT_CHARS])
        tokens = list(_tokens(masked))[:MAX_TOKENS]
        negated = {t.start for t in tokens if _is_negated(masked, t.start)}
        kept = [t for t in tokens if t.start not in negated]
        negated_words = {t.text.lower().strip(_WORD_STRIP + "`.") for t in tokens
                         if t.start in negated}
        paths: list[str] = []
        for token in kept:
            if token.code and _looks_like_command(token.text):
                draft.anchors += self._command(token.text)
                continue
            resolved = self._path(token)
            if resolved is None and _path_shaped(_bare(token.text)) and "/" in token.text:
                draft.unresolved.append(_bare(token.text))
            if resolved is not None:
                paths.append(resolved)
                draft.anchors.append(Anchor(kind="path", value=resolved))
                continue
        config_files = [p for p in paths if _is_config_file(p)]
        claimed: set[str] = set()
        for index, token in enumerate(kept):
            candidates = _config_candidates(token)
            if candidates and not token.code and index + 1 < len(kept):
                value = _bare(kept[index + 1].text)
                if re.fullmatch(r"[\w.-]+", value):
                    candidates.insert(0, f"{candidates[0]}={value}")  # PYTHON_VERSION 3.12
            for key in candidates:
                for config in config_files:
                    if self._has_config(config, key):
                        draft.anchors.append(Anchor(kind="config", value=key, where=config))
                        claimed.add(token.text)
                        break
        for token in kept:
            if token.text in claimed:
                continue
            dep = self._dependency(token)
            if dep is not None:
                draft.anchors.append(dep)
                continue
            symbol = _symbol_candidate(token)
            if symbol is not None:
                draft.symbols.append(symbol)
        draft.anchors += self._lockfiles(masked, negated_words)
        return draft

    def _path(self, token: _Token) -> str | None:
        raw = _bare(token.text) if not token.code else token.text.strip()
        raw = raw.removeprefix("./")
        if not raw or _URL.match(raw) or raw.startswith(("..", "/", "~", "-", "@", "$")) or \
                " " in raw or raw in (".", "*"):
            return None
        shaped = _path_shaped(raw)
        if not shaped and not token.code:
            return None
        if not shaped and not re.fullmatch(r"[\w.-]+", raw):
            return None
        candidate = raw.rstrip("/")
        if "*" in candidate:
            if not shaped:
                return None
            folder = candidate.split("*", 1)[0].rstrip("/")
            if self._glob_matches(candidate) or (
                    folder and self.tree.state(folder) == "missing" and self.tree.is_git
                    and self.tree.path_removal(folder).removal is not None):
                return candidate
            return None
        state = self.tree.state(candidate)
        if state in ("file", "dir"):
            return candidate
        if state in ("loop", "unreadable", "special"):
            return candidate  # it is there; the check will say it cannot be read
        if not shaped:
            return None
        if "/" not in candidate or not self.tree.state(candidate.split("/", 1)[0]) == "dir":
            matches = self.tree.find_suffix(candidate)
            if len(matches) == 1:
                return matches[0]
            if not matches:  # ``tax.py`` for a ``billing/tax.py`` deleted since
                gone = self.tree.deleted_with_suffix(candidate)
                if len(gone) == 1:
                    return gone[0]
        if self.tree.ignored(candidate):
            return None  # a generated or ignored path that is not there: nothing to check
        answer = self.tree.path_removal(candidate)
        return candidate if answer.removal is not None else None

    def _glob_matches(self, pattern: str) -> bool:
        from fnmatch import fnmatchcase

        return any(fnmatchcase(p, pattern) for p in self.tree.files())

    def _has_config(self, config: str, key: str) -> bool:
        text = self.tree.read_text(config)
        if text is not None and mf.config_present(config, text, key):
            return True
        return any(mf.config_present(config, v, key) for v in self.tree.versions(config))

    def _dependency(self, token: _Token) -> Anchor | None:
        word = _bare(token.text).strip("`")
        if not word or len(word) < 3 or not re.fullmatch(r"@?[A-Za-z0-9][\w.@/\[\]-]*", word):
            return None
        name = mf.normalise_dep(word)
        if not token.code and (name in _COMMON_WORDS or (word.islower() and len(word) < 4)):
            return None
        return self._declared(name)

    def _declared(self, name: str) -> Anchor | None:
        for past in (False, True):
            for manifest in mf.DEP_MANIFESTS:
                declared = self._deps(manifest, past)
                if name in declared:
                    return Anchor(kind="dep", value=name, where=manifest)
                if manifest == "go.mod":
                    for module in declared:
                        if module.rsplit("/", 1)[-1] == name:
                            return Anchor(kind="dep", value=module, where=manifest)
        return None

    def _deps(self, manifest: str, past: bool) -> set[str]:
        key = ("dep-past" if past else "dep", manifest)
        if key not in self._past:
            found: set[str] = set()
            if past:
                for version in self.tree.versions(manifest):
                    found |= mf.dependencies(manifest, version)
            else:
                text = self.tree.read_text(manifest)
                found = mf.dependencies(manifest, text) if text is not None else set()
            self._past[key] = found
        return self._past[key]

    def _lockfiles(self, text: str, negated: set[str]) -> list[Anchor]:
        out: list[Anchor] = []
        for manager in _MANAGERS:
            if manager in negated:
                continue
            if not re.search(rf"(?<![\w-]){manager}(?![\w-])", text, re.IGNORECASE):
                continue
            for lockfile in mf.LOCKFILES[manager]:
                if self.tree.state(lockfile) == "file" or (
                        self.tree.is_git and self.tree.path_removal(lockfile).removal):
                    out.append(Anchor(kind="path", value=lockfile))
        return out

    # --- commands ----------------------------------------------------------------------------
    def _command(self, line: str) -> list[Anchor]:
        out: list[Anchor] = []
        for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line):
            try:
                words = shlex.split(part)
            except ValueError:
                words = part.split()
            while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):
                words = words[1:]  # FOO=1 make test
            if words:
                out += self._simple_command(words, depth=0)
        return out

    def _simple_command(self, words: list[str], depth: int) -> list[Anchor]:
        program, args = words[0], words[1:]
        plain = [a for a in args if not a.startswith("-")]
        if depth > 2:
            return []
        if program in _JS_RUNNERS:
            return self._js_command(program, args, plain)
        if program in ("npx", "bunx"):
            return self._tool(plain[0], []) if plain else []
        if program in ("make", "just"):
            return self._targets(program, args)
        if program in _PY_RUNNERS:
            if plain and plain[0] == "run" and len(plain) > 1:
                rest = args[args.index("run") + 1:]
                while rest and rest[0].startswith("-"):
                    rest = rest[1:]
                return self._simple_command(rest, depth + 1) if rest else []
            if plain and plain[0] == "add" and len(plain) > 1:
                found = self._declared(mf.normalise_dep(plain[1]))
                return [found] if found else []
            return self._binary(program)
        if program in ("python", "python3", "py") and len(args) >= 2 and args[0] == "-m":
            return self._simple_command(args[1:], depth + 1)
        if program in ("docker", "docker-compose", "podman"):
            return self._compose(program, args)
        return self._tool(program, plain)

    def _js_command(self, program: str, args: list[str], plain: list[str]) -> list[Anchor]:
        manifest = mf.PACKAGE_JSON
        for flag in ("-C", "--dir", "--prefix", "--cwd"):
            if flag in args and args.index(flag) + 1 < len(args):
                manifest = f"{args[args.index(flag) + 1].strip('/')}/{mf.PACKAGE_JSON}"
        if not plain:
            return []
        first = plain[0]
        if first in ("exec", "dlx", "x") and len(plain) > 1:
            return self._tool(plain[1], [])
        if first in ("add", "install", "i") and len(plain) > 1:
            found = self._declared(mf.normalise_dep(plain[1]))
            return [found] if found else []
        script = plain[1] if first == "run" and len(plain) > 1 else first
        if first != "run" and script in _JS_BUILTINS:
            return []
        if self._defined(manifest, mf.package_scripts, script, "script"):
            return [Anchor(kind="script", value=script, where=manifest)]
        return []

    def _targets(self, program: str, args: list[str]) -> list[Anchor]:
        names = mf.MAKEFILES if program == "make" else mf.JUSTFILES
        folder = ""
        explicit = None
        rest: list[str] = []
        skip = False
        for index, arg in enumerate(args):
            if skip:
                skip = False
                continue
            if arg in ("-C", "--directory", "-d", "--working-directory") and index + 1 < len(args):
                folder, skip = args[index + 1].strip("/") + "/", True
            elif arg in ("-f", "--file", "--justfile") and index + 1 < len(args):
                explicit, skip = args[index + 1], True
            elif not arg.startswith("-") and "=" not in arg:
                rest.append(arg)
        candidates = [explicit] if explicit else [folder + n for n in names]
        reader = mf.make_targets if program == "make" else mf.just_recipes
        for candidate in candidates:
            if self.tree.read_text(candidate) is None and not self.tree.versions(candidate):
                continue
            return [Anchor(kind="target", value=t, where=candidate) for t in rest[:3]
                    if self._defined(candidate, reader, t, "target")]
        return []

    def _compose(self, program: str, args: list[str]) -> list[Anchor]:
        rest = args[1:] if program != "docker-compose" and args[:1] == ["compose"] else (
            args if program == "docker-compose" else [])
        if not rest:
            return self._binary(program)
        services = [a for a in rest[1:] if not a.startswith("-")]
        for name in mf.COMPOSE_FILES:
            if self.tree.read_text(name) is None and not self.tree.versions(name):
                continue
            return [Anchor(kind="target", value=s, where=name) for s in services
                    if self._defined(name, mf.compose_services, s, "service")]
        return []

    def _tool(self, program: str, args: list[str]) -> list[Anchor]:
        out: list[Anchor] = []
        program_path = program.removeprefix("./")
        if "/" in program_path or program.startswith("./"):
            state = self.tree.state(program_path)
            return [Anchor(kind="path", value=program_path)] if state == "file" else []
        if self._defined(mf.PYPROJECT, mf.pyproject_scripts, program, "script"):
            out.append(Anchor(kind="script", value=program, where=mf.PYPROJECT))
        else:
            declared = self._declared(mf.normalise_dep(_TOOL_PACKAGES.get(program, program)))
            out += [declared] if declared else self._binary(program)
        for arg in args[:6]:
            clean = arg.strip("'\"").removeprefix("./").rstrip("/")
            if not clean or clean in (".", "..") or "=" in clean or \
                    clean.startswith(("/", "~", "$")) or ".." in clean.split("/"):
                continue
            if self.tree.state(clean) in ("file", "dir") or (
                    self.tree.is_git and self.tree.state(clean) == "missing"
                    and self.tree.path_removal(clean).removal is not None):
                out.append(Anchor(kind="path", value=clean))
        return out

    def _binary(self, program: str) -> list[Anchor]:
        if program in _NOT_BINARIES or not re.fullmatch(r"[A-Za-z][\w.+-]*", program):
            return []
        return [Anchor(kind="bin", value=program)]


#: programs whose package has another name
_TOOL_PACKAGES = {"tsc": "typescript", "golangci-lint": "golangci-lint", "pytest": "pytest",
                  "py.test": "pytest"}


def find_binary(tree: WorkTree, program: str) -> str | None:
    """Where ``program`` runs from: the workspace's own tool folders, then PATH."""
    for folder in ("node_modules/.bin", ".venv/bin", "venv/bin", ".venv/Scripts", "bin"):
        if tree.state(f"{folder}/{program}") == "file":
            return f"{folder}/{program}"
    return shutil.which(program)


def path_words(text: str) -> list[str]:
    """Path-shaped words of a fact (with a slash), whatever the tree says: for a reason when
    none of them could be resolved."""
    masked = _mask_excluded(text)
    return [_bare(t.text) for t in _tokens(masked) if "/" in t.text and
            not _URL.match(_bare(t.text)) and _path_shaped(_bare(t.text))
            and not _is_negated(masked, t.start)]


def _bare(word: str) -> str:
    """A prose word without the punctuation around it (``(src/a.ts).`` -> ``src/a.ts``); a
    leading dot stays (``.gitignore``)."""
    return word.lstrip(_WORD_STRIP).rstrip(_WORD_STRIP + ".")


def _unique(anchors: Iterable[Anchor]) -> list[Anchor]:
    seen: dict[tuple[str, str], Anchor] = {}
    for anchor in anchors:
        seen.setdefault((anchor.kind, anchor.value), anchor)
    return list(seen.values())


def _mask_excluded(text: str) -> str:
    """Blank out what is not a dependency: quoted messages, the old side of a rename, and a
    "formerly" remark (same length, so positions stay put)."""
    def blank(match: re.Match[str]) -> str:
        return " " * len(match.group(0))

    out = _QUOTED.sub(blank, _outside_code(text))
    out = re.sub(r"\(formerly[^)]*\)", blank, out, flags=re.IGNORECASE)
    chars = list(out)
    for match in _RENAME_OLD.finditer(out):
        for index in range(match.start("old"), match.end("old")):
            chars[index] = " "
    for match in re.finditer(r"\b(?:renamed|moved|switched|migrated)\s+from\s+(`[^`]+`|\S+)",
                             out, re.IGNORECASE):
        for index in range(match.start(1), match.end(1)):
            chars[index] = " "
    return "".join(chars)


def _outside_code(text: str) -> str:
    """Double quotes inside code spans (``-m "..."``) are code, not a quoted message: protect
    them from the quote mask by swapping them for a placeholder of the same length."""
    return _CODE_SPAN.sub(lambda m: m.group(0).replace('"', "\x01"), text)


def _tokens(text: str) -> Iterable[_Token]:
    spans = list(_CODE_SPAN.finditer(text))
    for match in spans:
        yield _Token(match.group(1).replace("\x01", '"'), match.start(), code=True)
    covered = [(m.start(), m.end()) for m in spans]
    for match in re.finditer(r"\S+", text):
        if any(start <= match.start() < end for start, end in covered):
            continue
        word = match.group(0)
        if word.strip(_WORD_STRIP + ".`"):
            yield _Token(word, match.start(), code=False)


def _is_negated(text: str, start: int) -> bool:
    before = text[max(0, start - 60):start]
    return _NEGATION.search(before) is not None


def _looks_like_command(span: str) -> bool:
    words = span.split()
    if len(words) < 2:
        return False
    first = words[0]
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", first):
        return True
    if not re.fullmatch(r"(?:\./)?[a-z][\w./+-]*", first) or first.endswith((":", ",")):
        return False
    return not _KEY_VALUE.match(span)


def _path_shaped(raw: str) -> bool:
    if "/" in raw.strip("/") or raw.endswith("/"):
        parts = [p for p in raw.split("/") if p]
        return bool(parts) and all(re.fullmatch(r"[\w.*@+-]+", p) for p in parts) and \
            not raw.startswith("@") and not re.fullmatch(r"\d+(/\d+)+", raw)
    name = raw.rsplit("/", 1)[-1]
    if "." not in name.strip("."):
        return name.startswith(".") and len(name) > 2 and name[1:].isidentifier()  # .gitignore
    stem, _, ext = name.rpartition(".")
    if ext.lower() not in FILE_EXTENSIONS or not stem:
        return False
    return not stem[:1].isupper() or stem.isupper() or "_" in stem or "-" in stem or \
        stem in ("README", "CHANGELOG", "LICENSE", "CONTRIBUTING", "Makefile", "Dockerfile")


def _is_config_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith((*mf.STRUCTURED_SUFFIXES, ".ini", ".cfg", ".env")) or \
        ".config." in name or name.endswith("rc") or name.startswith(".env")


def _config_candidates(token: _Token) -> list[str]:
    text = token.text.strip()
    if not token.code:
        word = _bare(text)
        return [word] if _UPPER_SNAKE.match(word) else []
    match = _KEY_VALUE.match(text)
    if match:
        key, value = match["key"], match["value"].strip()
        literal = re.fullmatch(r"""-?\d+(?:\.\d+)?|true|false|'[^']*'|"[^"]*\"""", value)
        return [f"{key}={value.strip(chr(39) + chr(34))}" if literal else key]
    if _DOTTED.match(text) or _IDENT.match(text) or _UPPER_SNAKE.match(text):
        return [text]
    return []


def _symbol_candidate(token: _Token) -> tuple[str, bool] | None:
    """(name, strict): strict names count only where they are defined or imported."""
    raw = token.text.strip()
    if not token.code:
        raw = _bare(raw)
    call = raw.endswith("()")
    raw = raw.removesuffix("()")
    if "." in raw and _DOTTED.match(raw):
        raw = raw.rsplit(".", 1)[-1]
    if not _IDENT.match(raw) or len(raw) < 3:
        return None
    if _UPPER_SNAKE.match(raw):
        return (raw, False) if len(raw) >= 5 else None  # ROUND_HALF_UP, MAX_RETRIES
    camel = re.search(r"[a-z][A-Z]", raw) is not None
    snake = "_" in raw.strip("_")
    if token.code or call:
        if raw.islower() and not snake and not call:
            return (raw, True)  # `worker`: only where it is defined
        return (raw, False)
    if camel and raw[0].islower():
        return (raw, False)
    if snake and raw.islower():
        return (raw, False)
    if camel and raw[0].isupper() and len(re.findall(r"[A-Z]", raw)) >= 2:
        return (raw, True)  # QueryClientProvider, not TanStack in a comment
    return None


__all__ = ["Extractor", "find_binary", "is_source"]
