"""Command results: the JSON object each ``workspace/executeCommand`` answers with.

The server always sends every field (the generated TypeScript marks them required).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_serializer

from reverie.agents.results import ConnectedFile, ConnectionInfo, ConnectResult, FileChange
from reverie.agents.results import ConnectionsResult as CoreConnectionsResult
from reverie.llm.cli_agent import ProviderChoice
from reverie.llm.probe import ProbeResult
from reverie.lsp.payloads.wire import JobKindName, OutcomeType, Wire, camel_keys
from reverie.memory.history import RunRecord
from reverie.memory.lock import LockStatus
from reverie.services.given import AgentGiven, GivenPart, GivenReport


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
