"""List the agent sessions that belong to a workspace (newest first, by their own last message).

``--json`` prints a list of ``{"agent", "session_id", "path", "messages", "tokens", "updated_at",
"current"}``; ``updated_at`` is the session's last message time by its own records (the file's
time where they carry none), ``current`` marks the most recently appended main session.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from reverie.cli import add_workspace_argument, load_settings, resolve_workspace
from reverie.services.sessions import list_sessions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--agent-home", type=Path, default=None,
                        help="where the agents keep their data (default: REVERIE_AGENT_HOME, "
                             "else your home)")
    parser.add_argument("--json", action="store_true", help="print the list as JSON")


def _skipped(path: Path, exc: Exception) -> None:
    print(f"reverie: skipping {path}: {exc}", file=sys.stderr)


def _print_notes(notes: list[str], limit: int = 10) -> None:
    """Editor storage folders that were not this workspace's (a remote or virtual folder)."""
    unique = list(dict.fromkeys(notes))
    for note in unique[:limit]:
        print(f"reverie: VS Code workspace storage {note}", file=sys.stderr)
    if len(unique) > limit:
        print(f"reverie: ... and {len(unique) - limit} more VS Code workspace storage folders "
              "skipped", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    workspace = resolve_workspace(args)
    agent_home = (args.agent_home or load_settings().agent_home).expanduser()
    notes: list[str] = []
    rows = list_sessions(workspace, agent_home, _skipped, notes=notes)
    _print_notes(notes)
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
