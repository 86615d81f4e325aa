"""Durable workflow facts a session's commands show: the issue tracker the project uses
(``bd show rv-12``, ``gh issue view 42``), paths git ignores (``git add`` refusing them), and
paths the shell needs quoted (zsh's "no matches found: app/[id]/page.tsx" until quoted).
"""

from __future__ import annotations

import re
import shlex

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
