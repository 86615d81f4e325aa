"""Durable workflow facts a session's commands show: the issue tracker the project uses
(``bd show rv-12``, ``gh issue view 42``), paths git ignores (``git add`` refusing them), and
paths the shell needs quoted (zsh's "no matches found: app/[id]/page.tsx" until quoted).
"""

from __future__ import annotations

import re
import shlex
from collections import deque

from reverie.analysis.models import Commit, Evidence
from reverie.analysis.outcomes import shorten
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


#: ``git commit``'s summary line: ``[main 3578a31] Update journals`` (``(root-commit)`` first)
_COMMITTED = re.compile(r"^\[(?P<branch>[^\]\s]+)(?: \(root-commit\))? (?P<sha>[0-9a-f]{7,40})\] "
                        r"(?P<message>\S.*)$", re.MULTILINE)
#: the files that hold a repository's commit hooks
_HOOK_FILE = re.compile(r"(?:^|[\s/'\"])(?:\.git/hooks/(?:pre-commit|pre-push|commit-msg)\b|"
                        r"\.husky/(?:pre-commit|pre-push)\b|\.pre-commit-config\.ya?ml\b|"
                        r"lefthook\.ya?ml\b)")
#: words that start a hook script's lines without being the check it runs
_SCRIPT_WORDS = frozenset({
    "echo", "printf", "exit", "set", "if", "then", "else", "elif", "fi", "while", "until", "do",
    "done", "for", "case", "esac", "return", "local", "export", "read", "test", "[", "[[", "true",
    "false", "cd", "source", ".", "eval", "exec", "command", "shift", "trap", "unset", "cat",
    "grep", "sed", "awk", "head", "tail", "tr", "cut", "sort", "uniq", "xargs", "wc", "git",
    "mkdir", "rm", "cp", "mv", "chmod", "ln", "basename", "dirname", "readlink", "sleep", "wait",
    "kill", "!", "{", "}", "function", "declare", "typeset", "let", "break", "continue", "in",
})
_RUNNER_WORDS = frozenset({"npx", "pnpx", "bunx", "uvx", "pnpm", "npm", "yarn", "bun", "uv",
                           "poetry", "bundle", "pipx"})
_HOOK_IDS = re.compile(r"^\s*-\s+id:\s*([\w.-]+)", re.MULTILINE)
#: a path the shell did not find: zsh ``no such file or directory: X``, ``X: No such file…``
_MISSING = re.compile(r"no such file or directory: (\S+)|(?:^|\s)'?(/[^\s:']+)'?: No such file "
                      r"or directory", re.IGNORECASE | re.MULTILINE)


#: what an environment says when it refuses something, whatever the command
_REFUSED = re.compile(r"Operation not permitted|Read-only file system|sandbox denied|"
                      r"Permission denied|not allowed by (?:the )?sandbox", re.IGNORECASE)


def committed(output: str) -> list[tuple[str, str]]:
    """The commits a ``git commit`` output reports: (sha, message)."""
    return [(m.group("sha"), m.group("message").strip())
            for m in _COMMITTED.finditer(output[:4_000])]


#: ``git pull``'s "Updating 82226fd..7a23400" and ``git push``'s "   82226fd..7a23400  main -> main"
_PULLED = re.compile(r"^Updating ([0-9a-f]{7,40}\.\.[0-9a-f]{7,40})\s*$", re.MULTILINE)
_PUSHED = re.compile(r"^\s*\+?([0-9a-f]{7,40}\.{2,3}[0-9a-f]{7,40})\s+(\S+) -> (\S+)", re.MULTILINE)
_UP_TO_DATE = re.compile(r"^Already up[ -]to[ -]date\.?\s*$|^Everything up-to-date\s*$",
                         re.MULTILINE)


def synced(command: str, output: str) -> str | None:
    """What a successful ``git pull`` / ``git push`` did, in a few words."""
    head = output[:6_000]
    if "git pull" in command:
        pulled = _PULLED.search(head)
        if pulled is not None:
            return f"pulled `{pulled.group(1)}`"
        if _UP_TO_DATE.search(head):
            return "pulled: already up to date"
    if "git push" in command:
        pushed = _PUSHED.search(head)
        if pushed is not None:
            return f"pushed `{pushed.group(1)}` to `{pushed.group(3)}`"
        if _UP_TO_DATE.search(head):
            return "pushed: everything up to date"
    return None


def reads_hook_file(text: str) -> bool:
    """``text`` (a command, a path) names a repository's commit-hook file."""
    return _HOOK_FILE.search(text) is not None


def hook_tools(script: str) -> list[str]:
    """The checks a commit-hook file runs: a pre-commit config's hook ids, or the commands a
    hook script calls (``gitleaks protect --staged`` -> ``gitleaks``; ``npx lint-staged`` ->
    ``npx lint-staged``), without the shell's own words."""
    head = script[:20_000]
    ids = _HOOK_IDS.findall(head)
    if ids:
        return list(dict.fromkeys(ids))[:8]
    tools: dict[str, None] = {}
    for raw in head.splitlines():
        line = raw.split("#", 1)[0].strip()
        for part in re.split(r"&&|\|\||;|\||\$\(|`", line):
            words = [w for w in part.split() if w not in ("if", "then", "!", "else", "elif",
                                                          "while", "until", "do")]
            if not words or "=" in words[0] or not re.match(r"^[\w./-]+$", words[0]):
                continue
            name = words[0].rsplit("/", 1)[-1]
            if name in _SCRIPT_WORDS or name.startswith(("-", "$")):
                continue
            if name in _RUNNER_WORDS and len(words) > 1 and not words[1].startswith("-"):
                name = f"{name} {words[1]}"
            tools.setdefault(name, None)
    return list(tools)[:6]


def missing_paths(output: str) -> list[str]:
    """Paths a failed command said do not exist."""
    found = [m.group(1) or m.group(2) for m in _MISSING.finditer(output[:4_000])]
    return [p.strip("'\"") for p in found if p and "/" in p][:3]


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
    #: paths a command did not find, by last component -> the path it tried
    _missing: dict[str, str]
    #: (the path that was not there, the one that was): "X is at Y, not Z"
    _relocated: dict[str, str]
    _commits: deque[Commit]
    _vcs: deque[str]
    #: what the environment refused, by error: [the first command, the error, how often]
    _blocked: dict[str, list[str | int]]

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
            if "no such file" in head.lower():
                for path in missing_paths(head):
                    if len(self._missing) < 10:
                        self._missing.setdefault(path.rstrip("/").rsplit("/", 1)[-1], path)
            return
        if not has_result:
            return
        if self._missing:
            self._found_again(command)
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

    def _found_again(self, command: str) -> None:
        """A path that was not there, then used at another place by a command that worked:
        where it really is (``cd ~/M-Claude`` failed, ``cd ~/Documents/M-Claude`` worked)."""
        for token in command[:2_000].replace("'", " ").replace('"', " ").split():
            name = token.rstrip("/").rsplit("/", 1)[-1]
            tried = self._missing.get(name)
            if tried is None or "/" not in token or token.rstrip("/") == tried.rstrip("/"):
                continue
            del self._missing[name]
            if len(self._relocated) < 5:
                self._relocated.setdefault(tried.rstrip("/"), token.rstrip("/"))

    def _succeeded(self, call_command: str | None, paths: tuple[str, ...], output: str,
                   evidence: Evidence) -> None:
        """What a successful call's output shows: the commits it made, the checks a commit
        hook it read runs."""
        command = call_command or ""
        if "git commit" in command:
            for sha, message in committed(output):
                text = self._clean(shorten(message, 120))
                self._commits.append(Commit(sha=sha[:12], message=text, evidence=evidence))
        if "git pull" in command or "git push" in command:
            event = synced(command, output)
            if event is not None:
                self._vcs.append(event)
        if (command and reads_hook_file(command)) or any(reads_hook_file(p) for p in paths):
            for tool in hook_tools(output):
                if len(self._hooks) < 12:
                    self._hooks.setdefault(tool, None)

    def _environment(self, command: str, output: str) -> None:
        """A command the environment refused (a sandbox, a read-only disk, a permission): when
        it happens again to other commands, it is how this place works, not a one-off."""
        line = next((x for x in output[:4_000].splitlines() if _REFUSED.search(x)), None)
        if line is None:
            return
        error = shorten(" ".join(line.split()), 200)
        key = re.sub(r"\d+", "#", error.lower())
        seen = self._blocked.get(key)
        if seen is not None:
            seen[2] = int(seen[2]) + 1
        elif len(self._blocked) < 10:
            self._blocked[key] = [shorten(command.split("\n", 1)[0], 120), error, 1]
