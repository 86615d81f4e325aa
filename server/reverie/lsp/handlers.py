"""Every LSP feature and command handler of the Reverie server, and nothing else.

Handlers validate the wire payload (``reverie.lsp.protocol``) and call the server or the
workspace tracker; they hold no state. ``create_server`` registers them on a fresh server.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.uris import to_fs_path

from reverie.errors import UserError
from reverie.lsp import configuration, startup
from reverie.lsp.features import connections as agent_connections
from reverie.lsp.features import curation as entry_curation
from reverie.lsp.features import review as staged_reviews
from reverie.lsp.features import staleness
from reverie.lsp.protocol import (
    AgentContextArgs,
    AgentContextResult,
    AppendMessagesParams,
    ApplyReviewArgs,
    Args,
    CancelJobArgs,
    CancelJobResult,
    CheckMemoryArgs,
    Commands,
    ConnectAgentArgs,
    ConnectAgentResult,
    ConnectionsArgs,
    ConnectionsResult,
    CurateArgs,
    DiscardReviewArgs,
    DisconnectAgentArgs,
    DreamArgs,
    FactArgs,
    HistoryArgs,
    ListSessionsArgs,
    LockStatusArgs,
    ModelTestArgs,
    ModelTestResult,
    Notifications,
    OpenAnchorArgs,
    ProviderInfo,
    ProvidersArgs,
    ProvidersResult,
    ReviewsArgs,
    SessionArgs,
    SleepArgs,
    SpendInfo,
    StatusArgs,
    UndoArgs,
    Wire,
    build_schemas,
)
from reverie.lsp.server import ReverieLanguageServer
from reverie.lsp.status import status as server_status
from reverie.lsp.tracking import WorkspaceTracker

logger = logging.getLogger(__name__)

A = TypeVar("A", bound=Wire)
T = TypeVar("T")


class RequestFailed(JsonRpcException):
    """LSP ``RequestFailed``: the command was valid but could not be carried out."""

    CODE = -32803
    MESSAGE = "Request failed"


def parse_args(model: type[A], args: tuple[Any, ...]) -> A:
    """One JSON object argument, or none (VS Code sends ``arguments: [{...}]``)."""
    if len(args) == 0 or (len(args) == 1 and args[0] is None):
        raw: dict[str, Any] = {}
    elif len(args) == 1 and isinstance(args[0], dict):
        raw = args[0]
    else:
        raise JsonRpcInvalidParams(message="expected a single JSON object argument (or none)")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        message = f"invalid arguments: {describe(exc)}"
    # raised outside the handler so the refusal keeps no link to the ValidationError, which
    # holds the input (a refused 15 MB argument stayed in memory as long as the refusal did)
    raise JsonRpcInvalidParams(message=message)


def describe(exc: ValidationError) -> str:
    """One line naming each offending key: ``jobId: Field required; bogus: Extra inputs …``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
    )


async def _tracker(ls: ReverieLanguageServer, args: Args) -> WorkspaceTracker:
    await ls.wait_ready()
    try:
        return ls.tracker_for(args.workspace)
    except UserError as exc:
        raise RequestFailed(message=str(exc)) from None


async def _call(coro: Awaitable[T]) -> T:
    """Run a tracker call. What a person must fix (``UserError``) becomes a one-line
    ``RequestFailed``; anything else is a defect: it propagates, pygls logs its traceback and
    answers ``InternalError``."""
    try:
        return await coro
    except UserError as exc:
        raise RequestFailed(message=str(exc)) from None


# --- lifecycle ---------------------------------------------------------------------------------


def initialize(ls: ReverieLanguageServer, params: types.InitializeParams) -> None:
    ls.set_initialization_options(params.initialization_options)


async def initialized(ls: ReverieLanguageServer, params: types.InitializedParams) -> None:
    import asyncio

    ls.log_handler.connect(ls.window_log_message, asyncio.get_running_loop())
    ls.search_index.remember_loop()
    ls.initialized_event.set()
    build_schemas()
    await configuration.pull_settings(ls)
    s = ls.settings
    logger.info(
        "Reverie %s (pid %d): provider %s, %d workspace folder(s)",
        ls.version,
        os.getpid(),
        s.provider,
        len(ls.workspace_folders()),
    )
    await configuration.register_config_watch(ls)
    ls.run_task(startup.warm_up(ls), "warm up")
    try:
        await ls.start_tracking()
    finally:
        ls.ready.set()
    ls.run_task(startup.repair_agent_hooks(ls), "repair agent hooks")


async def did_change_configuration(
    ls: ReverieLanguageServer, params: types.DidChangeConfigurationParams
) -> None:
    await configuration.settings_changed(ls, params)


async def did_change_workspace_folders(
    ls: ReverieLanguageServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    for folder in params.event.removed:
        path = to_fs_path(folder.uri)
        if path:
            await ls.stop_tracking(Path(path))
    if params.event.added:
        await ls.start_tracking()


async def shutdown(ls: ReverieLanguageServer, *args: Any) -> None:
    await ls.shutdown_all()


# --- documents ---------------------------------------------------------------------------------


def _document_changed(ls: ReverieLanguageServer, uri: str) -> None:
    path = to_fs_path(uri)
    if path:
        ls.refresh_file_diagnostics(Path(path))


def did_open(ls: ReverieLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    _document_changed(ls, params.text_document.uri)


def did_change(ls: ReverieLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    _document_changed(ls, params.text_document.uri)


def did_save(ls: ReverieLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    _document_changed(ls, params.text_document.uri)


def did_close(ls: ReverieLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    _document_changed(ls, params.text_document.uri)


# --- client -> server notifications ------------------------------------------------------------


async def append_messages(ls: ReverieLanguageServer, params: Any) -> None:
    try:
        pushed = AppendMessagesParams.model_validate(params)
    except ValidationError as exc:
        logger.warning("ignored %s: %s", Notifications.APPEND_MESSAGES, describe(exc))
        return
    await ls.wait_ready()
    tracker = ls.tracker_for_path(Path(pushed.cwd))
    if tracker is None:
        logger.warning(
            "ignored %s for %s: not inside an open workspace folder",
            Notifications.APPEND_MESSAGES,
            pushed.cwd,
        )
        return
    await tracker.append_pushed(pushed)


# --- commands ----------------------------------------------------------------------------------


async def status(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    parse_args(StatusArgs, args)
    await ls.wait_ready()
    result = server_status(ls)
    try:
        from reverie.llm.budget import spend

        spent = await asyncio.to_thread(spend, ls.settings)
        result.spend = SpendInfo(**spent.as_json(), summary=spent.summary())
    except OSError as exc:  # status must answer even so
        logger.warning("model spend: %s", exc)
    for tracker in list(ls.trackers.values()):
        try:
            result.connections.append(await agent_connections.summary(tracker))
        except (UserError, OSError) as exc:  # status must answer even so
            logger.warning("connections of %s: %s", tracker.folder, exc)
    return result.wire()


async def list_sessions(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(ListSessionsArgs, args)
    return (await _call((await _tracker(ls, a)).list_sessions())).wire()


async def session_notes(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(SessionArgs, args)
    return (await _call((await _tracker(ls, a)).session_notes(a.session_id))).wire()


async def update_notes(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(SessionArgs, args)
    return (await _call((await _tracker(ls, a)).update_notes(a.session_id))).wire()


async def dream(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(DreamArgs, args)
    return (await _call((await _tracker(ls, a)).manual_dream(a.extra_context, a.logs_mode))).wire()


async def sleep(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(SleepArgs, args)
    return (await _call((await _tracker(ls, a)).run_sleep(a.date))).wire()


async def lock_status(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(LockStatusArgs, args)
    return await _call((await _tracker(ls, a)).lock_status_json())


async def history(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(HistoryArgs, args)
    tracker = await _tracker(ls, a)
    found = await _call(tracker.history(a.limit, run_id=a.run_id, with_contents=a.with_contents))
    return found.wire()


async def undo(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(UndoArgs, args)
    tracker = await _tracker(ls, a)
    return (await _call(tracker.undo(a.run_id, redo=a.redo,
                                     discard_edits=a.discard_edits))).wire()


async def connect_agent(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(ConnectAgentArgs, args)
    tracker = await _tracker(ls, a)
    found = await _call(agent_connections.connect_agent(tracker, a.agent, a.scope, a.dry_run))
    return ConnectAgentResult.model_validate(found).wire()


async def disconnect_agent(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(DisconnectAgentArgs, args)
    tracker = await _tracker(ls, a)
    found = await _call(agent_connections.disconnect_agent(tracker, a.agent, a.dry_run))
    return ConnectAgentResult.model_validate(found).wire()


async def connections(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(ConnectionsArgs, args)
    found = await _call(agent_connections.connections(await _tracker(ls, a)))
    return ConnectionsResult.model_validate(found).wire()


async def cancel_job(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(CancelJobArgs, args)
    job = ls.jobs.jobs.get(a.job_id)
    if job is None:
        return CancelJobResult(
            job_id=a.job_id, cancelled=False, message=f"no running job {a.job_id}"
        ).wire()
    cancelled = ls.jobs.cancel(a.job_id)
    message = f"cancelling {job.title}" if cancelled else f"{job.title} is already finishing"
    return CancelJobResult(job_id=a.job_id, cancelled=cancelled, message=message).wire()


async def test_model(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    """One small request to the configured model (latency, streaming, tools, model name)."""
    from reverie.llm.probe import probe_model

    parse_args(ModelTestArgs, args)
    found = await probe_model(ls.settings)
    return ModelTestResult.model_validate(found.model_dump()).wire()


async def providers(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    """The providers the editor's picker offers, with the coding-agent CLIs found here."""
    from reverie.llm.cli_agent import provider_choices

    parse_args(ProvidersArgs, args)
    s = ls.settings
    found = await asyncio.to_thread(provider_choices, s.cli_path,
                                    s.api_key is not None or bool(os.environ.get(
                                        "OPENAI_API_KEY") or os.environ.get("ANTHROPIC_API_KEY")),
                                    s.base_url)
    return ProvidersResult(
        current=s.provider,
        providers=[ProviderInfo.model_validate(c.model_dump()) for c in found],
    ).wire()


async def check_memory(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    """Every memory fact checked against the code: the ``reverie check --json`` report (and
    the stale ones published as diagnostics)."""
    a = parse_args(CheckMemoryArgs, args)
    report = await staleness.publish(ls, await _tracker(ls, a))
    return report.as_json()


def _topic_tracker(ls: ReverieLanguageServer, uri: str) -> WorkspaceTracker:
    path = to_fs_path(uri)
    tracker = ls.tracker_for_path(Path(path)) if path else None
    if tracker is None:
        raise RequestFailed(message=f"{uri} is not in a workspace's memory")
    return tracker  # type: ignore[return-value]


async def retire_fact(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(FactArgs, args)
    await ls.wait_ready()
    return await _call(staleness.decide(ls, _topic_tracker(ls, a.uri), a.uri, a.line,
                                        "retire"))


async def keep_fact(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(FactArgs, args)
    await ls.wait_ready()
    return await _call(staleness.decide(ls, _topic_tracker(ls, a.uri), a.uri, a.line, "keep"))


async def open_anchor(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(OpenAnchorArgs, args)
    await ls.wait_ready()
    try:
        uri = staleness.anchor_uri(_topic_tracker(ls, a.uri), a.path)
    except UserError as exc:
        raise RequestFailed(message=str(exc)) from None
    shown = await ls.window_show_document_async(
        types.ShowDocumentParams(uri=uri, take_focus=True))
    return {"uri": uri, "shown": bool(shown and shown.success)}


def code_action(ls: ReverieLanguageServer,
                params: types.CodeActionParams) -> list[types.CodeAction] | None:
    return staleness.code_actions(params) or None


async def curate(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    """Forget, pin, unpin, edit or move one memory entry (a recorded, undoable run)."""
    a = parse_args(CurateArgs, args)
    return await _call(entry_curation.curate_entry(ls, await _tracker(ls, a), a))


async def reviews(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(ReviewsArgs, args)
    return await _call(staged_reviews.reviews(await _tracker(ls, a), a))


async def apply_review(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(ApplyReviewArgs, args)
    return await _call(staged_reviews.apply_review(ls, await _tracker(ls, a), a))


async def discard_review(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    a = parse_args(DiscardReviewArgs, args)
    return await _call(staged_reviews.discard_review(await _tracker(ls, a), a))


async def agent_context(ls: ReverieLanguageServer, *args: Any) -> dict[str, Any]:
    """What each connected agent of the folder loads (``reverie connections --given``)."""
    from reverie.services.given import agent_context as given

    a = parse_args(AgentContextArgs, args)
    tracker = await _tracker(ls, a)
    report = await _call(asyncio.to_thread(given, tracker.settings, tracker.folder))
    return AgentContextResult.model_validate(report.model_dump()).wire()


COMMANDS = {
    Commands.STATUS: status,
    Commands.LIST_SESSIONS: list_sessions,
    Commands.SESSION_NOTES: session_notes,
    Commands.UPDATE_NOTES: update_notes,
    Commands.DREAM: dream,
    Commands.SLEEP: sleep,
    Commands.LOCK_STATUS: lock_status,
    Commands.HISTORY: history,
    Commands.UNDO: undo,
    Commands.CANCEL_JOB: cancel_job,
    Commands.CONNECT_AGENT: connect_agent,
    Commands.DISCONNECT_AGENT: disconnect_agent,
    Commands.CONNECTIONS: connections,
    Commands.TEST_MODEL: test_model,
    Commands.PROVIDERS: providers,
    Commands.CURATE: curate,
    Commands.REVIEWS: reviews,
    Commands.APPLY_REVIEW: apply_review,
    Commands.DISCARD_REVIEW: discard_review,
    Commands.CHECK_MEMORY: check_memory,
    Commands.RETIRE_FACT: retire_fact,
    Commands.KEEP_FACT: keep_fact,
    Commands.OPEN_ANCHOR: open_anchor,
    Commands.AGENT_CONTEXT: agent_context,
}

FEATURES: dict[str, Any] = {
    types.INITIALIZE: initialize,
    types.INITIALIZED: initialized,
    types.WORKSPACE_DID_CHANGE_CONFIGURATION: did_change_configuration,
    types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS: did_change_workspace_folders,
    types.SHUTDOWN: shutdown,
    types.TEXT_DOCUMENT_DID_OPEN: did_open,
    types.TEXT_DOCUMENT_DID_CHANGE: did_change,
    types.TEXT_DOCUMENT_DID_SAVE: did_save,
    types.TEXT_DOCUMENT_DID_CLOSE: did_close,
    Notifications.APPEND_MESSAGES: append_messages,
}


def create_server() -> ReverieLanguageServer:
    """A new server with every handler registered."""
    server = ReverieLanguageServer()
    for method, handler in FEATURES.items():
        server.feature(method)(handler)
    for name, handler in COMMANDS.items():
        server.command(name)(handler)
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix]))(code_action)
    return server
