"""Names and payloads of every custom message between the Reverie server and its clients.

This module is the contract the VS Code extension mirrors (``docs/protocol.md`` documents it,
``reverie.lsp.contract`` generates the client's ``protocol.ts`` from it). Every payload is a
pydantic model whose JSON keys are camelCase; command arguments are a single JSON object (or
nothing), command results are JSON objects. The names (command ids, notification methods,
option keys) are here; the payload models are in ``reverie.lsp.payloads``, one module per kind
of message, and re-exported here: import them from this module.
"""

from __future__ import annotations

from pydantic import BaseModel

from reverie.lsp.payloads.arguments import (
    AgentContextArgs,
    ApplyReviewArgs,
    CancelJobArgs,
    CheckMemoryArgs,
    ConnectAgentArgs,
    ConnectionsArgs,
    CurateArgs,
    DiscardReviewArgs,
    DisconnectAgentArgs,
    DreamArgs,
    FactArgs,
    HistoryArgs,
    ListSessionsArgs,
    LockStatusArgs,
    ModelTestArgs,
    OpenAnchorArgs,
    ProvidersArgs,
    ReviewsArgs,
    SessionArgs,
    SleepArgs,
    StatusArgs,
    UndoArgs,
)
from reverie.lsp.payloads.client import (
    AppendMessagesParams,
    EditorStorage,
    PushedMessage,
    PushedToolCall,
    PushedUsage,
)
from reverie.lsp.payloads.notifications import (
    JobEventPayload,
    MemorySaved,
    SessionNotesUpdated,
)
from reverie.lsp.payloads.results import (
    AgentContext,
    AgentContextPart,
    AgentContextResult,
    CancelJobResult,
    ConnectAgentResult,
    ConnectedAgent,
    ConnectFile,
    Connection,
    ConnectionFile,
    ConnectionsResult,
    CurateResult,
    HistoryResult,
    HistoryRun,
    JobInfo,
    JobOutcome,
    JobStarted,
    LockStatusResult,
    ModelTestResult,
    ProviderInfo,
    ProvidersResult,
    ReviewChange,
    ReviewOutcomeResult,
    ReviewsResult,
    RunFile,
    SessionNotesResult,
    SessionRow,
    SessionsResult,
    SessionSummary,
    SpendInfo,
    StagedReview,
    StatusResult,
    UndoResult,
    UsageToday,
    WorkspaceConnections,
)
from reverie.lsp.payloads.wire import (
    Args,
    JobEventType,
    JobKindName,
    OutcomeType,
    Wire,
    camel_keys,
)

__all__ = [
    "EDITOR_STORAGE_OPTION",
    "SETTINGS_SECTION",
    "AgentContext",
    "AgentContextArgs",
    "AgentContextPart",
    "AgentContextResult",
    "AppendMessagesParams",
    "ApplyReviewArgs",
    "Args",
    "CancelJobArgs",
    "CancelJobResult",
    "CheckMemoryArgs",
    "Commands",
    "ConnectAgentArgs",
    "ConnectAgentResult",
    "ConnectFile",
    "ConnectedAgent",
    "Connection",
    "ConnectionFile",
    "ConnectionsArgs",
    "ConnectionsResult",
    "CurateArgs",
    "CurateResult",
    "DiscardReviewArgs",
    "DisconnectAgentArgs",
    "DreamArgs",
    "EditorStorage",
    "FactArgs",
    "HistoryArgs",
    "HistoryResult",
    "HistoryRun",
    "JobEventPayload",
    "JobEventType",
    "JobInfo",
    "JobKindName",
    "JobOutcome",
    "JobStarted",
    "ListSessionsArgs",
    "LockStatusArgs",
    "LockStatusResult",
    "MemorySaved",
    "ModelTestArgs",
    "ModelTestResult",
    "Notifications",
    "OpenAnchorArgs",
    "OutcomeType",
    "ProviderInfo",
    "ProvidersArgs",
    "ProvidersResult",
    "PushedMessage",
    "PushedToolCall",
    "PushedUsage",
    "ReviewChange",
    "ReviewOutcomeResult",
    "ReviewsArgs",
    "ReviewsResult",
    "RunFile",
    "SessionArgs",
    "SessionNotesResult",
    "SessionNotesUpdated",
    "SessionRow",
    "SessionSummary",
    "SessionsResult",
    "SleepArgs",
    "SpendInfo",
    "StagedReview",
    "StatusArgs",
    "StatusResult",
    "UndoArgs",
    "UndoResult",
    "UsageToday",
    "Wire",
    "WorkspaceConnections",
    "build_schemas",
    "camel_keys",
]

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

#: the key of ``initializationOptions`` that carries ``EditorStorage`` (beside ``reverie``)
EDITOR_STORAGE_OPTION = "editorStorage"


def build_schemas() -> None:
    """Build every payload schema now (they are deferred to keep start-up fast); called after
    ``initialize`` has been answered so the first commands do not pay for it."""
    pending: list[type[BaseModel]] = [Wire]
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        model.model_rebuild()
