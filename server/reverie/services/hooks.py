"""The compaction bridge: what the agents' ``PreCompact`` and ``SessionStart`` hooks run.

Before a compaction the session's notes are brought up to date: an extraction already running
for the session (the language server's, or another hook's) is waited for through its marker
file (``session_memory.marker``: 15 s cap, 60 s stale); otherwise one forced extraction runs,
bounded by the same cap. After the compaction (and on resume) the notes are handed back as
additional context, cut to the spec's budgets with a pointer to the full file.

Hook input is JSON on stdin as the agents document it (``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name``, ``source`` / ``trigger``; other fields are ignored). VS Code's agent
hooks (GitHub Copilot Chat) spell two of them ``sessionId`` and ``hookEventName``, and their
``transcript_path`` is the Copilot extension's own event log
(``workspaceStorage/<hash>/GitHub.copilot-chat/transcripts/<id>.jsonl``): the session Reverie
reads and keeps notes for is VS Code's ``chatSessions/<id>.json[l]`` beside it. Nothing here
raises to the caller for bad input: ``HookSkip`` carries a one-line reason.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reverie.config import ProjectPaths, Settings
from reverie.errors import ReverieError
from reverie.session_memory.marker import marker_path, running_since, wait_for_marker
from reverie.session_memory.template import (
    MAX_TOTAL_TOKENS,
    TRUNCATION_MARKER,
    load_template,
    truncate_for_compaction,
)

#: the whole pre-compact hook, waiting included: the spec's waiter cap
PRE_COMPACT_BUDGET_SECONDS = 15.0
#: sources of a SessionStart that continue a conversation (the notes belong to it)
INJECT_SOURCES = frozenset({"compact", "resume"})
#: how far up from the hook's cwd a session's workspace is looked for
MAX_PARENTS = 32


class HookSkip(ReverieError):
    """The hook has nothing to do, or cannot do it; the message says why (for stderr)."""


@dataclass(frozen=True, slots=True)
class HookInput:
    session_id: str
    transcript_path: Path | None
    cwd: Path | None
    event: str | None
    source: str | None


#: a session id as the agents write them (UUIDs, rollout ids): no path in it
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")


def parse_hook_input(raw: str | bytes) -> HookInput:
    """The fields Reverie uses from an agent's hook JSON (unknown fields are ignored)."""
    try:
        data: Any = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise HookSkip("hook input is not JSON") from None
    if not isinstance(data, dict):
        raise HookSkip("hook input is not a JSON object")
    session_id = data.get("session_id")
    if not isinstance(session_id, str) or not session_id.strip():
        session_id = data.get("sessionId")  # VS Code's agent hooks
    if not isinstance(session_id, str) or not session_id.strip():
        raise HookSkip("hook input has no session_id")
    if not _PLAIN_ID.fullmatch(session_id.strip()):
        raise HookSkip("hook input's session_id is not a plain id")  # ``..``, ``a/b``

    def text(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) and value else None

    transcript, cwd = text("transcript_path"), text("cwd")
    transcript_path = Path(transcript).expanduser() if transcript else None
    if transcript_path is not None:
        transcript_path = copilot_chat_session(transcript_path, session_id.strip())
    return HookInput(
        session_id=session_id.strip(),
        transcript_path=transcript_path,
        cwd=Path(cwd).expanduser() if cwd else None,
        event=text("hook_event_name") or text("hookEventName"),
        source=text("source") or text("trigger"),
    )


def copilot_chat_session(transcript: Path, session_id: str) -> Path:
    """VS Code's own session file for a Copilot hook's transcript: ``<hash>/chatSessions/
    <id>.jsonl`` (else ``.json``) for ``<hash>/GitHub.copilot-chat/transcripts/<file>``, by the
    session id, else by the transcript's name; without one the extension's log itself (it is
    read too: ``transcripts.copilot_events``); any other path is returned as it is."""
    owner = transcript.parent.parent
    if transcript.parent.name.lower() != "transcripts" \
            or owner.name.lower() != "github.copilot-chat":
        return transcript
    chats = owner.parent / "chatSessions"
    for stem in dict.fromkeys((session_id, transcript.stem)):
        if not _PLAIN_ID.fullmatch(stem):
            continue
        for suffix in (".jsonl", ".json"):
            if (chats / f"{stem}{suffix}").is_file():
                return chats / f"{stem}{suffix}"
    return transcript


def session_workspace(settings: Settings, hook: HookInput) -> Path | None:
    """The workspace whose data holds this session: the cwd or the nearest parent with a
    session dir for it (an agent started in a sub-folder of the editor's workspace)."""
    if hook.cwd is None:
        return None
    start = hook.cwd.resolve()
    for n, directory in enumerate((start, *start.parents)):
        if n >= MAX_PARENTS:
            break
        if ProjectPaths(settings, directory).session_dir(hook.session_id).is_dir():
            return directory
    return None


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


def cut_for_injection(notes: str, path: Path,
                      max_total_tokens: int = MAX_TOTAL_TOKENS) -> str:
    """The notes cut with the spec's per-section budget, then to the total budget, with a
    pointer to the full file (always: the agent can read it when it needs more)."""
    from reverie.redact import redact  # the notes are redacted when written; a hand edit not

    text, truncated = truncate_for_compaction(redact(notes)[0])
    limit = max_total_tokens * 4
    if len(text) > limit:
        cut = text.rfind("\n", 0, limit)
        text = text[: cut if cut > 0 else limit] + "\n" + TRUNCATION_MARKER
        truncated = True
    head = (f"Session notes kept by Reverie for this conversation (full file: {path}). "
            "They were written from the conversation before the compaction; trust them over "
            "a vague summary.")
    tail = (f"\n\nSome parts were cut for length; read {path} for everything."
            if truncated else "")
    return f"{head}\n\n{text.strip()}{tail}"


def session_start(settings: Settings, hook: HookInput) -> dict[str, Any] | None:
    """The SessionStart hook output that injects the notes, or None (nothing to add)."""
    if hook.source not in INJECT_SOURCES:
        return None
    workspace = session_workspace(settings, hook)
    if workspace is None:
        return None
    path = ProjectPaths(settings, workspace).notes_path(hook.session_id)
    try:
        notes = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not notes.strip() or notes.strip() == load_template(settings.config_dir).text.strip():
        return None
    context = cut_for_injection(notes, path)
    from reverie.agents.given import record_given  # for the editor's "what agents load"

    record_given(ProjectPaths(settings, workspace).root, "session-start", hook.session_id,
                 context)
    return {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context,
        }
    }
