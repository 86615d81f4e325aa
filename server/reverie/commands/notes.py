"""Update a session's notes now: threshold check, then one extraction if due (or forced).

``reverie notes [PATH_OR_SESSION_ID] [--workspace DIR] [--force] [--json]``. Without an argument
it picks the workspace's current (most recently active) session. ``--json`` prints
``{"notes_path", "ran", "skipped_reason", "edited", "tokens_in", "tokens_out", "redactions"}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path

from reverie.cli import fail, job_event_logger, load_settings

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", nargs="?", metavar="PATH_OR_SESSION_ID",
        help="a transcript file, or a session id of the workspace (default: the current session)",
    )
    parser.add_argument(
        "--workspace", type=Path, default=None,
        help="the project the notes belong to (default: the transcript's cwd, else the current "
             "directory)",
    )
    parser.add_argument("--force", action="store_true", help="run even if no threshold is met")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    from reverie.background import run_in_background
    from reverie.session_memory.manager import SessionMemoryManager
    from reverie.session_memory.source import (
        TranscriptConversation,
        load_session_digests,
        load_session_head,
    )
    from reverie.transcripts.digest import MessageDigest
    from reverie.transcripts.discovery import current_session, discover_sessions
    from reverie.transcripts.reader import TranscriptError

    settings = load_settings()
    workspace_arg = args.workspace.expanduser().resolve() if args.workspace else None
    search_root = workspace_arg or Path.cwd().resolve()

    target: str | None = args.target
    session_id: str | None = None
    if target is not None and Path(target).expanduser().exists():
        path = Path(target).expanduser().resolve()
    else:
        refs = discover_sessions(search_root, settings.agent_home)
        if target is None:
            ref = current_session(search_root, settings.agent_home)
            if ref is None:
                return fail(f"no agent session found for {search_root}")
        else:
            ref = next((r for r in refs if r.session_id == target), None)
            if ref is None:
                return fail(f"{target} is neither a file nor a session of {search_root}")
        path, session_id = ref.path, ref.session_id

    # one streamed pass keeps digests (what the thresholds need), not the conversation: the
    # writer reads the transcript again, itself streaming, only if an extraction runs
    # (with --force the thresholds are not asked: the session record from the first records is
    # enough, and the writer's own pass is the only full read)
    try:
        digests: list[MessageDigest] = []
        if args.force:
            session = load_session_head(path, session_id)
        else:
            session, digests = load_session_digests(path, session_id)
    except TranscriptError as exc:
        return fail(str(exc))
    conversation = TranscriptConversation(path, session.id, digests, run_in_background)
    workspace = workspace_arg or (
        Path(session.cwd).expanduser() if session.cwd else Path.cwd().resolve()
    )

    async def go() -> int:
        manager = SessionMemoryManager(settings, job_event_logger(logger))
        result = await manager.extract_conversation(
            session, conversation, workspace, force=args.force
        )
        if args.json:
            print(json.dumps(result.as_json()))
        elif result.error:
            pass
        elif result.skipped_reason:
            print(f"Session memory not updated ({result.skipped_reason}): {result.notes_path}")
        else:
            verb = "updated" if result.edited else "checked"
            print(f"Session memory {verb}: {result.notes_path} ({result.writer} writer, "
                  f"{result.redactions} redaction(s), {result.tokens_in} tokens in, "
                  f"{result.tokens_out} out)")
        if result.error:
            return fail(f"session memory update failed: {result.error}")
        return 0

    return asyncio.run(go())
