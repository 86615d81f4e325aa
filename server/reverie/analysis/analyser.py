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
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from reverie.analysis.commands import CommandCategory, CommandInfo, analyse_command
from reverie.analysis.failures import FailureTracking
from reverie.analysis.models import Commit, Evidence, Request, SessionAnalysis
from reverie.analysis.outcomes import (
    edit_essence,
    edited_symbols,
    is_rejection,
    is_slip,
    output_verdict,
    result_failed,
    shorten,
    still_running,
    without_edits,
)
from reverie.analysis.requests import (
    _ASKS_BACK,
    _MENU_CHOICE,
    _RETRACTION,
    _looks_pasted,
    _supersedes,
    _title_of,
    bare_answer,
)
from reverie.analysis.result import build_result
from reverie.analysis.shell_files import shell_edits, shell_reads
from reverie.analysis.slash import split_commands
from reverie.analysis.statements import StatementKind, is_correction, split_request
from reverie.analysis.workflow import WorkflowNotes, reads_hook_file
from reverie.analysis.working import (
    _SEARCH_COMMANDS,
    POLL_TOOLS,
    Limits,
    _bounded_output,
    _Call,
    _Change,
    _Command,
    _Failure,
    _File,
    _Resolved,
    _Statement,
    _Step,
    command_of,
)
from reverie.redact import redact_value
from reverie.transcripts.model import Message, Session, ToolCall, ToolKind
from reverie.transcripts.wrappers import UserTextKind, classify_user_text

_RULE_KINDS = frozenset({StatementKind.RULE, StatementKind.PREFERENCE, StatementKind.NOTE,
                         StatementKind.CORRECTION})
_REQUEST_CHARS = 4_000
#: a non-zero exit that reports nothing wrong
_BENIGN_EXIT = re.compile(r"nothing to commit|nothing added to commit|no changes added to commit"
                          r"|Already up[ -]to[ -]date|Everything up-to-date", re.IGNORECASE)
#: a file an ``apply_patch`` patch creates
_ADDED = re.compile(r"^\*\*\* Add File: (\S.*?)\s*$", re.MULTILINE)
#: the last stage of a pipeline is a search: exit 1 with no output means it found nothing
_ENDS_IN_SEARCH = re.compile(r"(?:^|\|)\s*(?:grep|egrep|fgrep|rg|ag|ack)\b[^|]*$")
_RUN_EXIT = re.compile(r"(?:Command exited with code|exit code:?|exited with)\s*(-?\d+)", re.I)


class SessionAnalyser(FailureTracking, WorkflowNotes):
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
        self._probes: list[tuple[str, str]] = []
        self._missing: dict[str, str] = {}
        self._relocated: dict[str, str] = {}
        self._vcs: deque[str] = deque(maxlen=self.limits.commits)
        self._blocked: dict[str, list[str | int]] = {}
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
            if not failed and _shows_facts(call):
                self._succeeded(call.command, call.paths, result.output, call.evidence)
            self._outcome(call, failed, output, has_result=True)

    def feed_all(self, messages: Iterable[Message]) -> SessionAnalyser:
        for message in messages:
            self.feed(message)
        return self
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
        if _MENU_CHOICE.match(text) or (asked and bare_answer(text)):
            # "B", "2)", "y": a pick from the agent's menu; "M-Claude" after "which
            # repository?": an answer to the agent's question, not a task
            self._count("answers")
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
        patch = (call.input.get("patch") or call.input.get("input")) \
            if call.kind is ToolKind.EDIT else None
        adds = tuple(_ADDED.findall(patch[:20_000]))[:5] if isinstance(patch, str) else ()
        return _Call(self._seq, call.name, call.kind, tuple(call.file_paths[:5]), command, info,
                     essence, symbols, evidence, sidechain, adds)

    def _flush_pending(self) -> None:
        """Calls that never got a result by the next request (Aider logs none): an edit is
        taken as made, a command as neither passed nor failed."""
        for call in self._pending.values():
            self._outcome(call, False, "", has_result=False)
        self._pending.clear()

    # -- outcomes ---------------------------------------------------------------------------

    def _outcome(self, call: _Call, failed: bool, output: str, *, has_result: bool) -> None:
        self._settle(call, failed, output, has_result=has_result)
        if has_result and not failed and self._probes and call.name not in POLL_TOOLS:
            self._moved_on()  # after the call's own pass, which may resolve a probe first

    def _settle(self, call: _Call, failed: bool, output: str, *, has_result: bool) -> None:
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
                self._environment(call.command or info.main, output)
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
        if failed and not output.strip() and (info.key.split(" ", 1)[0] in _SEARCH_COMMANDS
                                              or _ENDS_IN_SEARCH.search(call.command or "")):
            return  # a search that found nothing (``journalctl … | grep TLS``: no such line)
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
            # a command that is not the project's, run once by the agent, is a probe until the
            # session shows it mattered (it fails again, or nothing works after it)
            probe = info.category is CommandCategory.OTHER and call.name != "user_shell"
            self._fail(info.main, info.check_key or info.key, info, info.category, output,
                       call.evidence, probe=probe)
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
        if stats.edits == 1 and stats.reads == 0 and (call.kind is ToolKind.WRITE or any(
                path == added or path.endswith("/" + added) for added in call.adds)):
            stats.created = True
        for name in call.symbols:
            if name not in stats.symbols and len(stats.symbols) < 8:
                stats.symbols.append(name)

    # -- result -----------------------------------------------------------------------------

    def result(self, session: Session | None = None) -> SessionAnalysis:
        """The analysis of everything fed so far (``session``: the complete session record,
        when it was not known at the start)."""
        return build_result(self, session)


def _shows_facts(call: _Call) -> bool:
    """A successful call whose output the analysis reads: a commit, a commit hook read."""
    command = call.command or ""
    return "git commit" in command or "git pull" in command or "git push" in command \
        or reads_hook_file(command) or any(
        reads_hook_file(path) for path in call.paths)


def analyse_session(messages: Iterable[Message], session: Session | None = None,
                    workspace: Path | None = None, limits: Limits | None = None
                    ) -> SessionAnalysis:
    """The analysis of ``messages`` (any iterable, consumed once, oldest first)."""
    analyser = SessionAnalyser(session, workspace, limits)
    analyser.feed_all(messages)
    return analyser.result()
