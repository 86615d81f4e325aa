"""The hook input, and the session-start hand-back, on nothing but the data and config folders.

An agent runs ``reverie hook session-start`` after a compaction and on resume, waiting for it;
so its work is kept here, importing only the standard library and the modules it needs
(``reverie.projects``; the notes template, redaction and the "what agents load" record only once
there are notes to give back): neither the settings stack (pydantic) nor argparse. Both ways in
call ``hand_back``: the lean entry ``reverie.commands.session_hook`` (recognised by
``reverie.__main__`` before the CLI is built) and the full one (``reverie.services.hooks``
``session_start``, with a ``Settings``), so they cannot answer differently.

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
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reverie.errors import ReverieError
from reverie.projects import project_key, session_dir_name

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


def project_root(data_dir: Path, workspace: Path) -> Path:
    """Reverie's data folder for ``workspace`` (``config.ProjectPaths.root``)."""
    return data_dir / "projects" / project_key(workspace.expanduser().resolve())


def workspace_of_session(data_dir: Path, hook: HookInput) -> Path | None:
    """The workspace whose data holds this session: the cwd or the nearest parent with a
    session dir for it (an agent started in a sub-folder of the editor's workspace)."""
    if hook.cwd is None:
        return None
    start = hook.cwd.resolve()
    name = session_dir_name(hook.session_id)
    for n, directory in enumerate((start, *start.parents)):
        if n >= MAX_PARENTS:
            break
        if (project_root(data_dir, directory) / "sessions" / name).is_dir():
            return directory
    return None


def cut_for_injection(notes: str, path: Path, max_total_tokens: int | None = None) -> str:
    """The notes cut with the spec's per-section budget, then to the total budget, with a
    pointer to the full file (always: the agent can read it when it needs more)."""
    from reverie.redact import redact  # the notes are redacted when written; a hand edit not
    from reverie.session_memory.template import (
        MAX_TOTAL_TOKENS,
        TRUNCATION_MARKER,
        truncate_for_compaction,
    )

    text, truncated = truncate_for_compaction(redact(notes)[0])
    limit = (MAX_TOTAL_TOKENS if max_total_tokens is None else max_total_tokens) * 4
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


def hand_back(data_dir: Path, config_dir: Path | Callable[[], Path | None] | None,
              hook: HookInput) -> dict[str, Any] | None:
    """The SessionStart hook output that injects the notes, or None (nothing to add);
    ``config_dir`` (where a notes template of the user's may be) may be found only when it
    is needed."""
    if hook.source not in INJECT_SOURCES:
        return None
    workspace = workspace_of_session(data_dir, hook)
    if workspace is None:
        return None
    root = project_root(data_dir, workspace)
    path = root / "sessions" / session_dir_name(hook.session_id) / "session_memory.md"
    try:
        notes = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    from reverie.session_memory.template import load_template

    if callable(config_dir):
        config_dir = config_dir()
    if not notes.strip() or notes.strip() == load_template(config_dir).text.strip():
        return None
    context = cut_for_injection(notes, path)
    from reverie.agents.given import record_given  # for the editor's "what agents load"

    record_given(root, "session-start", hook.session_id, context)
    return {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context,
        }
    }
