"""The compaction bridge: what the agents' ``PreCompact`` and ``SessionStart`` hooks run.

Before a compaction the session's notes are brought up to date: an extraction already running
for the session (the language server's, or another hook's) is waited for through its marker
file (``session_memory.marker``: 15 s cap, 60 s stale); otherwise one forced extraction runs,
bounded by the same cap. After the compaction (and on resume) the notes are handed back as
additional context, cut to the spec's budgets with a pointer to the full file.

The input's parsing and the session-start hand-back live in ``reverie.services.handback``
(the lean session-start entry calls it without the settings stack); they are re-exported here.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from reverie.config import ProjectPaths, Settings
from reverie.services.handback import (
    INJECT_SOURCES,
    MAX_PARENTS,
    HookInput,
    HookSkip,
    copilot_chat_session,
    cut_for_injection,
    hand_back,
    parse_hook_input,
    workspace_of_session,
)
from reverie.session_memory.marker import marker_path, running_since, wait_for_marker

__all__ = ["INJECT_SOURCES", "MAX_PARENTS", "PRE_COMPACT_BUDGET_SECONDS", "HookInput",
           "HookSkip", "copilot_chat_session", "cut_for_injection", "parse_hook_input",
           "pre_compact", "session_start", "session_workspace"]

#: the whole pre-compact hook, waiting included: the spec's waiter cap
PRE_COMPACT_BUDGET_SECONDS = 15.0


def session_workspace(settings: Settings, hook: HookInput) -> Path | None:
    """The workspace whose data holds this session: the cwd or the nearest parent with a
    session dir for it (an agent started in a sub-folder of the editor's workspace)."""
    return workspace_of_session(settings.data_dir, hook)


# -- pre-compact ------------------------------------------------------------------------------


async def pre_compact(settings: Settings, hook: HookInput,
                      budget: float = PRE_COMPACT_BUDGET_SECONDS) -> str:
    """Bring the session's notes up to date; returns what happened (one line, for stderr).

    Raises ``HookSkip`` when the session cannot be found or the budget ran out.
    """
    import asyncio  # here: the session-start hook never needs it, and it costs ~50 ms to load

    deadline = time.monotonic() + budget
    workspace = session_workspace(settings, hook)
    if workspace is not None:
        marker = marker_path(ProjectPaths(settings, workspace).session_dir(hook.session_id))
        if running_since(marker) is not None:
            if await wait_for_marker(marker, timeout=deadline - time.monotonic()):
                return "notes brought up to date by the running extraction"
            raise HookSkip("the running extraction did not finish within "
                           f"{budget:.0f} s; compacting with the notes as they are")
    if workspace is None:
        if hook.cwd is None or not hook.cwd.is_dir():
            raise HookSkip("hook input has no usable cwd")
        workspace = hook.cwd.resolve()
    try:
        return await asyncio.wait_for(_extract(settings, hook, workspace),
                                      timeout=max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        raise HookSkip(f"the notes update did not finish within {budget:.0f} s; "
                       "compacting with the notes as they are") from None


async def _extract(settings: Settings, hook: HookInput, workspace: Path) -> str:
    import asyncio

    from reverie.session_memory.manager import SessionMemoryManager
    from reverie.transcripts.reader import TranscriptError, load_transcript

    path = hook.transcript_path
    if path is None or not path.is_file():
        path = _find_transcript(settings, hook.session_id, workspace)
    try:
        transcript = await asyncio.to_thread(load_transcript, path, hook.session_id)
    except TranscriptError as exc:
        raise HookSkip(str(exc)) from None
    log = logging.getLogger(__name__)  # events go to the log (stderr), never to stdout
    manager = SessionMemoryManager(
        settings, lambda e: log.info("%s %s: %s", e.job, e.type, e.message))
    # the notes are keyed by the agent's id for the session: that is what session-start and
    # the language server (which names sessions as the agent does) look up
    session = transcript.session
    if session.id != hook.session_id:
        session = session.model_copy(update={"id": hook.session_id})
    result = await manager.extract(session, transcript.messages, workspace, force=True)
    if result.error:
        raise HookSkip(f"notes update failed: {result.error}")
    if result.skipped_reason:
        raise HookSkip(f"notes not updated ({result.skipped_reason})")
    return f"notes {'updated' if result.edited else 'checked'}: {result.notes_path}"


def _find_transcript(settings: Settings, session_id: str, workspace: Path) -> Path:
    """By the file names the agents give (bounded: names only), else by discovery (reads
    every session's head; for layouts that do not name files by id)."""
    from reverie.transcripts.discovery import discover_sessions
    from reverie.transcripts.lookup import find_session_file

    named = find_session_file(settings.agent_home, session_id, workspace)
    if named is not None:
        return named
    for ref in discover_sessions(workspace, settings.agent_home):
        if ref.session_id == session_id:
            return ref.path
    raise HookSkip(f"no transcript found for session {session_id}")


# -- session start ----------------------------------------------------------------------------


def session_start(settings: Settings, hook: HookInput) -> dict[str, Any] | None:
    """The SessionStart hook output that injects the notes, or None (nothing to add)."""
    return hand_back(settings.data_dir, settings.config_dir, hook)
