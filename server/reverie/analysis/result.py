"""The analysis a ``SessionAnalyser`` has built so far, as a ``SessionAnalysis``: every text that
becomes a fact is redacted here, paths are shown relative to the session's directory, and the
end state (latest request, last reply, what is still in progress) is read off the last turn.
"""

from __future__ import annotations

import posixpath
from collections import deque
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Protocol

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
from reverie.analysis.outcomes import prose, shorten
from reverie.analysis.requests import _title_of
from reverie.analysis.statements import StatementKind, avoided
from reverie.analysis.working import (
    Limits,
    _Call,
    _Change,
    _Command,
    _Failure,
    _File,
    _Resolved,
    _Statement,
    _Step,
)
from reverie.transcripts.model import Session
from reverie.transcripts.redacted import redact_session

_RULE_KINDS = frozenset({StatementKind.RULE, StatementKind.PREFERENCE, StatementKind.NOTE,
                         StatementKind.CORRECTION})
_REPLY_CHARS = 3_000


class AnalyserState(Protocol):
    """What ``build_result`` reads of a ``SessionAnalyser``'s working state (a protocol, so that
    this module does not import the analyser that imports it)."""

    session: Session | None
    workspace: Path | None
    limits: Limits
    _counts: dict[str, int]
    _redactions: int
    _files: dict[str, _File]
    _commands: dict[str, _Command]
    _open: dict[str, dict[str, _Failure]]
    _resolved: deque[_Resolved]
    _changes: int
    _relocated: dict[str, str]
    _vcs: deque[str]
    _blocked: dict[str, list[str | int]]
    _requests_head: list[Request]
    _requests_tail: deque[Request]
    _statements: list[_Statement]
    _corrections: deque[Request]
    _title: str | None
    _first_request: str | None
    _steps: deque[_Step]
    _step: _Step
    _last_request: tuple[str, Evidence] | None
    _last_reply: str | None
    _final: str | None
    _turn_calls: list[_Call]
    _turn_open: bool
    _last_check: tuple[str, bool] | None
    _started: datetime | None
    _updated: datetime | None
    _commits: deque[Commit]
    _results_seen: bool
    _hooks: dict[str, None]
    _trackers: dict[str, None]
    _ignored: dict[str, None]
    _quoted: dict[str, None]
    _hooks_block_commits: bool

    def _clean(self, text: str) -> str: ...

    def _settle_user_command(self) -> None: ...

    def _flush_pending(self) -> None: ...


def _show(path: str, roots: list[str]) -> str:
    for root in roots:
        if path == root:
            return "."
        if path.startswith(root + "/"):
            return path[len(root) + 1:]
    return path


def build_result(state: AnalyserState, session: Session | None = None) -> SessionAnalysis:
    """The analysis of everything fed so far (``session``: the complete session record,
    when it was not known at the start)."""
    state._settle_user_command()
    session = session or state.session
    # an agent that logs no results at all (Aider) logs a call once it is done
    logs_results = state._results_seen or (session is not None and session.agent != "aider")
    if not logs_results:
        state._flush_pending()
    if session is not None:
        session = redact_session(session)  # its title is shortened below
    roots = [r.rstrip("/") for r in (
        session.cwd if session else None,
        str(state.workspace) if state.workspace else None,
    ) if r]

    def show(path: str) -> str:
        return state._clean(_show(path, roots))

    def places(missing: str, found: str) -> tuple[str, str]:
        """The two paths from the directory they share (``M-Claude``, ``Documents/M-Claude``):
        the session may have ``cd``-ed anywhere, their common part is the place they name."""
        common = posixpath.commonpath([missing, found]) if missing.startswith("/") and \
            found.startswith("/") else ""
        if common in ("", "/"):
            return state._clean(missing), state._clean(found)
        return (state._clean(posixpath.relpath(missing, common)),
                state._clean(posixpath.relpath(found, common)))

    def change(item: _Change | None) -> Change | None:
        if item is None:
            return None
        essence = state._clean(item.essence) if item.essence else None
        command = state._clean(shorten(item.command, 200)) if item.command else None
        return Change(path=show(item.path) if item.path else "", essence=essence,
                      evidence=item.evidence, command=command)

    errors: list[ErrorFix] = []
    for resolved in state._resolved:
        failure = resolved.failure
        errors.append(ErrorFix(
            check=state._clean(shorten(failure.check, 200)),
            category=failure.category,
            error=state._clean(failure.error_raw),
            failed_at=failure.evidence,
            failures=failure.count,
            status="fixed" if resolved.status == "fixed" else "passed",
            fix=change(resolved.fix),
            other_changes=resolved.other_changes,
            proved_by=state._clean(shorten(resolved.proved_by or "", 200)) or None,
            proved_at=resolved.proved_at,
        ))
    still = sorted((f for bucket in state._open.values() for f in bucket.values()),
                   key=lambda f: f.changes_at)
    for failure in still[-state.limits.errors:]:
        errors.append(ErrorFix(
            check=state._clean(shorten(failure.check, 200)),
            category=failure.category,
            error=state._clean(failure.error_raw),
            failed_at=failure.evidence,
            failures=failure.count,
            status="still_failing",
            changed_since=state._changes - failure.last_at,
        ))
    rules: list[Rule] = []
    decisions: list[Decision] = []
    for statement in state._statements:
        if statement.kind in _RULE_KINDS:
            if len(rules) < state.limits.rules:
                rules.append(Rule(
                    kind=statement.kind, text=statement.text, subject=statement.subject,
                    replaces=statement.replaces, chosen=statement.chosen,
                    avoid=avoided(statement.text),
                    evidence=statement.evidence, superseded_by=statement.superseded_by))
        elif len(decisions) < state.limits.decisions:
            decisions.append(Decision(
                kind="rename" if statement.kind is StatementKind.RENAME else "decision",
                text=statement.text, subject=statement.subject,
                replaces=statement.replaces, chosen=statement.chosen,
                evidence=statement.evidence, superseded_by=statement.superseded_by))
    files: dict[str, FileActivity] = {}
    for path, s in state._files.items():
        shown = show(path)
        seen = files.get(shown)  # one file named absolute and relative: one entry
        if seen is None:
            files[shown] = FileActivity(path=shown, reads=s.reads, edits=s.edits,
                                        created=s.created, first_seen=s.first_seen,
                                        symbols=[state._clean(n) for n in s.symbols])
            continue
        more = [n for n in (state._clean(n) for n in s.symbols) if n not in seen.symbols]
        files[shown] = seen.model_copy(update={
            "reads": seen.reads + s.reads, "edits": seen.edits + s.edits,
            "created": seen.created or s.created, "symbols": [*seen.symbols, *more]})
    forbidden = {word for statement in state._statements
                 if statement.kind in _RULE_KINDS and statement.superseded_by is None
                 for word in avoided(statement.text)}
    commands = [
        ProjectCommand(
            category=c.category, key=c.key,
            working=state._clean(shorten(c.working, 300)) if c.working else None,
            last=state._clean(shorten(c.last, 300)), runs=c.runs, failures=c.failures,
            last_ok=c.last_ok, evidence=c.evidence, scope=sorted(c.scope))
        for c in state._commands.values()
        # a command a current rule forbids ("never npm") is not the project's way
        if c.key.split(" ", 1)[0].lower() not in forbidden
    ]
    steps = [*state._steps]
    if not state._step.empty() or state._step.request is not None:
        steps.append(state._step)
    worklog = [WorkStep(request=s.request, reads=s.reads, searches=s.searches,
                        commands=s.commands, edited=[state._clean(e) for e in s.edited],
                        edited_more=s.edited_more, failed=s.failed) for s in steps]
    in_progress = (
        [_describe(state, c, show) for c in state._turn_calls[-3:]]
        if state._turn_open and logs_results else []
    )
    final = None
    if not state._turn_open and state._final is not None:
        final = state._clean(state._final)[:_REPLY_CHARS]
    end = EndState(
        last_request=state._last_request[0] if state._last_request else None,
        last_request_at=state._last_request[1] if state._last_request else None,
        last_reply=shorten(state._clean(prose(state._last_reply))[:_REPLY_CHARS], 500)
        if state._last_reply and prose(state._last_reply) else None,
        final_answer=final,
        in_progress=in_progress,
        last_check=state._clean(shorten(state._last_check[0], 200)) if state._last_check
        else None,
        last_check_ok=state._last_check[1] if state._last_check else None,
    )
    counts = dict(state._counts)
    counts["worklog_dropped"] = max(0, len(steps) - len(worklog))
    counts["redactions"] = state._redactions
    summary = Summarised(**{k: v for k, v in counts.items() if k in Summarised.model_fields})
    title = state._title
    if title is None and state._first_request is not None:
        title = _title_of(state._first_request)
    if title is None and session is not None and session.title:
        title = state._clean(shorten(session.title, 100))
    return SessionAnalysis(
        session_id=session.id if session else "",
        agent=session.agent if session else "generic",
        cwd=session.cwd if session else None,
        started_at=state._started or (session.started_at if session else None),
        updated_at=state._updated or (session.updated_at if session else None),
        title=title,
        requests=[*state._requests_head, *state._requests_tail],
        rules=rules,
        decisions=decisions,
        corrections=list(state._corrections),
        commands=commands,
        errors=errors,
        files=list(files.values()),
        worklog=worklog,
        commits=list(state._commits),
        hooks=[state._clean(h) for h in state._hooks],
        hooks_block_commits=state._hooks_block_commits,
        tracker_commands=[state._clean(t) for t in state._trackers],
        ignored_paths=[show(p) for p in state._ignored],
        quoted_paths=[show(p) for p in state._quoted],
        relocated_paths=[places(a, b) for a, b in state._relocated.items()],
        vcs=list(state._vcs),
        blocked=[state._clean(f"`{cmd}` ({n}×): {error}") for cmd, error, n in
                 state._blocked.values() if int(n) > 1],
        end=end,
        counts=summary,
    )


def _describe(state: AnalyserState, call: _Call, show: Callable[[str], str]) -> str:
    if call.command:
        return f"`{state._clean(shorten(call.command, 160))}`"
    if call.paths:
        return f"{call.name} `{show(call.paths[0])}`"
    return call.name
