"""The facts one session yields: a small, picklable model (no ``Message`` objects in it).

Every text in it is redacted and shortened; every list is bounded, and what was left out is
counted in ``Summarised`` so that readers can say "… and 12,000 more" instead of pretending.
Paths are shown relative to the workspace (or the session's cwd) when they are inside it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from reverie.analysis.commands import CommandCategory
from reverie.analysis.statements import StatementKind


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Evidence(_Model):
    """Where a fact was said or seen: the message and its time."""

    message_id: str
    timestamp: datetime | None = None


class Request(_Model):
    """A one-off task the person asked for (never a rule)."""

    text: str
    evidence: Evidence


class Rule(_Model):
    """A standing rule, preference, note or correction: how to work, not what to do now."""

    kind: StatementKind
    text: str
    #: normalised subject; a later rule with the same subject supersedes this one
    subject: str
    #: the old choice it replaces, when it names one ("npm" in "use pnpm not npm")
    replaces: str | None = None
    chosen: str | None = None
    #: what it says not to use ("never npm or yarn" → npm, yarn), lower-case
    avoid: list[str] = Field(default_factory=list)
    evidence: Evidence
    #: the text of the later statement in this session that replaced it
    superseded_by: str | None = None


class Decision(_Model):
    """A decision or rename; ``replaces`` is the earlier choice or name it reverses."""

    kind: Literal["decision", "rename"]
    text: str
    subject: str
    replaces: str | None = None
    chosen: str | None = None
    evidence: Evidence
    superseded_by: str | None = None


class ProjectCommand(_Model):
    """A command that builds, tests, runs… the project, with the form that last worked."""

    category: CommandCategory
    #: the tool and subcommand (``pytest``, ``npm run build``)
    key: str
    #: the form that last succeeded (``None``: it never succeeded)
    working: str | None
    #: the form last run
    last: str
    runs: int
    failures: int
    last_ok: bool
    evidence: Evidence
    #: paths and selectors the working form was narrowed to (empty: the whole target)
    scope: list[str] = Field(default_factory=list)


class Change(_Model):
    """One edit: the file and the essence of what changed; or a command that changed the
    project (a code generator, a dependency added)."""

    path: str
    #: the edited symbol, or "old → new" of the replaced snippet, or "created"
    essence: str | None = None
    evidence: Evidence
    #: set when the change was a command (``sqlc generate``, ``uv add x``) rather than an edit
    #: (``path`` is then empty)
    command: str | None = None


class ErrorFix(_Model):
    """A failing command or check, and how (whether) it was made to pass."""

    #: the failing command (or ``tool path`` for a failing non-shell call)
    check: str
    category: CommandCategory
    error: str
    failed_at: Evidence
    #: how many times this check failed before it passed (or up to the end)
    failures: int = 1
    status: Literal["fixed", "passed", "still_failing"]
    #: the change before the first later passing run (``status == "fixed"``)
    fix: Change | None = None
    #: other edits between the failure and the pass (beside ``fix``)
    other_changes: int = 0
    #: the passing command that proved it (same or broader check)
    proved_by: str | None = None
    proved_at: Evidence | None = None
    #: changes made after its last failure (``still_failing``): it was not re-run since them
    changed_since: int = 0


class Commit(_Model):
    """A commit the agent made (Aider commits every edit), and whether ``/undo`` reverted it."""

    sha: str
    message: str
    evidence: Evidence
    undone: bool = False


class FileActivity(_Model):
    path: str
    reads: int = 0
    edits: int = 0
    created: bool = False
    symbols: list[str] = Field(default_factory=list)
    #: order of first appearance
    first_seen: int = 0


class WorkStep(_Model):
    """What the agent did for one request (the worklog)."""

    request: str | None
    reads: int = 0
    searches: int = 0
    commands: int = 0
    edited: list[str] = Field(default_factory=list)
    edited_more: int = 0
    failed: int = 0


class EndState(_Model):
    """How the session ends."""

    last_request: str | None = None
    last_request_at: Evidence | None = None
    #: the agent's last reply (shortened)
    last_reply: str | None = None
    #: the final deliverable: the last substantial reply to a real request (not to a
    #: notification), when the session ended on it
    final_answer: str | None = None
    #: calls of the last turn still waiting for their results
    in_progress: list[str] = Field(default_factory=list)
    #: the last project check that ran, and whether it passed
    last_check: str | None = None
    last_check_ok: bool | None = None


class Summarised(_Model):
    """What was counted rather than kept: the readers' "… N more"."""

    messages: int = 0
    tool_calls: int = 0
    requests: int = 0
    requests_dropped: int = 0
    rules_dropped: int = 0
    decisions_dropped: int = 0
    failures: int = 0
    errors_dropped: int = 0
    files_dropped: int = 0
    commands_dropped: int = 0
    worklog_dropped: int = 0
    #: agent tool-protocol slips (never project errors)
    slips: int = 0
    #: failed exploration (``ls`` of a missing dir) and empty searches: not errors
    exploration_failures: int = 0
    exploration_commands: int = 0
    other_commands: int = 0
    #: tool calls the user rejected
    rejected: int = 0
    notifications: int = 0
    #: bare picks from the agent's menu ("B", "2"): answers, not requests
    answers: int = 0
    #: one-off failures of commands that are not the project's, followed by work that went
    #: on (``tailscale status``: not installed): looking around, not errors
    probe_failures: int = 0
    redactions: int = 0
    sidechain_messages: int = 0


class SessionAnalysis(_Model):
    """Everything the offline engines need to know about one session."""

    session_id: str
    agent: str
    cwd: str | None = None
    started_at: datetime | None = None
    updated_at: datetime | None = None
    title: str | None = None
    requests: list[Request] = Field(default_factory=list)
    rules: list[Rule] = Field(default_factory=list)
    decisions: list[Decision] = Field(default_factory=list)
    #: corrections of the agent that are not general rules ("no, the flag is --json")
    corrections: list[Request] = Field(default_factory=list)
    commands: list[ProjectCommand] = Field(default_factory=list)
    errors: list[ErrorFix] = Field(default_factory=list)
    files: list[FileActivity] = Field(default_factory=list)
    worklog: list[WorkStep] = Field(default_factory=list)
    #: commits made in the session, oldest first (bounded; see ``Limits.commits``)
    commits: list[Commit] = Field(default_factory=list)
    #: pre-commit-style hooks seen failing (``- hook id: flake8``), in order of appearance
    hooks: list[str] = Field(default_factory=list)
    #: a ``git commit`` failed on such a hook (the hooks block commits)
    hooks_block_commits: bool = False
    #: the issue-tracker commands that worked, ids as ``<id>`` (``bd show <id>``)
    tracker_commands: list[str] = Field(default_factory=list)
    #: paths ``git add`` refused as gitignored
    ignored_paths: list[str] = Field(default_factory=list)
    #: paths that failed unquoted (zsh: "no matches found") and worked quoted
    quoted_paths: list[str] = Field(default_factory=list)
    #: a path that was not there and the one that was (``M-Claude`` -> ``Documents/M-Claude``)
    relocated_paths: list[tuple[str, str]] = Field(default_factory=list)
    #: what ``git pull`` / ``git push`` did (``pulled 82226fd..7a23400``), oldest first
    vcs: list[str] = Field(default_factory=list)
    #: what the environment refused more than once: the command, how often, the error
    blocked: list[str] = Field(default_factory=list)
    end: EndState = Field(default_factory=EndState)
    counts: Summarised = Field(default_factory=Summarised)

    @property
    def still_failing(self) -> list[ErrorFix]:
        return [e for e in self.errors if e.status == "still_failing"]

    @property
    def current_rules(self) -> list[Rule]:
        return [r for r in self.rules if r.superseded_by is None]
