"""Failure -> fix: open failures keyed by the check's target, resolved by a later pass of the
same or a broader check (or by another command at the same goal), each credited to the change
made after that error's own last occurrence (see ``analyser`` for the whole pass).
"""

from __future__ import annotations

import re
from collections import deque

from reverie.analysis.commands import CommandCategory, CommandInfo
from reverie.analysis.models import Evidence
from reverie.analysis.outcomes import error_summary, mentioned_files
from reverie.analysis.working import AnalyserBase, _Change, _Failure, _Resolved

_CHECKS = frozenset({CommandCategory.TEST, CommandCategory.LINT, CommandCategory.TYPECHECK,
                     CommandCategory.BUILD, CommandCategory.FORMAT})


class FailureTracking(AnalyserBase):
    """The open failures and what resolved them (a mixin of ``SessionAnalyser``)."""

    _open: dict[str, dict[str, _Failure]]
    _open_count: int
    _resolved: deque[_Resolved]
    _changes: int
    _recent_changes: deque[_Change]
    #: one-off failures of commands that are not the project's (``tailscale status``: not
    #: installed): (key, check) of each, dropped when the session goes on and something works
    _probes: list[tuple[str, str]]

    def _fail(self, check: str, key: str, info: CommandInfo | None, category: CommandCategory,
              output: str, evidence: Evidence, *, probe: bool = False) -> None:
        self._count("failures")
        bucket = self._open.setdefault(key, {})
        signature = " ".join(check.split())
        error = error_summary(output, 240)
        error_signature = _error_signature(error)
        existing = bucket.get(signature)
        if existing is not None:
            if existing.signature == error_signature:
                existing.count += 1
                existing.last_at = self._changes
                return
            # the same check now fails differently: the earlier error is gone, and what made
            # it go is among the changes since its last occurrence (none: say nothing of it)
            del bucket[signature]
            self._open_count -= 1
            changed = self._changes - existing.last_at
            fix = self._credit(existing) if changed > 0 else None
            if fix is not None:
                self._keep(_Resolved(existing, "fixed", fix, max(changed - 1, 0), None, None))
        if len(bucket) >= self.limits.open_per_key or self._open_count >= self.limits.open_total:
            self._count("errors_dropped")
            return
        bucket[signature] = _Failure(check, info, category, error, evidence, self._changes,
                                     mentioned_files(output), last_at=self._changes,
                                     signature=error_signature)
        self._open_count += 1
        if probe and len(self._probes) < 64:
            self._probes.append((key, signature))

    def _moved_on(self) -> None:
        """Something worked after one-off probes failed: they were looking around (a tool that
        is not installed, a file only root can read), not errors the session still has."""
        for key, signature in self._probes:
            bucket = self._open.get(key)
            failure = bucket.get(signature) if bucket else None
            if bucket is None or failure is None or failure.count > 1:
                continue
            del bucket[signature]
            self._open_count -= 1
            self._count("probe_failures")
            if not bucket:
                del self._open[key]
        self._probes.clear()

    def _passed(self, key: str, info: CommandInfo | None, command: str,
                evidence: Evidence) -> None:
        bucket = self._open.get(key)
        if not bucket:
            return
        for signature, failure in list(bucket.items()):
            if info is not None and failure.info is not None and not info.covers(failure.info):
                continue
            del bucket[signature]
            self._open_count -= 1
            changed = self._changes - failure.last_at
            fix = self._credit(failure) if changed > 0 else None
            self._keep(_Resolved(failure, "fixed" if fix else "passed", fix,
                                 max(changed - 1, 0), command, evidence))
        if not bucket:
            del self._open[key]

    def _supersede(self, info: CommandInfo, command: str, evidence: Evidence) -> None:
        """Open failures of another command at the same goal that this run did whole (``npm
        test`` failed, ``npx vitest run`` worked): resolved by this run, not still failing."""
        if info.category not in _CHECKS or info.scope:
            return
        for key in [k for k in self._open if k.startswith(f"{info.category.value}:")]:
            failures = self._open[key]
            for signature, failure in list(failures.items()):
                if failure.info is None or not info.same_goal(failure.info):
                    continue
                del failures[signature]
                self._open_count -= 1
                changed = self._changes - failure.last_at
                fix = self._credit(failure) if changed > 0 else None
                self._keep(_Resolved(failure, "fixed" if fix else "passed", fix,
                                     max(changed - 1, 0), command, evidence))
            if not failures:
                del self._open[key]

    def _credit(self, failure: _Failure) -> _Change | None:
        """The change that fixed ``failure``: of the changes since it, the last one to a file
        its output named, else the last one to code (not docs or a changelog), else the last."""
        since = [c for c in self._recent_changes if c.number > failure.last_at]
        if not since:
            return None
        named = [c for c in since if c.path.rsplit("/", 1)[-1] in failure.mentions]
        if named:
            return named[-1]
        code = [c for c in since if not _is_prose(c.path)]
        return (code or since)[-1]

    def _keep(self, resolved: _Resolved) -> None:
        if len(self._resolved) >= self.limits.errors:
            self._resolved.popleft()
            self._count("errors_dropped")
        self._resolved.append(resolved)


_VOLATILE = re.compile(r"0x[0-9a-f]+|\d+(?:\.\d+)*|'[^']*'|\"[^\"]*\"", re.IGNORECASE)


def _error_signature(error: str) -> str:
    """What identifies an error across runs: its line without line numbers, addresses,
    timings and quoted values (``main.py:487:16: F821 undefined name 'X'`` and the same at
    another line are one error; a TypeError after an AttributeError is another)."""
    return " ".join(_VOLATILE.sub("#", error.lower()).split())[:160]


_PROSE_SUFFIXES = (".md", ".rst", ".txt", ".adoc")
_PROSE_NAMES = ("changelog", "changes", "history", "news", "readme", "authors", "license")


def _is_prose(path: str) -> bool:
    """Docs, changelogs and notes: an edit to one rarely makes a check pass."""
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith(_PROSE_SUFFIXES) or name.split(".", 1)[0] in _PROSE_NAMES \
        or "/docs/" in f"/{path.lower()}"
