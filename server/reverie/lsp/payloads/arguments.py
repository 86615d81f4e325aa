"""Command arguments (``workspace/executeCommand``): a single JSON object, or nothing.

Unknown keys are refused with their names (``Args``: ``extra="forbid"``).
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from reverie.lsp.payloads.wire import Args, Wire


class StatusArgs(Args):
    pass


class ListSessionsArgs(Args):
    pass


class SessionArgs(Args):
    """``sessionNotes`` / ``updateNotes``: default is the workspace's current session."""

    session_id: str | None = None


class DreamArgs(Args):
    extra_context: str | None = None
    logs_mode: bool = False


class SleepArgs(Args):
    #: the day the cycle reviews (YYYY-MM-DD); default: today
    date: dt.date | None = None


class LockStatusArgs(Args):
    pass


class HistoryArgs(Args):
    limit: int | None = Field(default=None, ge=1)
    #: only this run (an id or unique prefix)
    run_id: str | None = None
    #: with ``run_id``: add ``changes: [{path, before, after}]`` (texts; null where absent)
    with_contents: bool = False


class CheckMemoryArgs(Args):
    pass


class FactArgs(Args):
    """A fact of a topic file: the file's URI and a 0-based line of its bullet."""

    uri: str
    line: int = Field(ge=0)


class OpenAnchorArgs(Args):
    #: the topic file the fact is in (it names the workspace)
    uri: str
    #: the anchor's path, relative to the workspace
    path: str


class UndoArgs(Args):
    #: default: the latest dream or sleep run still in effect (never an undo)
    run_id: str | None = None
    #: undo the latest undo instead (a redo); not with ``run_id``
    redo: bool = False
    #: go ahead even when the undo discards hand edits made after the run (refused otherwise,
    #: with a message naming them; they stay in the history)
    discard_edits: bool = False


class CurateArgs(Args):
    """``curate``: forget, pin, unpin, edit or move one entry of the memory."""

    action: Literal["forget", "pin", "unpin", "edit", "move"]
    #: ``FILE:LINE`` (1-based, ``MEMORY.md:3``) or a piece of the entry's text
    entry: str = Field(min_length=1, max_length=4000)
    #: the line's text as the editor showed it: refused when the file changed since
    expect: str | None = Field(default=None, max_length=100_000)
    #: ``edit``: the entry's new text (one line)
    new_text: str | None = Field(default=None, max_length=100_000)
    #: ``move``: the topic file the entry moves to
    to_file: str | None = Field(default=None, max_length=255)


class ReviewsArgs(Args):
    """``reviews``: the staged change sets of the workspace's memory."""

    #: each change with ``before`` (the live text) and ``after`` (the staged text)
    with_contents: bool = False


class AgentContextArgs(Args):
    pass


class ApplyReviewArgs(Args):
    review_id: str = Field(min_length=1, max_length=100)
    #: accept only these files (default: all); the rest are discarded
    files: list[str] | None = Field(default=None, max_length=1000)


class DiscardReviewArgs(Args):
    review_id: str = Field(min_length=1, max_length=100)


class ConnectAgentArgs(Args):
    #: ``claude-code``, ``codex``, ``gemini`` or ``aider``
    agent: str
    scope: Literal["personal", "project"] = "personal"
    #: only compute the change: the result's ``diff`` is what would be written
    dry_run: bool = False


class DisconnectAgentArgs(Args):
    agent: str
    dry_run: bool = False


class ConnectionsArgs(Args):
    pass


class CancelJobArgs(Wire):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True
    )

    job_id: str


class ModelTestArgs(Args):
    pass


class ProvidersArgs(Args):
    pass
