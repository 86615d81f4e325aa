"""Names and payloads of every custom message between the Reverie server and its clients.

This module is the contract the VS Code extension mirrors (``docs/protocol.md`` documents it).
Every payload is a pydantic model whose JSON keys are camelCase; command arguments are a single
JSON object (or nothing), command results are JSON objects.
"""

from __future__ import annotations

import datetime as dt
import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer
from pydantic.alias_generators import to_camel

from reverie.agents.results import ConnectedFile, ConnectionInfo, ConnectResult, FileChange
from reverie.agents.results import ConnectionsResult as CoreConnectionsResult
from reverie.events import EventType
from reverie.llm.cli_agent import ProviderChoice
from reverie.llm.probe import ProbeResult
from reverie.memory.history import RunRecord
from reverie.memory.lock import LockStatus
from reverie.services.given import AgentGiven, GivenPart, GivenReport

# --- names -------------------------------------------------------------------------------------


class Commands:
    """``workspace/executeCommand`` ids the server registers."""

    STATUS = "reverie.server.status"
    LIST_SESSIONS = "reverie.server.listSessions"
    SESSION_NOTES = "reverie.server.sessionNotes"
    UPDATE_NOTES = "reverie.server.updateNotes"
    DREAM = "reverie.server.dream"
    SLEEP = "reverie.server.sleep"
    LOCK_STATUS = "reverie.server.lockStatus"
    HISTORY = "reverie.server.history"
    UNDO = "reverie.server.undo"
    CANCEL_JOB = "reverie.server.cancelJob"
    CONNECT_AGENT = "reverie.server.connectAgent"
    DISCONNECT_AGENT = "reverie.server.disconnectAgent"
    CONNECTIONS = "reverie.server.connections"
    TEST_MODEL = "reverie.server.testModel"
    PROVIDERS = "reverie.server.providers"
    CURATE = "reverie.server.curate"
    REVIEWS = "reverie.server.reviews"
    APPLY_REVIEW = "reverie.server.applyReview"
    DISCARD_REVIEW = "reverie.server.discardReview"
    #: the memory checked against the code: exactly ``reverie check --json``
    CHECK_MEMORY = "reverie.server.checkMemory"
    RETIRE_FACT = "reverie.server.retireFact"
    KEEP_FACT = "reverie.server.keepFact"
    OPEN_ANCHOR = "reverie.server.openAnchor"
    #: what each connected agent loads: ``reverie connections --given --json``
    AGENT_CONTEXT = "reverie.server.agentContext"

    ALL = (
        STATUS,
        LIST_SESSIONS,
        SESSION_NOTES,
        UPDATE_NOTES,
        DREAM,
        SLEEP,
        LOCK_STATUS,
        HISTORY,
        UNDO,
        CANCEL_JOB,
        CONNECT_AGENT,
        DISCONNECT_AGENT,
        CONNECTIONS,
        TEST_MODEL,
        PROVIDERS,
        CURATE,
        REVIEWS,
        APPLY_REVIEW,
        DISCARD_REVIEW,
        CHECK_MEMORY,
        RETIRE_FACT,
        KEEP_FACT,
        OPEN_ANCHOR,
        AGENT_CONTEXT,
    )


class Notifications:
    """Custom notification methods (server -> client unless marked otherwise)."""

    MEMORY_SAVED = "reverie/memorySaved"
    SESSION_NOTES_UPDATED = "reverie/sessionNotesUpdated"
    JOB_EVENT = "reverie/jobEvent"
    LOCK_CHANGED = "reverie/lockChanged"
    #: client -> server
    APPEND_MESSAGES = "reverie/appendMessages"


#: the configuration section (``workspace/configuration`` and ``initializationOptions``)
SETTINGS_SECTION = "reverie"

JobKindName = Literal["session_memory", "dream", "sleep"]
JobEventType = EventType  # every runtime event type of the core reaches the client as is
OutcomeType = Literal["complete", "skipped", "cancelled", "error"]


_SNAKE_KEY = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")


def camel_keys(value: Any) -> Any:
    """Free-form event payloads camelCase like the rest of the wire: only snake_case
    identifiers are renamed, so file and model names used as keys pass unchanged."""
    if isinstance(value, dict):
        return {
            (to_camel(k) if isinstance(k, str) and _SNAKE_KEY.match(k) else k): camel_keys(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    return value


class Wire(BaseModel):
    """Base of every payload: camelCase on the wire, snake_case in Python."""

    # schemas are built on first use: keeps ``reverie serve`` quick to answer ``initialize``
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        defer_build=True,
        # the server always sends every field: the generated TypeScript marks them required
        json_schema_serialization_defaults_required=True,
    )

    def wire(self) -> dict[str, Any]:
        """The JSON object sent to the client."""
        return self.model_dump(mode="json", by_alias=True)


class Args(Wire):
    """Base of command arguments: unknown keys are an error that names them."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True
    )

    #: workspace folder (URI or path) the command applies to; default: the first folder
    workspace: str | None = None


# --- command arguments -------------------------------------------------------------------------


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


# --- command results ---------------------------------------------------------------------------


class JobStarted(Wire):
    """Commands that start a job answer at once with its id; the rest arrives as notifications.

    A dream or sleep asked for while one runs answers with the running job (``alreadyRunning``)
    rather than an error, so the editor can show and cancel it."""

    job_id: str
    title: str = ""
    already_running: bool = False


class SessionSummary(Wire):
    session_id: str
    agent: str
    path: str
    cwd: str | None = None
    updated_at: datetime | None = None
    parent_session_id: str | None = None


class JobInfo(Wire):
    """A job that is running now."""

    job_id: str
    kind: JobKindName
    workspace: str | None = None
    session_id: str | None = None
    title: str
    started_at: datetime
    last_message: str = ""


class JobOutcome(Wire):
    """How the last job of a kind ended."""

    job_id: str
    kind: JobKindName
    type: OutcomeType
    message: str = ""
    finished_at: datetime
    payload: dict[str, Any] = Field(default_factory=dict)

    @field_serializer("payload")
    def _camel_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        return dict(camel_keys(payload))


class UsageToday(Wire):
    """Model tokens used by this server today (UTC day); cost only when prices are configured."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    calls: int = 0


class ConnectedAgent(Wire):
    agent: str
    scope: str
    mode: str
    #: every file still holds Reverie's block / hooks
    intact: bool


class WorkspaceConnections(Wire):
    """``status``: which agents one workspace folder has connected, and which have sessions."""

    workspace: str
    connected: list[ConnectedAgent] = Field(default_factory=list)
    detected: list[str] = Field(default_factory=list)


class SpendInfo(Wire):
    """The cost governor's ledger (``reverie.llm.budget``): spent today / this month, the caps
    (0: none) and the same as a sentence for the status bar."""

    day: str
    tokens_today: int
    tokens_month: int
    cost_today: float
    cost_month: float
    daily_token_cap: int
    monthly_token_cap: int
    daily_cost_cap: float
    monthly_cost_cap: float
    #: the pre-run estimate per job kind (``dream``, ``session_memory``, ``sleep``): tokens,
    #: and dollars where a price is known (else null)
    estimates: dict[str, int] = Field(default_factory=dict)
    estimated_costs: dict[str, float | None] = Field(default_factory=dict)
    summary: str


class StatusResult(Wire):
    version: str
    pid: int
    workspace_folders: list[str]
    sessions_tracked: int
    current_session: SessionSummary | None = None
    running_jobs: list[JobInfo] = Field(default_factory=list)
    last_results: dict[str, JobOutcome] = Field(default_factory=dict)
    tokens_today: UsageToday = Field(default_factory=UsageToday)
    cost_today: float | None = None
    provider: str
    model: str | None = None
    offline: bool
    connections: list[WorkspaceConnections] = Field(default_factory=list)
    #: the worker processes running now, by role (``parse``, ``load``, ``notes``, ``dream``): pid
    workers: dict[str, int] = Field(default_factory=dict)
    #: model spend against the cost governor's caps (null while it cannot be read)
    spend: SpendInfo | None = None


class SessionRow(Wire):
    """One agent session of the workspace, as ``listSessions`` lists it."""

    agent: str
    session_id: str
    path: str
    messages: int
    tokens: int
    updated_at: datetime
    #: the session the workspace works in now (the newest top-level session)
    current: bool
    #: the agent's own title, else the first prompt (null when unknown)
    title: str | None = None
    #: Reverie has written notes for this session
    has_notes: bool = False


class SessionsResult(Wire):
    """``listSessions``: the workspace's agent sessions, newest first."""

    sessions: list[SessionRow]


class SessionNotesResult(Wire):
    session_id: str
    path: str
    #: the notes text; empty when no notes have been written yet (``exists`` false)
    content: str
    exists: bool


class RunFile(Wire):
    """One file of a history run with its texts before and after (null where absent)."""

    path: str
    before: str | None
    after: str | None


class HistoryRun(Wire):
    """One run of the memory history (``reverie.memory.history.RunRecord``)."""

    run_id: str
    at: datetime
    source: Literal["auto", "manual", "sleep", "undo", "edit", "curate"]
    added: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    sessions: list[str] = Field(default_factory=list)
    summary: str = ""
    #: the run this one undoes (``source`` ``undo``)
    undoes: str | None = None
    #: an undo run undid this run (and no later undo redid it)
    undone: bool = False
    #: with ``withContents``: every file the run touched, before and after
    changes: list[RunFile] | None = None

    @classmethod
    def of(cls, record: RunRecord, *, undone: bool = False) -> HistoryRun:
        return cls.model_validate({**record.model_dump(), "undone": undone})


class CurateResult(Wire):
    """``curate``: what was done to which entry, and the run that ``undo`` reverts."""

    action: str
    memory_dir: str
    file: str
    line: int
    text: str
    new_text: str | None = None
    to_file: str | None = None
    run_id: str | None = None
    files: list[str] = Field(default_factory=list)
    removed_topic: str | None = None
    message: str


class ReviewChange(Wire):
    path: str
    #: ``add``, ``change`` or ``remove``
    action: str
    reason: str
    sessions: list[str] = Field(default_factory=list)
    before: str | None = None
    after: str | None = None


class StagedReview(Wire):
    """A change set waiting for a person: a dream's (``reverie.dreamReview``; ``source``
    ``auto`` / ``manual``) or an agent's proposal (``source`` ``agent``, over MCP)."""

    review_id: str
    memory_dir: str
    created_at: datetime
    source: str
    summary: str
    proposed_by: str | None = None
    #: the proposed text needs a careful read (``reverie.hazards``): no one-click accept
    hazard: str | None = None
    sessions: list[str] = Field(default_factory=list)
    changes: list[ReviewChange] = Field(default_factory=list)


class AgentContextPart(Wire, GivenPart):
    """One thing an agent loads: a managed block, the memory it brings in, a hook's text."""


class AgentContext(Wire, AgentGiven):
    parts: list[AgentContextPart] = Field(default_factory=list)  # type: ignore[assignment]


class AgentContextResult(Wire, GivenReport):
    """``agentContext``: what each connected agent of the folder loads, with token sizes."""

    agents: list[AgentContext] = Field(default_factory=list)  # type: ignore[assignment]


class ReviewsResult(Wire):
    memory_dir: str
    reviews: list[StagedReview]


class ReviewOutcomeResult(Wire):
    """``applyReview`` / ``discardReview``: what landed, what was dropped, the run to undo."""

    review_id: str
    accepted: list[str] = Field(default_factory=list)
    discarded: list[str] = Field(default_factory=list)
    run_id: str | None = None
    message: str


class HistoryResult(Wire):
    """``history``: the runs of the workspace's memory directory, newest first."""

    memory_dir: str
    runs: list[HistoryRun]


class UndoResult(Wire):
    """``undo``: what the undo did, in words fit for the user (``message``)."""

    memory_dir: str
    #: the run that was undone
    undone_run_id: str
    #: the undo's own run (null when nothing changed and so nothing was recorded)
    run: HistoryRun | None
    #: memory files changed by the undo
    changed: bool
    files: list[str] = Field(default_factory=list)
    message: str


class LockStatusResult(Wire, LockStatus):
    """``lockStatus`` and ``reverie/lockChanged`` (``reverie.memory.lock.LockStatus``)."""


class ConnectFile(Wire, FileChange):
    """One file ``connectAgent`` / ``disconnectAgent`` writes (or would write)."""


class ConnectAgentResult(Wire, ConnectResult):
    """``connectAgent`` / ``disconnectAgent`` (``reverie.agents.results.ConnectResult``)."""

    files: list[ConnectFile] = Field(default_factory=list)  # type: ignore[assignment]


class ConnectionFile(Wire, ConnectedFile):
    pass


class Connection(Wire, ConnectionInfo):
    files: list[ConnectionFile] = Field(default_factory=list)  # type: ignore[assignment]


class ConnectionsResult(Wire, CoreConnectionsResult):
    """``connections``: the agents connected in a workspace folder, and those with sessions."""

    connections: list[Connection] = Field(default_factory=list)  # type: ignore[assignment]


class CancelJobResult(Wire):
    job_id: str
    cancelled: bool
    message: str


class ProviderInfo(Wire, ProviderChoice):
    """One provider in ``reverie.server.providers`` (``reverie.llm.cli_agent.ProviderChoice``)."""


class ProvidersResult(Wire):
    """``reverie.server.providers``: what the editor's provider picker offers."""

    current: str
    providers: list[ProviderInfo]


class ModelTestResult(Wire, ProbeResult):
    """``reverie.server.testModel``: one small request to the configured model (the fields of
    ``reverie.llm.probe.ProbeResult``, camelCase on the wire)."""


# --- notifications -----------------------------------------------------------------------------


class MemorySaved(Wire):
    """``reverie/memorySaved``: a dream or sleep changed memory files."""

    memory_paths: list[str]
    verb: str
    source: str
    run_id: str | None = None
    message: str


class SessionNotesUpdated(Wire):
    """``reverie/sessionNotesUpdated``: an extraction finished (``edited``: the file changed)."""

    session_id: str
    path: str
    edited: bool


class JobEventPayload(Wire):
    """``reverie/jobEvent``: every runtime event of every job (``payload`` keys camelCase)."""

    job_id: str | None
    kind: str
    type: JobEventType
    payload: dict[str, Any] = Field(default_factory=dict)

    @field_serializer("payload")
    def _camel_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        return dict(camel_keys(payload))


# --- client -> server --------------------------------------------------------------------------


class PushedToolCall(Wire):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    name: str
    id: str | None = None
    input: dict[str, Any] = Field(default_factory=dict)
    file_paths: list[str] = Field(default_factory=list)


class PushedUsage(Wire):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class PushedMessage(Wire):
    """One chat message pushed by a client; ``content`` is accepted as a synonym of ``text``."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    role: Literal["user", "assistant", "system", "tool"]
    text: str = ""
    content: str | None = None
    id: str | None = None
    timestamp: datetime | None = None
    model: str | None = None
    tool_calls: list[PushedToolCall] = Field(default_factory=list)
    usage: PushedUsage | None = None


class AppendMessagesParams(Wire):
    """``reverie/appendMessages``: messages of an agent that writes no transcript."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    session_id: str = Field(min_length=1)
    cwd: str
    messages: list[PushedMessage]
    title: str | None = None


#: the key of ``initializationOptions`` that carries ``EditorStorage`` (beside ``reverie``)
EDITOR_STORAGE_OPTION = "editorStorage"


class EditorStorage(Wire):
    """``initializationOptions.editorStorage``: where the editor keeps the extension's data
    (VS Code's ``ExtensionContext.storageUri`` and ``globalStorageUri``). From them the server
    knows the current workspace's storage folder (``workspaceStorage/<hash>``, where VS Code
    keeps its chat sessions) and the user-data dir in use (Insiders, VSCodium, a profile,
    code-server), without computing the hash."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    #: ``.../User/workspaceStorage/<hash>/<publisher.name>`` (absent in an empty window)
    storage_uri: str | None = None
    #: ``.../User/globalStorage/<publisher.name>``
    global_storage_uri: str | None = None


def build_schemas() -> None:
    """Build every payload schema now (they are deferred to keep start-up fast); called after
    ``initialize`` has been answered so the first commands do not pay for it."""
    pending: list[type[BaseModel]] = [Wire]
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        model.model_rebuild()
