"""The analyser's working state: its bounds (``Limits``) and the compact records it keeps per
call, change, failure, command, file, worklog step and statement while a session streams by.

``AnalyserBase`` holds what every part of the analyser shares: the counters and the redaction
of every text that may become a fact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reverie.analysis.commands import CommandCategory, CommandInfo
from reverie.analysis.models import Evidence
from reverie.analysis.statements import StatementKind
from reverie.redact import redact
from reverie.transcripts.model import ToolCall, ToolKind

#: Tools that poll a running command (Codex's PTY): their results repeat the command's own.
POLL_TOOLS = frozenset({"write_stdin", "BashOutput"})
_SEARCH_COMMANDS = frozenset({"rg", "grep", "egrep", "fgrep", "ag", "ack"})
_SHELL_NAMES = frozenset({"bash", "shell", "exec_command", "run_shell_command", "local_shell"})


@dataclass(frozen=True, slots=True)
class Limits:
    """How much of each kind the analysis keeps (the rest is counted)."""

    requests_head: int = 4
    requests_tail: int = 40
    rules: int = 60
    decisions: int = 40
    corrections: int = 20
    commands: int = 200
    errors: int = 80
    open_per_key: int = 16
    open_total: int = 400
    files: int = 3_000
    worklog: int = 80
    pending_calls: int = 5_000
    #: changes remembered to credit a fix (the one before a pass is looked for among them)
    recent_changes: int = 32
    command_cache: int = 8_192
    commits: int = 40


@dataclass(slots=True)
class _Call:
    """The compact facts of one tool call, computed once."""

    seq: int
    name: str
    kind: ToolKind
    paths: tuple[str, ...]
    command: str | None
    info: CommandInfo | None
    essence: str | None
    symbols: list[str]
    evidence: Evidence
    sidechain: bool
    #: files its patch adds (``*** Add File: tests/test_x.py``): created, not edited
    adds: tuple[str, ...] = ()


@dataclass(slots=True)
class _Change:
    path: str
    essence: str | None
    evidence: Evidence
    #: its number in the session's sequence of changes
    number: int = 0
    #: a code generator's run (``sqlc generate``) rather than an edit
    command: str | None = None


@dataclass(slots=True)
class _Failure:
    check: str
    info: CommandInfo | None
    category: CommandCategory
    error_raw: str
    evidence: Evidence
    changes_at: int
    #: source files the failure's output names (a fix to one of them is the likeliest)
    mentions: frozenset[str] = frozenset()
    count: int = 1
    #: the change count at this error's last occurrence (a fix is looked for after it)
    last_at: int = 0
    #: the error line with numbers, addresses and quotes' contents normalised away
    signature: str = ""


@dataclass(slots=True)
class _Resolved:
    failure: _Failure
    status: str
    fix: _Change | None
    other_changes: int
    proved_by: str | None
    proved_at: Evidence | None


@dataclass(slots=True)
class _Command:
    category: CommandCategory
    key: str
    working: str | None
    last: str
    runs: int
    failures: int
    last_ok: bool
    evidence: Evidence
    scope: frozenset[str] = frozenset()


@dataclass(slots=True)
class _File:
    reads: int = 0
    edits: int = 0
    created: bool = False
    symbols: list[str] = field(default_factory=list)
    first_seen: int = 0


@dataclass(slots=True)
class _Step:
    request: str | None
    reads: int = 0
    searches: int = 0
    commands: int = 0
    edited: list[str] = field(default_factory=list)
    edited_more: int = 0
    failed: int = 0

    def empty(self) -> bool:
        return not (self.reads or self.searches or self.commands or self.edited or self.failed)


@dataclass(slots=True)
class _Statement:
    kind: StatementKind
    text: str
    subject: str
    replaces: str | None
    chosen: str | None
    evidence: Evidence
    superseded_by: str | None = None


def command_of(call: ToolCall) -> str | None:
    """The shell command a call runs, if it runs one."""
    if call.command and call.command.strip():
        return call.command.strip()
    if call.name.lower() in _SHELL_NAMES:
        for key in ("command", "cmd"):
            value = call.input.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
            if isinstance(value, list) and value:
                return " ".join(str(v) for v in value)
    return None


#: what of a failed output the analysis reads (the hook and workflow checks look at its first
#: 20,000 characters, the error line at its head and tail): only that much is redacted
_OUTPUT_HEAD = 24_000
_OUTPUT_TAIL = 4_000


def _bounded_output(output: str) -> str:
    """``output``'s head and tail, cut at line ends, so a 50 MB log costs what 28 KB does."""
    if len(output) <= _OUTPUT_HEAD + _OUTPUT_TAIL:
        return output
    head_end = output.rfind("\n", 0, _OUTPUT_HEAD)
    tail_start = output.find("\n", len(output) - _OUTPUT_TAIL)
    head = output[:head_end if head_end > 0 else _OUTPUT_HEAD]
    tail = output[tail_start + 1 if tail_start >= 0 else len(output) - _OUTPUT_TAIL:]
    return f"{head}\n…\n{tail}"


class AnalyserBase:
    """Counters and redaction, shared by the analyser's parts."""

    limits: Limits
    _counts: dict[str, int]
    _redactions: int

    def _count(self, name: str, n: int = 1) -> None:
        self._counts[name] = self._counts.get(name, 0) + n

    def _clean(self, text: str) -> str:
        cleaned, found = redact(text)
        self._redactions += found
        return cleaned
