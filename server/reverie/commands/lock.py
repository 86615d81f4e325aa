"""Show the consolidation lock of the workspace's memory dir and the next gate.

``reverie lock [--workspace DIR] [--json]``. ``--json`` prints ``{"memory_dir", "lock_path",
"holder_pid", "holder_alive", "last_consolidated_at", "hours_since", "sessions_since",
"next_gate", "spend"}`` (``spend``: the cost governor's tokens and dollars today and this
month, and the caps, ``reverie.llm.budget``). It only reads: a lock or an apply journal a
killed run left is reported (the holder shows as dead) and recovered by the next dream or the
language server, never here.
``next_gate`` follows the dream's gate order; the scan throttle lives in a running server, so
the CLI never reports it.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from reverie.cli import add_workspace_argument, fail, load_settings, resolve_workspace
from reverie.config import ProjectPaths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the status as JSON")


def run(args: argparse.Namespace) -> int:
    from reverie.memory.lock import ConsolidationLock, lock_status
    from reverie.transcripts.discovery import current_session, sessions_touched_since

    settings = load_settings()
    workspace = resolve_workspace(args)
    memory_dir = ProjectPaths(settings, workspace).memory_dir
    try:
        last = ConsolidationLock(memory_dir).last_consolidated_at()
    except OSError as exc:
        return fail(f"cannot read the lock of {memory_dir}: {exc}")
    current = current_session(workspace, settings.agent_home)
    try:
        since = sessions_touched_since(
            workspace, settings.agent_home, last or datetime.fromtimestamp(0, UTC),
            exclude_session_id=current.session_id if current else None,
        )
        count: int | None = len(since)
    except OSError:
        count = None
    status = lock_status(memory_dir, sessions_since=count, min_hours=settings.dream_min_hours,
                         min_sessions=settings.dream_min_sessions,
                         enabled=settings.dream_enabled, remote_mode=settings.remote_mode,
                         auto_memory=settings.auto_memory_enabled)
    from reverie.llm.budget import spend

    spent = spend(settings)
    if args.json:
        # "spend" (the cost governor's ledger: tokens and dollars today / this month against
        # the caps) is added beside the lock's own keys, which stay as they were
        print(json.dumps({**status.model_dump(), "spend": spent.as_json()}, indent=2))
        return 0
    print(f"memory dir:         {status.memory_dir}")
    print(f"lock:               {status.lock_path}")
    holder = "none" if status.holder_pid is None else (
        f"{status.holder_pid} ({'alive' if status.holder_alive else 'dead'})")
    print(f"holder:             {holder}")
    print(f"last consolidated:  {status.last_consolidated_at or 'never'}"
          + (f" ({status.hours_since:.1f} h ago)" if status.hours_since is not None else ""))
    print(f"sessions since:     {status.sessions_since}")
    print(f"next gate:          {status.next_gate}")
    print(f"model spend:        {spent.summary()}")
    return 0
