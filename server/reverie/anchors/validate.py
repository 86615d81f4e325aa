"""Check anchors against the working tree, offline.

``stale`` only when the tree and its git history establish it: the file is gone (and git says
where: deleted or renamed in which commit, or not committed yet), the symbol occurs nowhere and
history shows it was removed, the script / target / dependency / key is no longer in its
manifest and history shows when it left. Everything the check cannot establish — no git, a
shallow clone, a branch that never had it, an unreadable file, a symlink loop, a manifest that
does not parse, a tool not installed on this machine, an ignored or generated folder — is
``unverifiable`` with the reason, never ``stale``.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence

from reverie.anchors import manifests as mf
from reverie.anchors.cache import CheckCache, FileSig, anchor_key
from reverie.anchors.extract import find_binary
from reverie.anchors.model import Anchor, AnchorCheck
from reverie.anchors.symbols import SymbolIndex
from reverie.anchors.tree import HistoryAnswer, Removal, WorkTree

#: anchors whose valid verdict rests on the content of one file (cached with its signature)
_FILE_KINDS = frozenset({"symbol", "script", "target", "dep", "config"})


class Validator:
    """Checks anchors of many facts against one work tree (symbol scans batched). ``cache``:
    what earlier checks established (``anchors.cache``): an anchor found valid before whose
    file did not change since is valid again without reading it."""

    def __init__(self, tree: WorkTree, symbols: SymbolIndex | None = None,
                 cache: CheckCache | None = None) -> None:
        self.tree = tree
        self.symbols = symbols or SymbolIndex(tree)
        self.cache = cache if cache is not None else CheckCache(None, tree.root)
        self._paths: dict[str, AnchorCheck] = {}
        self._parsed: dict[tuple[str, str, str], set[str]] = {}
        self._head: str | None = None

    def check_many(self, groups: Sequence[Sequence[Anchor]]) -> list[list[AnchorCheck]]:
        if not self.tree.root.is_dir():
            return [[AnchorCheck(anchor=a, status="unverifiable",
                                 reason="the workspace folder does not exist") for a in group]
                    for group in groups]
        unique = dict.fromkeys(a for group in groups for a in group if a.kind in _FILE_KINDS)
        held = {a for a in unique if self.cache.holds(a)}
        # symbols not where they were recorded are looked for elsewhere in one pass
        moved = {a.value for a in unique if a.kind == "symbol" and a not in held
                 and not (a.where and self.symbols.occurs_in(a.value, a.where))}
        near = [a.where for a in unique if a.kind == "symbol" and a.value in moved and a.where]
        found = self.symbols.present(moved, near=near) if moved else {}
        out = [[AnchorCheck(anchor=a, status="valid") if a in held else self._check(a, found)
                for a in group] for group in groups]
        for checks in out:
            for check in checks:
                anchor = check.anchor
                if check.status == "valid" and anchor in unique and anchor not in held:
                    deps = self._deps(anchor, found)
                    if deps:
                        self.cache.remember(anchor, deps)
                    held.add(anchor)
        return out

    def _deps(self, anchor: Anchor, found: Mapping[str, str]) -> dict[str, FileSig] | None:
        """The file a valid verdict read, with its signature then."""
        rel = anchor.where
        if anchor.kind == "symbol" and not (rel and self.symbols.occurs_in(anchor.value, rel)):
            rel = found.get(anchor.value)
        sig = self.tree.signature(rel) if rel else None
        return {rel: sig} if rel and sig else None

    # --- history, reused from earlier checks at the same HEAD ------------------------------
    @property
    def head(self) -> str:
        if self._head is None:
            self._head = self.tree.head_id
        return self._head

    def _path_history(self, rel: str) -> HistoryAnswer:
        key = "path " + rel
        hit = self.cache.removal(self.head, key)
        if hit is not None:
            return HistoryAnswer(Removal(commit=hit[0], renamed_to=hit[1]))
        answer = self.tree.path_removal(rel)
        if answer.removal and answer.removal.commit:  # "not committed yet" reads the index
            self.cache.remember_removal(self.head, key, answer.removal.commit,
                                        answer.removal.renamed_to)
        return answer

    def _content_history(self, anchor: Anchor, where: str,
                         present: Callable[[str], bool]) -> HistoryAnswer:
        key = "content " + anchor_key(anchor)
        hit = self.cache.removal(self.head, key)
        if hit is not None:
            return HistoryAnswer(Removal(commit=hit[0]))
        answer = self.tree.content_removal(where, present)
        if answer.removal:
            self.cache.remember_removal(self.head, key, answer.removal.commit, None)
        return answer

    def _check(self, anchor: Anchor, found: Mapping[str, str]) -> AnchorCheck:
        if anchor.kind == "path":
            return self._path(anchor)
        if anchor.kind == "symbol":
            return self._symbol(anchor, found)
        if anchor.kind == "bin":
            if find_binary(self.tree, anchor.value):
                return AnchorCheck(anchor=anchor, status="valid")
            return _unknown(anchor, f"`{anchor.value}` is not installed here (not on PATH)")
        return self._defined(anchor)

    # --- paths -----------------------------------------------------------------------------
    def _path(self, anchor: Anchor) -> AnchorCheck:
        cached = self._paths.get(anchor.value)
        if cached is not None:
            return cached.model_copy(update={"anchor": anchor})
        result = self._path_uncached(anchor)
        self._paths[anchor.value] = result
        return result

    def _path_uncached(self, anchor: Anchor) -> AnchorCheck:
        rel = anchor.value.strip("/")
        if "*" in rel:
            return self._glob(anchor, rel)
        state = self.tree.state(rel)
        if state in ("file", "dir", "special"):
            return AnchorCheck(anchor=anchor, status="valid")
        if state == "loop":
            return _unknown(anchor, f"`{rel}` is a symlink loop")
        if state == "unreadable":
            return _unknown(anchor, f"`{rel}` cannot be read")
        if state == "outside":
            return _unknown(anchor, f"`{rel}` is outside the workspace")
        if self.tree.ignored(rel):
            return _unknown(anchor, f"`{rel}` is in an ignored or generated folder")
        return self._gone(anchor, rel, self._path_history(rel))

    def _gone(self, anchor: Anchor, rel: str, answer: HistoryAnswer) -> AnchorCheck:
        removal = answer.removal
        if removal is None:
            return _unknown(anchor, f"`{rel}` is missing, but {answer.unknown}")
        when = f"in {removal.commit}" if removal.commit else "(not committed yet)"
        if removal.renamed_to:
            reason = f"`{rel}` no longer exists; renamed to `{removal.renamed_to}` {when}"
            if self.tree.state(removal.renamed_to) == "missing":
                reason += " (since moved or deleted too)"
        else:
            reason = f"`{rel}` no longer exists; deleted {when}"
        return AnchorCheck(anchor=anchor, status="stale", reason=reason)

    def _glob(self, anchor: Anchor, pattern: str) -> AnchorCheck:
        from fnmatch import fnmatchcase

        if any(fnmatchcase(p, pattern) for p in self.tree.files()):
            return AnchorCheck(anchor=anchor, status="valid")
        folder = pattern.split("*", 1)[0].rstrip("/").rsplit("/", 1)[0] if "/" in pattern else ""
        if folder and self.tree.state(folder) == "missing" and not self.tree.ignored(folder):
            gone = self._gone(anchor, folder, self._path_history(folder))
            if gone.status == "stale":
                return gone
        return _unknown(anchor, f"nothing matches `{pattern}` now")

    # --- symbols ---------------------------------------------------------------------------
    def _symbol(self, anchor: Anchor, found: Mapping[str, str]) -> AnchorCheck:
        name, where = anchor.value, anchor.where
        if where and self.symbols.occurs_in(name, where):
            return AnchorCheck(anchor=anchor, status="valid")
        if name in found:
            return AnchorCheck(anchor=anchor, status="valid")
        if not where:
            return _unknown(anchor, f"`{name}` is not found in the source files")
        if self.tree.files_truncated:
            return _unknown(anchor, f"`{name}` is not found in the files read, but the "
                                    "workspace has more files than Reverie reads for symbols")
        pattern = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
        answer = self._content_history(anchor, where,
                                       lambda text: pattern.search(text) is not None)
        removal = answer.removal
        if removal is None:
            return _unknown(anchor, f"`{name}` is not found in the source files, but "
                                    f"{answer.unknown}")
        when = f"in {removal.commit}" if removal.commit else "(not committed yet)"
        if self.tree.state(where) == "missing":
            moved = self._path_history(where).removal
            gone = f"{where} was renamed to {moved.renamed_to}" if moved and moved.renamed_to \
                else f"{where} was deleted"
            return AnchorCheck(anchor=anchor, status="stale",
                               reason=f"`{name}` no longer occurs in the workspace ({gone}; "
                                      f"last seen before {when.removeprefix('in ')})")
        return AnchorCheck(anchor=anchor, status="stale",
                           reason=f"`{name}` no longer occurs in the workspace (removed from "
                                  f"{where} {when})")

    # --- scripts, targets, dependencies, config keys ----------------------------------------
    def _defined(self, anchor: Anchor) -> AnchorCheck:
        where = anchor.where
        if not where:
            return _unknown(anchor, "no file recorded for it")
        present = self._predicate(anchor)
        if present is None:
            return _unknown(anchor, f"{where} is not a file Reverie can read for this")
        text = self.tree.read_text(where)
        if text is None:
            state = self.tree.state(where)
            if state == "missing" and not self.tree.ignored(where):
                gone = self._gone(Anchor(kind="path", value=where), where,
                                  self._path_history(where))
                if gone.status == "stale":
                    return AnchorCheck(anchor=anchor, status="stale",
                                       reason=f"{_what(anchor)} is gone: {gone.reason}")
                return _unknown(anchor, gone.reason)
            return _unknown(anchor, f"{where} cannot be read")
        if not _parses(where, text):
            return _unknown(anchor, f"{where} does not parse now")
        if present(text):
            return AnchorCheck(anchor=anchor, status="valid")
        answer = self._content_history(anchor, where, present)
        removal = answer.removal
        if removal is None:
            return _unknown(anchor, f"{_what(anchor)} is not there now, but {answer.unknown}")
        when = f"in {removal.commit}" if removal.commit else "(not committed yet)"
        verb = {"script": "no longer defined", "target": "no longer defined",
                "dep": "no longer a dependency", "config": "no longer set"}[anchor.kind]
        return AnchorCheck(anchor=anchor, status="stale",
                           reason=f"{_what(anchor)} is {verb} in {where} (removed {when})")

    def _predicate(self, anchor: Anchor) -> Callable[[str], bool] | None:
        where = anchor.where or ""
        if anchor.kind == "config":
            return lambda text: mf.config_present(where, text, anchor.value)
        reader = mf.reader_for(anchor.kind, where)
        if reader is None:
            return None
        value, kind, parsed = anchor.value, anchor.kind, self._parsed

        def present(text: str) -> bool:  # each version of a manifest parsed once per check
            key = (kind, where, text)
            names = parsed.get(key)
            if names is None:
                names = parsed[key] = reader(text)
            return value in names

        return present


def _parses(where: str, text: str) -> bool:
    lowered = where.lower()
    try:
        if lowered.endswith("package.json"):
            json.loads(text)
        elif lowered.endswith(".toml") or lowered.endswith("pipfile"):
            tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError):
        return False
    return True


def _what(anchor: Anchor) -> str:
    return {"script": f"script `{anchor.value}`", "target": f"target `{anchor.value}`",
            "dep": f"`{anchor.value}`", "config": f"`{anchor.value.replace('=', ': ', 1)}`",
            }.get(anchor.kind, f"`{anchor.value}`")


def _unknown(anchor: Anchor, reason: str) -> AnchorCheck:
    return AnchorCheck(anchor=anchor, status="unverifiable", reason=reason)
