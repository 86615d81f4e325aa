"""One forward pass over a session's messages → ``SessionAnalysis``.

``SessionAnalyser.feed`` takes the messages one at a time (a file can be streamed through it) and
keeps only compact per-call facts: a pending call waits for its result in a dict keyed by call id,
open failures wait for a pass in a dict keyed by the check's target (``commands.CommandInfo.key``),
and every list is bounded with what it dropped counted. Each message is looked at once, so the
cost is linear in the session and the memory is bounded by the limits, not by its length.

Failure → fix: a failure stays open until a later run of the same or a broader check of the same
target passes (``pytest tests/x.py -k foo`` is resolved by ``pytest``); the fix credited is the
last successful edit (or a command that changed the project: ``sqlc generate``, ``uv add x``)
before that first pass, if one came after the failure. Tool-protocol slips,
rejections, failed exploration and searches that found nothing are counted, never errors.

Secrets: every text that becomes a fact goes through ``reverie.redact.redact`` when the result is
built (raw texts are kept only in the bounded working state, never returned).
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from reverie.analysis.commands import CommandCategory, CommandInfo, analyse_command
from reverie.analysis.models import (
    Change,
    Commit,
    Decision,
    EndState,
    ErrorFix,
    Evidence,
    FileActivity,
    ProjectCommand,
    Request,
    Rule,
    SessionAnalysis,
    Summarised,
    WorkStep,
)
from reverie.analysis.outcomes import (
    edit_essence,
    edited_symbols,
    error_summary,
    first_line,
    is_rejection,
    is_slip,
    mentioned_files,
    output_verdict,
    prose,
    result_failed,
    shorten,
    still_running,
    without_edits,
)
from reverie.analysis.shell_files import shell_edits, shell_reads
from reverie.analysis.slash import split_commands
from reverie.analysis.statements import (
    StatementKind,
    avoided,
    is_correction,
    plain_statement,
    split_request,
)
from reverie.analysis.workflow import glob_failure, ignored_paths, tracker_form
from reverie.redact import redact, redact_value
from reverie.transcripts.model import Message, Session, ToolCall, ToolKind
from reverie.transcripts.redacted import redact_session
from reverie.transcripts.wrappers import UserTextKind, classify_user_text

#: Tools that poll a running command (Codex's PTY): their results repeat the command's own.
POLL_TOOLS = frozenset({"write_stdin", "BashOutput"})
_SEARCH_COMMANDS = frozenset({"rg", "grep", "egrep", "fgrep", "ag", "ack"})
_SHELL_NAMES = frozenset({"bash", "shell", "exec_command", "run_shell_command", "local_shell"})
_RULE_KINDS = frozenset({StatementKind.RULE, StatementKind.PREFERENCE, StatementKind.NOTE,
                         StatementKind.CORRECTION})
_REQUEST_CHARS = 4_000
#: a non-zero exit that reports nothing wrong
_BENIGN_EXIT = re.compile(r"nothing to commit|nothing added to commit|no changes added to commit"
                          r"|Already up[ -]to[ -]date|Everything up-to-date", re.IGNORECASE)
#: a bare pick from a menu the agent offered: "B", "2", "a)", "y", "option 3"
_MENU_CHOICE = re.compile(r"^\s*(?:option\s+)?[A-Za-z0-9][).:]?\s*$", re.IGNORECASE)
#: the person takes back what they said just before
_RETRACTION = re.compile(r"^\W*(?:no[,.!]?\s+)?(?:scratch that|ignore (?:that|what i said|my last"
                         r"(?: message)?)|forget (?:that|what i said)|never ?mind|disregard that"
                         r"|i take (?:that|it) back)\b", re.IGNORECASE)
#: the end of a reply that asks the person to choose or confirm
_ASKS_BACK = re.compile(r"\?\s*(?:```)?\s*$|\b(?:would you like|do you want|should i|shall i|"
                        r"which (?:one|option|do you)|let me know (?:if|which|whether)|"
                        r"please (?:confirm|choose|pick))\b", re.IGNORECASE)


def _looks_pasted(text: str) -> bool:
    """A prompt pasted from elsewhere (a task spec, an assignment): long and structured, with
    headings or many list items. Its "Note:" and "Never …" lines are not this person's rules."""
    if len(text) < 600:
        return False
    lines = text.splitlines()
    structured = sum(1 for line in lines if _STRUCTURE.match(line))
    return (len(lines) >= 12 and structured >= 4) or text.count("\n#") >= 2


_STRUCTURE = re.compile(r"^\s*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s)")
#: pre-commit's report of a failing hook, and other hook managers' (husky, lefthook)
_HOOK_ID = re.compile(r"^\W*- hook id: ([\w.-]+)\s*$", re.MULTILINE)
#: pre-commit's line per hook: ``flake8.............Failed`` / ``black....Passed``
_HOOK_STATUS = re.compile(r"^\W*([\w][\w .+/-]{0,40}?)\.{3,}(?:\(no files to check\))?"
                          r"(?:Passed|Failed|Skipped)\s*$", re.MULTILINE)
_HOOK_BLOCKED = re.compile(r"husky - \S+ hook exited|pre-commit hook (?:failed|exited)|"
                           r"lefthook.*(?:failed|error)", re.IGNORECASE)
_CHECKS = frozenset({CommandCategory.TEST, CommandCategory.LINT, CommandCategory.TYPECHECK,
                     CommandCategory.BUILD, CommandCategory.FORMAT})
_RUN_EXIT = re.compile(r"(?:Command exited with code|exit code:?|exited with)\s*(-?\d+)", re.I)
_REPLY_CHARS = 3_000


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


class SessionAnalyser:
    """Feed messages oldest first (``feed``), then read the ``result``."""

    def __init__(self, session: Session | None = None, workspace: Path | None = None,
                 limits: Limits | None = None) -> None:
        self.session = session
        self.workspace = workspace
        self.limits = limits or Limits()
        self._seq = 0
        self._redactions = 0
        self._counts: dict[str, int] = {}
        self._pending: dict[str, _Call] = {}
        #: raw command -> (the command redacted whole and cut, its classification)
        self._command_cache: dict[str, tuple[str, CommandInfo]] = {}
        self._files: dict[str, _File] = {}
        self._commands: dict[str, _Command] = {}
        self._open: dict[str, dict[str, _Failure]] = {}
        self._open_count = 0
        self._resolved: deque[_Resolved] = deque()
        self._changes = 0
        self._recent_changes: deque[_Change] = deque(maxlen=self.limits.recent_changes)
        self._requests_head: list[Request] = []
        self._requests_tail: deque[Request] = deque(maxlen=self.limits.requests_tail)
        self._request_keys: set[bytes] = set()
        self._statements: list[_Statement] = []
        self._by_subject: dict[str, int] = {}
        self._corrections: deque[Request] = deque(maxlen=self.limits.corrections)
        self._title: str | None = None
        self._first_request: str | None = None
        self._steps: deque[_Step] = deque(maxlen=self.limits.worklog)
        self._step = _Step(None)
        self._last_request: tuple[str, Evidence] | None = None
        self._last_reply: str | None = None
        self._final: str | None = None
        self._replying_to = "none"
        self._turn_api: str | None = None
        self._turn_calls: list[_Call] = []
        self._turn_open = False
        self._last_check: tuple[str, bool] | None = None
        self._user_run: _Call | None = None
        self._user_run_output: list[str] = []
        self._started: datetime | None = None
        self._updated: datetime | None = None
        self._commits: deque[Commit] = deque(maxlen=self.limits.commits)
        #: the agent logs tool results (Aider logs none: its edits are done when logged)
        self._results_seen = False
        self._hooks: dict[str, None] = {}
        self._trackers: dict[str, None] = {}
        self._ignored: dict[str, None] = {}
        self._unquoted: dict[str, None] = {}
        self._quoted: dict[str, None] = {}
        #: the agent's last reply asked the person something (a short reply answers it)
        self._agent_asked = False
        self._last_statements = (0, 0)
        self._hooks_block_commits = False

    # -- feeding ----------------------------------------------------------------------------

    def feed(self, message: Message) -> None:
        """Take one message into account (it is not kept).

        Every field a fact is made from is redacted WHOLE before anything cuts it (a piece cut
        first can keep part of a secret no rule recognises): the request, the kept replies, each
        command, an edit's input, a failed call's output. The rest (successful outputs, reads,
        most replies) is never quoted, so it is not scanned: that is most of a session's bytes.
        """
        self._count("messages")
        if message.timestamp is not None:
            if self._started is None or message.timestamp < self._started:
                self._started = message.timestamp
            if self._updated is None or message.timestamp > self._updated:
                self._updated = message.timestamp
        if message.is_sidechain:
            self._count("sidechain_messages")
        if self._user_run is not None and message.role in ("system", "assistant") \
                and message.text and not message.tool_calls:
            if sum(len(t) for t in self._user_run_output) < 8_000:
                self._user_run_output.append(self._clean(message.text)[:4_000])
        if message.role == "system" and "hook id:" in message.text:
            self._note_hooks(message.text)  # Aider's lint run after an edit
        if message.role == "user" and not message.tool_results and not message.is_sidechain \
                and not message.is_meta and message.text:
            self._settle_user_command()
            self._user_text(message)
        elif message.role == "assistant":
            self._assistant(message)
        for result in message.tool_results:
            self._results_seen = True
            if still_running(result):
                continue  # the final result follows (Codex logs the command's end later)
            call = self._pending.pop(result.call_id, None)
            if call is None:
                continue  # an agent may log several results for one call: the first counts
            failed = result_failed(result)
            output = self._clean(_bounded_output(result.output)) if failed else ""
            self._outcome(call, failed, output, has_result=True)

    def feed_all(self, messages: Iterable[Message]) -> SessionAnalyser:
        for message in messages:
            self.feed(message)
        return self

    def _count(self, name: str, n: int = 1) -> None:
        self._counts[name] = self._counts.get(name, 0) + n

    def _user_text(self, message: Message) -> None:
        found = classify_user_text(message.text, message.display_text)
        if found.kind is UserTextKind.NOTIFICATION:
            self._count("notifications")
            self._replying_to = "notification"
            return
        if found.shell is not None:
            self._flush_pending()
            self._start_user_command(found.shell, message)
            return
        if not found.is_request or found.request is None:
            return
        commands, request = split_commands(found.request)
        if commands:
            self._flush_pending()  # the person typed again: the calls before are over
        for command in commands:
            if command.name == "undo":
                self._undo()
            elif command.name in ("run", "test") and command.args:
                self._flush_pending()
                self._start_user_command(command.args, message)
        if not request:
            return  # only commands (``/diff``, ``/undo``, ``/ex``): nothing was asked
        self._flush_pending()
        text = self._clean(request)[:_REQUEST_CHARS]
        evidence = Evidence(message_id=message.id, timestamp=message.timestamp)
        asked, self._agent_asked = self._agent_asked, False
        if _MENU_CHOICE.match(text):
            self._count("answers")  # "B", "2)", "y": a pick from the agent's menu, not a task
            return
        self._count("requests")
        if _RETRACTION.match(text):
            self._retract_last()
        statements, task = split_request(text)
        if statements and ((asked and len(text.split()) <= 15) or _looks_pasted(request)):
            # an answer to the agent's question ("Put into existing with conversation
            # incremental.") or a pasted prompt's "Note:" lines: not the person's standing rules
            keep = [s for s in statements if s.kind not in _RULE_KINDS]
            task = " ".join([task, *(s.text for s in statements if s.kind in _RULE_KINDS)])
            statements = keep
        first_statement = len(self._statements)
        for statement in statements:
            self._add_statement(_Statement(statement.kind, statement.text, statement.subject,
                                           statement.replaces, statement.chosen, evidence))
        self._last_statements = (first_statement, len(self._statements))
        if is_correction(text) and not any(s.kind is StatementKind.CORRECTION
                                           for s in statements):
            self._corrections.append(Request(text=shorten(text, 400), evidence=evidence))
        elif len(task.split()) >= 4 or (task.strip() and not statements):
            self._add_request(Request(text=shorten(task, 400), evidence=evidence))
        if self._title is None:
            # the task part names the session; when it is only "Move them." (or nothing: a
            # request that is all rule or rename), the whole request does
            substantial = len(task.split()) >= 4 or (task.strip() and not statements)
            self._title = _title_of(task) if substantial else _title_of(text, asks=False)
        if self._first_request is None:
            self._first_request = text
        self._last_request = (shorten(text, 300), evidence)
        if not self._step.empty() or self._step.request is not None:
            self._steps.append(self._step)
        self._step = _Step(shorten(text, 90))
        self._replying_to = "request"
        self._final = None

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

    def _retract_last(self) -> None:
        """"Scratch that" / "ignore what I said": the statements of the person's previous
        message are withdrawn."""
        start, end = self._last_statements
        for statement in self._statements[start:end]:
            if statement.superseded_by is None:
                statement.superseded_by = "(withdrawn)"

    def _undo(self) -> None:
        """``/undo``: the last commit not yet undone is reverted."""
        for index in range(len(self._commits) - 1, -1, -1):
            commit = self._commits[index]
            if not commit.undone:
                self._commits[index] = commit.model_copy(update={"undone": True})
                return

    def _start_user_command(self, command: str, message: Message) -> None:
        """A command the person ran (Aider ``/run``): its output comes as the next system
        records; it is settled at the next user text or at the end."""
        evidence = Evidence(message_id=message.id, timestamp=message.timestamp)
        facts = self._call_facts(
            ToolCall(id=f"user-run:{message.id}", name="user_shell", kind=ToolKind.SHELL,
                     command=command), evidence, False)
        self._user_run = facts
        self._user_run_output = []

    def _settle_user_command(self) -> None:
        run = self._user_run
        if run is None:
            return
        self._user_run = None
        output = "\n".join(self._user_run_output)
        code = _RUN_EXIT.search(output)
        verdict = (code.group(1) == "0") if code else output_verdict(output)
        if verdict is None:
            # neither an exit code nor a test/lint summary: whether it passed is not known
            self._outcome(run, False, "", has_result=False)
            return
        self._outcome(run, not verdict, output if not verdict else "", has_result=True)

    def _add_request(self, request: Request) -> None:
        key = hashlib.blake2b(" ".join(request.text.lower().split())[:200].encode(),
                              digest_size=8).digest()
        if key in self._request_keys:
            return
        self._request_keys.add(key)
        if len(self._requests_head) < self.limits.requests_head:
            self._requests_head.append(request)
            return
        if len(self._requests_tail) == self._requests_tail.maxlen:
            self._count("requests_dropped")
        self._requests_tail.append(request)

    def _add_statement(self, new: _Statement) -> None:
        earlier = self._by_subject.get(new.subject)
        if earlier is not None:
            old = self._statements[earlier]
            if old.superseded_by is None and _supersedes(new, old):
                old.superseded_by = new.text
        if len(self._statements) >= self.limits.rules + self.limits.decisions:
            self._count("rules_dropped")
            return
        self._by_subject[new.subject] = len(self._statements)
        self._statements.append(new)

    def _assistant(self, message: Message) -> None:
        main = not message.is_sidechain
        if main:
            api = message.api_message_id
            if api is None or api != self._turn_api:
                self._turn_calls = []
                self._turn_open = False
            self._turn_api = api
        if main and message.text.strip():
            text = message.text.strip()  # redacted whole in ``result``, then cut
            self._last_reply = text
            self._agent_asked = _ASKS_BACK.search(text[-400:]) is not None
            if self._replying_to != "notification" and len(text) >= 200:
                said = without_edits(text)  # an edit block is not a deliverable
                self._final = said if len(said) >= 200 else None
        evidence: Evidence | None = None
        for call in message.tool_calls:
            self._count("tool_calls")
            if call.name == "git_commit":
                sha, note = call.input.get("sha"), call.input.get("message")
                if isinstance(sha, str) and sha:
                    self._commits.append(Commit(
                        sha=sha[:12], message=self._clean(shorten(str(note or ""), 120)),
                        evidence=Evidence(message_id=message.id, timestamp=message.timestamp)))
            if evidence is None:
                evidence = Evidence(message_id=message.id, timestamp=message.timestamp)
            facts = self._call_facts(call, evidence, message.is_sidechain)
            if len(self._pending) >= self.limits.pending_calls:
                oldest = next(iter(self._pending))
                self._outcome(self._pending.pop(oldest), False, "", has_result=False)
            self._pending[call.id] = facts
            if main:
                self._turn_calls.append(facts)
                self._turn_open = True

    def _call_facts(self, call: ToolCall, evidence: Evidence, sidechain: bool) -> _Call:
        self._seq += 1
        raw = command_of(call)
        command: str | None = None
        info: CommandInfo | None = None
        if raw is not None and call.kind is ToolKind.SHELL:
            # an edit made through the shell (``bash -lc "applypatch <<'PATCH' …"``, a heredoc
            # written to a file) is an edit of those files, not a project command
            edited = shell_edits(raw, self.session.cwd if self.session else None)
            if edited:
                call = call.model_copy(update={
                    "kind": ToolKind.EDIT, "file_paths": edited[:5],
                    "input": {"patch": raw[:20_000]}})
        elif raw is not None and call.kind in (ToolKind.EDIT, ToolKind.WRITE) \
                and call.file_paths and "*** Begin Patch" in raw:
            call = call.model_copy(update={"input": {**call.input, "patch": raw[:20_000]}})
        if call.kind in (ToolKind.EDIT, ToolKind.WRITE) and call.file_paths:
            raw = None  # the transcript marked it an edit with its paths (Codex's shell patch)
        if raw is not None:
            cached = self._command_cache.get(raw)
            if cached is None:
                command = self._clean(raw)[:2_000]  # redacted whole, then cut
                cached = (command, analyse_command(command))
                if len(self._command_cache) >= self.limits.command_cache:
                    del self._command_cache[next(iter(self._command_cache))]  # oldest first
                self._command_cache[raw] = cached
            command, info = cached
        symbols: list[str] = []
        essence: str | None = None
        if call.kind in (ToolKind.EDIT, ToolKind.WRITE):
            inputs, found = redact_value(call.input)
            self._redactions += found
            if found and isinstance(inputs, dict):
                call = call.model_copy(update={"input": inputs})
            symbols = edited_symbols(call)
            essence = edit_essence(call, symbols)
        return _Call(self._seq, call.name, call.kind, tuple(call.file_paths[:5]), command, info,
                     essence, symbols, evidence, sidechain)

    def _flush_pending(self) -> None:
        """Calls that never got a result by the next request (Aider logs none): an edit is
        taken as made, a command as neither passed nor failed."""
        for call in self._pending.values():
            self._outcome(call, False, "", has_result=False)
        self._pending.clear()

    # -- outcomes ---------------------------------------------------------------------------

    def _outcome(self, call: _Call, failed: bool, output: str, *, has_result: bool) -> None:
        if call.name in POLL_TOOLS:
            return
        step = self._step
        if failed:
            if is_rejection(output):
                self._count("rejected")
                return
            if is_slip(output):
                self._count("slips")
                return
        if call.info is not None and call.command is not None:
            self._command_outcome(call, call.info, failed, output, has_result)
            return
        if call.kind in (ToolKind.READ, ToolKind.EDIT, ToolKind.WRITE):
            if failed:
                step.failed += 1
                target = call.paths[0] if call.paths else ""
                self._fail(f"{call.name} {target}".strip(), f"file:{target}", None,
                           CommandCategory.OTHER, output, call.evidence)
                return
            for path in call.paths:
                self._file(path, call)
            if call.kind is ToolKind.READ:
                step.reads += 1
                return
            for path in call.paths[:1]:
                self._changes += 1
                self._recent_changes.append(
                    _Change(path, call.essence, call.evidence, self._changes))
                self._passed(f"file:{path}", None, f"{call.name} {path}", call.evidence)
                name = path.rsplit("/", 1)[-1]
                if name in step.edited:
                    continue
                if len(step.edited) < 6:
                    step.edited.append(name)
                else:
                    step.edited_more += 1
            return
        if call.kind in (ToolKind.SEARCH, ToolKind.WEB):
            step.searches += 1
            return
        if failed:
            step.failed += 1
            self._fail(call.name, f"tool:{call.name}", None, CommandCategory.OTHER, output,
                       call.evidence)
        elif has_result:
            self._passed(f"tool:{call.name}", None, call.name, call.evidence)

    def _command_outcome(self, call: _Call, info: CommandInfo, failed: bool, output: str,
                         has_result: bool) -> None:
        step = self._step
        step.commands += 1
        self._workflow(call.command or info.main, failed, output, has_result)
        if info.category is CommandCategory.EXPLORE:
            self._count("exploration_commands")
            if failed:
                self._count("exploration_failures")
                return
            if info.key in _SEARCH_COMMANDS:
                step.searches += 1
                return
            read = shell_reads(call.command or "", self.session.cwd if self.session else None)
            if read:  # ``sed -n 1,80p x.py``, ``cat a b``, ``nl -ba x``: reads of those files
                step.reads += 1
                for path in read:
                    self._file(path, call, read=True)
            return
        if failed and info.key.split(" ", 1)[0] in _SEARCH_COMMANDS and not output.strip():
            return  # a search that found nothing
        if failed and _BENIGN_EXIT.search(output[:2_000]):
            failed = False  # ``git commit`` with nothing to commit: not an error
        if failed and "hook" in output[:20_000]:
            found = self._note_hooks(output)
            if found and info.key == "git commit":
                self._hooks_block_commits = True
        if info.is_project:
            self._record_command(info, info.main, failed, has_result, call.evidence)
            if has_result:
                self._last_check = (info.main, not failed)
        else:
            self._count("other_commands")
        if failed:
            step.failed += 1
            self._fail(info.main, info.check_key or info.key, info, info.category, output,
                       call.evidence)
        elif has_result:
            if any(part.changes_the_project for part in (info, *info.chain)):
                # regenerated code or an added dependency is a change: it can be what makes a
                # failing check pass (``sqlc generate``, ``uv add psycopg``)
                self._changes += 1
                self._recent_changes.append(
                    _Change("", None, call.evidence, self._changes, info.main))
            for part in (info, *info.chain):  # ``ruff check . && mypy x`` passes both checks
                keys = [part.check_key or part.key]
                if part.project_wide:  # ``make test`` covers ``go test ./x -run T`` too
                    prefix = f"{part.category.value}:"
                    keys += [k for k in self._open if k.startswith(prefix) and k != keys[0]]
                for key in keys:
                    self._passed(key, part, info.main, call.evidence)
                self._supersede(part, info.main, call.evidence)

    def _record_command(self, info: CommandInfo, command: str, failed: bool, has_result: bool,
                        evidence: Evidence) -> None:
        entry = self._commands.get(info.key)
        ok = has_result and not failed
        if entry is None:
            if len(self._commands) >= self.limits.commands:
                self._count("commands_dropped")
                return
            entry = _Command(info.category, info.key, None, command, 0, 0, False, evidence)
            self._commands[info.key] = entry
        entry.runs += 1
        entry.last = command
        if failed:
            entry.failures += 1
        entry.last_ok = ok
        if ok:
            entry.working = command
            entry.evidence = evidence
            entry.scope = info.scope

    def _fail(self, check: str, key: str, info: CommandInfo | None, category: CommandCategory,
              output: str, evidence: Evidence) -> None:
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

    def _file(self, path: str, call: _Call, *, read: bool = False) -> None:
        stats = self._files.get(path)
        if stats is None:
            if len(self._files) >= self.limits.files:
                self._count("files_dropped")
                return
            stats = _File(first_seen=len(self._files))
            self._files[path] = stats
        if read or call.kind is ToolKind.READ:
            stats.reads += 1
            return
        stats.edits += 1
        if call.kind is ToolKind.WRITE and stats.edits == 1 and stats.reads == 0:
            stats.created = True
        for name in call.symbols:
            if name not in stats.symbols and len(stats.symbols) < 8:
                stats.symbols.append(name)

    # -- result -----------------------------------------------------------------------------

    def _clean(self, text: str) -> str:
        cleaned, found = redact(text)
        self._redactions += found
        return cleaned

    def _show(self, path: str, roots: list[str]) -> str:
        for root in roots:
            if path == root:
                return "."
            if path.startswith(root + "/"):
                return path[len(root) + 1:]
        return path

    def result(self, session: Session | None = None) -> SessionAnalysis:
        """The analysis of everything fed so far (``session``: the complete session record,
        when it was not known at the start)."""
        self._settle_user_command()
        session = session or self.session
        # an agent that logs no results at all (Aider) logs a call once it is done
        logs_results = self._results_seen or (session is not None and session.agent != "aider")
        if not logs_results:
            self._flush_pending()
        if session is not None:
            session = redact_session(session)  # its title is shortened below
        roots = [r.rstrip("/") for r in (
            session.cwd if session else None,
            str(self.workspace) if self.workspace else None,
        ) if r]

        def show(path: str) -> str:
            return self._clean(self._show(path, roots))

        def change(item: _Change | None) -> Change | None:
            if item is None:
                return None
            essence = self._clean(item.essence) if item.essence else None
            command = self._clean(shorten(item.command, 200)) if item.command else None
            return Change(path=show(item.path) if item.path else "", essence=essence,
                          evidence=item.evidence, command=command)

        errors: list[ErrorFix] = []
        for resolved in self._resolved:
            failure = resolved.failure
            errors.append(ErrorFix(
                check=self._clean(shorten(failure.check, 200)),
                category=failure.category,
                error=self._clean(failure.error_raw),
                failed_at=failure.evidence,
                failures=failure.count,
                status="fixed" if resolved.status == "fixed" else "passed",
                fix=change(resolved.fix),
                other_changes=resolved.other_changes,
                proved_by=self._clean(shorten(resolved.proved_by or "", 200)) or None,
                proved_at=resolved.proved_at,
            ))
        still = sorted((f for bucket in self._open.values() for f in bucket.values()),
                       key=lambda f: f.changes_at)
        for failure in still[-self.limits.errors:]:
            errors.append(ErrorFix(
                check=self._clean(shorten(failure.check, 200)),
                category=failure.category,
                error=self._clean(failure.error_raw),
                failed_at=failure.evidence,
                failures=failure.count,
                status="still_failing",
                changed_since=self._changes - failure.last_at,
            ))
        rules: list[Rule] = []
        decisions: list[Decision] = []
        for statement in self._statements:
            if statement.kind in _RULE_KINDS:
                if len(rules) < self.limits.rules:
                    rules.append(Rule(
                        kind=statement.kind, text=statement.text, subject=statement.subject,
                        replaces=statement.replaces, chosen=statement.chosen,
                        avoid=avoided(statement.text),
                        evidence=statement.evidence, superseded_by=statement.superseded_by))
            elif len(decisions) < self.limits.decisions:
                decisions.append(Decision(
                    kind="rename" if statement.kind is StatementKind.RENAME else "decision",
                    text=statement.text, subject=statement.subject,
                    replaces=statement.replaces, chosen=statement.chosen,
                    evidence=statement.evidence, superseded_by=statement.superseded_by))
        files = [
            FileActivity(path=show(path), reads=s.reads, edits=s.edits, created=s.created,
                         symbols=[self._clean(n) for n in s.symbols], first_seen=s.first_seen)
            for path, s in self._files.items()
        ]
        forbidden = {word for statement in self._statements
                     if statement.kind in _RULE_KINDS and statement.superseded_by is None
                     for word in avoided(statement.text)}
        commands = [
            ProjectCommand(
                category=c.category, key=c.key,
                working=self._clean(shorten(c.working, 300)) if c.working else None,
                last=self._clean(shorten(c.last, 300)), runs=c.runs, failures=c.failures,
                last_ok=c.last_ok, evidence=c.evidence, scope=sorted(c.scope))
            for c in self._commands.values()
            # a command a current rule forbids ("never npm") is not the project's way
            if c.key.split(" ", 1)[0].lower() not in forbidden
        ]
        steps = [*self._steps]
        if not self._step.empty() or self._step.request is not None:
            steps.append(self._step)
        worklog = [WorkStep(request=s.request, reads=s.reads, searches=s.searches,
                            commands=s.commands, edited=[self._clean(e) for e in s.edited],
                            edited_more=s.edited_more, failed=s.failed) for s in steps]
        in_progress = (
            [self._describe(c, show) for c in self._turn_calls[-3:]]
            if self._turn_open and logs_results else []
        )
        final = None
        if not self._turn_open and self._final is not None:
            final = self._clean(self._final)[:_REPLY_CHARS]
        end = EndState(
            last_request=self._last_request[0] if self._last_request else None,
            last_request_at=self._last_request[1] if self._last_request else None,
            last_reply=shorten(self._clean(prose(self._last_reply))[:_REPLY_CHARS], 500)
            if self._last_reply and prose(self._last_reply) else None,
            final_answer=final,
            in_progress=in_progress,
            last_check=self._clean(shorten(self._last_check[0], 200)) if self._last_check
            else None,
            last_check_ok=self._last_check[1] if self._last_check else None,
        )
        counts = dict(self._counts)
        counts["worklog_dropped"] = max(0, len(steps) - len(worklog))
        counts["redactions"] = self._redactions
        summary = Summarised(**{k: v for k, v in counts.items() if k in Summarised.model_fields})
        title = self._title
        if title is None and self._first_request is not None:
            title = _title_of(self._first_request)
        if title is None and session is not None and session.title:
            title = self._clean(shorten(session.title, 100))
        return SessionAnalysis(
            session_id=session.id if session else "",
            agent=session.agent if session else "generic",
            cwd=session.cwd if session else None,
            started_at=self._started or (session.started_at if session else None),
            updated_at=self._updated or (session.updated_at if session else None),
            title=title,
            requests=[*self._requests_head, *self._requests_tail],
            rules=rules,
            decisions=decisions,
            corrections=list(self._corrections),
            commands=commands,
            errors=errors,
            files=files,
            worklog=worklog,
            commits=list(self._commits),
            hooks=[self._clean(h) for h in self._hooks],
            hooks_block_commits=self._hooks_block_commits,
            tracker_commands=[self._clean(t) for t in self._trackers],
            ignored_paths=[show(p) for p in self._ignored],
            quoted_paths=[show(p) for p in self._quoted],
            end=end,
            counts=summary,
        )

    def _describe(self, call: _Call, show: Callable[[str], str]) -> str:
        if call.command:
            return f"`{self._clean(shorten(call.command, 160))}`"
        if call.paths:
            return f"{call.name} `{show(call.paths[0])}`"
        return call.name


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


def _supersedes(new: _Statement, old: _Statement) -> bool:
    """A later statement on the same subject replaces an earlier one when it is a decision, a
    correction, or names what the earlier one chose."""
    if new.kind in (StatementKind.DECISION, StatementKind.CORRECTION, StatementKind.RENAME):
        # "No, don't use npm — use pnpm" after "this repo uses pnpm": a restatement
        return not (new.chosen and new.chosen.lower() in old.text.lower())
    if new.replaces and new.replaces.lower() in old.text.lower():
        return True
    return bool(old.chosen and new.replaces and old.chosen.lower() == new.replaces.lower())


def _title_of(task: str, asks: bool = True) -> str | None:
    """A title from a request: its first sentence that asks for something (``asks``; else its
    first line), chat framing dropped, at most twelve words."""
    sentences = [p for p in _TITLE_SPLIT.split(task) if p.strip()][:12]
    chosen = next((p for p in sentences if asks and _ASKS.search(p)), first_line(task, 400))
    # a request that opens with the same instructions every time ("Work on bead rv-12. Run
    # `bd show rv-12`. Please follow AGENTS.md…"): the first sentence that names the specific
    # thing (an id, a path, code) says what this session is about
    named = next((p for p in sentences[:6] if _specific(p)), None)
    if named is not None and not _specific(chosen):
        chosen = named
    words = plain_statement(first_line(chosen, 400), capitalise=False).split()
    return shorten(" ".join(words[:12]), 100).rstrip(".") or None


_TITLE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
#: what names one thing: an id (``rv-12``, ``ABC-123``, ``#42``), a path, code in backticks
_SPECIFIC = re.compile(r"`[^`]{2,}`|#\d+\b|\b[A-Za-z][A-Za-z0-9]*-[A-Za-z0-9]*\d[A-Za-z0-9]*\b|"
                       r"\b[\w-]+/[\w./-]+|\b[\w-]+\.(?:py|ts|tsx|js|jsx|go|rs|rb|java|kt|md|"
                       r"json|toml|ya?ml|sql|css|html|vue|svelte|sh)\b")
#: files every session of a repo mentions (its agent instructions): nothing specific
_BOILERPLATE_FILES = re.compile(r"\b(?:AGENTS|CLAUDE|GEMINI|README|CONTRIBUTING|CONVENTIONS)"
                                r"\.md\b", re.IGNORECASE)


def _specific(sentence: str) -> bool:
    return _SPECIFIC.search(_BOILERPLATE_FILES.sub("", sentence)) is not None


_ASKS = re.compile(
    r"\b(?:fix|add|implement|make|update|create|write|build|change|refactor|rename|remove|"
    r"delete|migrate|debug|investigate|set up|install|deploy|switch|move|port|upgrade|support|"
    r"work on|continue|resolve|address|tackle|pick up|"
    r"please|can you|could you|let'?s|need|want|why|how)\b|\?",
    re.IGNORECASE,
)


def analyse_session(messages: Iterable[Message], session: Session | None = None,
                    workspace: Path | None = None, limits: Limits | None = None
                    ) -> SessionAnalysis:
    """The analysis of ``messages`` (any iterable, consumed once, oldest first)."""
    analyser = SessionAnalyser(session, workspace, limits)
    analyser.feed_all(messages)
    return analyser.result()
