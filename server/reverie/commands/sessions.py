"""List the agent sessions that belong to a workspace (newest first).

``--json`` prints a list of ``{"agent", "session_id", "path", "messages", "tokens", "updated_at",
"current"}``; ``current`` marks the most recently appended main session.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from reverie.cli import add_workspace_argument, load_settings, resolve_workspace
from reverie.transcripts.discovery import SessionRef, discover_sessions
from reverie.transcripts.model import Transcript
from reverie.transcripts.reader import TranscriptError, load_sessions
from reverie.transcripts.tokens import context_tokens


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--agent-home", type=Path, default=None,
                        help="where the agents keep their data (default: REVERIE_AGENT_HOME, "
                             "else your home)")
    parser.add_argument("--json", action="store_true", help="print the list as JSON")


def session_rows(workspace: Path, agent_home: Path) -> list[dict[str, Any]]:
    refs = discover_sessions(workspace, agent_home)
    current = next((r for r in refs if not r.is_subagent), None)
    loaded: dict[Path, dict[str, Transcript]] = {}
    rows: list[dict[str, Any]] = []
    for ref in refs:
        transcript = _transcript(ref, loaded)
        rows.append({
            "agent": ref.agent,
            "session_id": ref.session_id,
            "path": str(ref.path),
            "messages": len(transcript.messages) if transcript else 0,
            "tokens": context_tokens(transcript.messages) if transcript else 0,
            "updated_at": ref.updated_at.isoformat(),
            "current": ref is current,
        })
    return rows


def _transcript(ref: SessionRef, loaded: dict[Path, dict[str, Transcript]]) -> Transcript | None:
    if ref.path not in loaded:
        try:
            loaded[ref.path] = {t.session.id: t for t in load_sessions(ref.path)}
        except TranscriptError as exc:
            print(f"reverie: skipping {ref.path}: {exc}", file=sys.stderr)
            loaded[ref.path] = {}
    by_id = loaded[ref.path]
    return by_id.get(ref.session_id) or (next(iter(by_id.values())) if len(by_id) == 1 else None)


def run(args: argparse.Namespace) -> int:
    workspace = resolve_workspace(args)
    agent_home = (args.agent_home or load_settings().agent_home).expanduser()
    rows = session_rows(workspace, agent_home)
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
        return 0
    if not rows:
        print(f"No agent sessions found for {workspace} under {agent_home}.")
        return 0
    for row in rows:
        mark = "*" if row["current"] else " "
        print(f"{mark} {row['updated_at'][:19]}  {row['agent']:<11} {row['session_id']:<40} "
              f"{row['messages']:>5} msgs  ~{row['tokens']} tokens")
    return 0
