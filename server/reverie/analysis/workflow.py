"""Durable workflow facts a session's commands show: the issue tracker the project uses
(``bd show rv-12``, ``gh issue view 42``), paths git ignores (``git add`` refusing them), and
paths the shell needs quoted (zsh's "no matches found: app/[id]/page.tsx" until quoted).
"""

from __future__ import annotations

import re
import shlex

from reverie.analysis.working import AnalyserBase

#: issue-tracker CLIs, by the words that start their commands
_TRACKERS: tuple[tuple[str, ...], ...] = (
    ("bd",), ("gh", "issue"), ("glab", "issue"), ("jira", "issue"), ("jira",), ("linear",),
    ("tea", "issues"),
)
#: an argument that names one issue (``rv-12``, ``42``, ``#42``, ``PROJ-7``)
_ISSUE_ID = re.compile(r"^#?\d+$|^[A-Za-z][A-Za-z0-9]*-[A-Za-z0-9]*\d[A-Za-z0-9]*$")
_IGNORED_HEAD = "The following paths are ignored by one of your .gitignore files:"
_NO_MATCH = re.compile(r"no matches found: (\S+)")


def tracker_form(command: str) -> str | None:
    """The issue-tracker command ``command`` runs, with issue ids as ``<id>`` (``bd show
    <id>``); ``None`` when it runs none."""
    try:
        words = shlex.split(command.split("\n", 1)[0])
    except ValueError:
        words = command.split()
    for prefix in _TRACKERS:
        if tuple(words[: len(prefix)]) == prefix and len(words) > len(prefix):
            sub = words[len(prefix)]
            if sub.startswith("-"):
                return None
            rest = ["<id>" if _ISSUE_ID.match(w) else w for w in words[len(prefix) + 1:]
                    if not w.startswith("-")][:1]
            if rest and rest[0] != "<id>":
                rest = []  # a title or a free-text argument: not part of the workflow
            return " ".join([*prefix, sub, *rest])
    return None


def ignored_paths(output: str) -> list[str]:
    """Paths ``git add`` refused because a .gitignore matches them."""
    start = output.find(_IGNORED_HEAD)
    if start < 0:
        return []
    paths: list[str] = []
    for line in output[start + len(_IGNORED_HEAD):].splitlines()[1:12]:
        if not line.strip() or line.startswith(("hint:", "Use -f", "fatal:")):
            if paths:
                break
            continue
        paths.append(line.strip())
    return paths[:5]


def glob_failure(output: str) -> str | None:
    """The path zsh could not expand (it has ``[``, ``*`` or ``?`` and was not quoted)."""
    match = _NO_MATCH.search(output[:2_000])
    return match.group(1) if match and any(c in match.group(1) for c in "[]*?") else None


#: pre-commit's report of a failing hook, and other hook managers' (husky, lefthook)
_HOOK_ID = re.compile(r"^\W*- hook id: ([\w.-]+)\s*$", re.MULTILINE)
#: pre-commit's line per hook: ``flake8.............Failed`` / ``black....Passed``
_HOOK_STATUS = re.compile(r"^\W*([\w][\w .+/-]{0,40}?)\.{3,}(?:\(no files to check\))?"
                          r"(?:Passed|Failed|Skipped)\s*$", re.MULTILINE)
_HOOK_BLOCKED = re.compile(r"husky - \S+ hook exited|pre-commit hook (?:failed|exited)|"
                           r"lefthook.*(?:failed|error)", re.IGNORECASE)


class WorkflowNotes(AnalyserBase):
    """What commands show of the project's workflow: hooks, tracker, ignored and quoted paths
    (a mixin of ``SessionAnalyser``)."""

    _hooks: dict[str, None]
    _trackers: dict[str, None]
    _ignored: dict[str, None]
    _unquoted: dict[str, None]
    _quoted: dict[str, None]

    def _workflow(self, command: str, failed: bool, output: str, has_result: bool) -> None:
        """What the command shows of how the project works (tracker, ignored and quoted
        paths): a few cheap checks, each bounded."""
        if failed:
            head = output[:20_000]
            for path in ignored_paths(head) if "gitignore" in head else ():
                if len(self._ignored) < 10:
                    self._ignored.setdefault(path, None)
            unexpanded = glob_failure(head) if "no matches found" in head else None
            if unexpanded is not None and len(self._unquoted) < 10:
                self._unquoted.setdefault(unexpanded, None)
            return
        if not has_result:
            return
        for path in [p for p in self._unquoted if f"'{p}'" in command or f'"{p}"' in command]:
            del self._unquoted[path]
            if len(self._quoted) < 10:
                self._quoted.setdefault(path, None)
        form = tracker_form(command) if command[:6].strip() else None
        if form is not None and len(self._trackers) < 8:
            self._trackers.setdefault(form, None)

    def _note_hooks(self, output: str) -> bool:
        """Remember the pre-commit-style hooks an output shows failing; whether it showed any."""
        head = output[:20_000]
        if _HOOK_ID.search(head) is None:
            return bool(_HOOK_BLOCKED.search(head[:4_000]))
        for match in _HOOK_STATUS.finditer(head):  # every hook the run listed, passed or not
            if len(self._hooks) < 12:
                self._hooks.setdefault(match.group(1).strip(), None)
        return True
