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

from reverie.cli import add_workspace_argument, fail, load_settings, resolve_workspace
from reverie.config import ProjectPaths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the status as JSON")


def run(args: argparse.Namespace) -> int:
    from reverie.errors import UserError
    from reverie.services.memory import memory_lock_status
    from reverie.services.sessions import current_session_id

    settings = load_settings()
    workspace = resolve_workspace(args)
    memory_dir = ProjectPaths(settings, workspace).memory_dir
    try:
        status = memory_lock_status(settings, workspace, memory_dir,
                                    current_session_id=current_session_id(settings, workspace))
    except UserError as exc:
        return fail(str(exc))
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
    if settings.provider != "offline":
        cost = spent.estimated_costs.get("dream")
        print(f"next dream:         about {spent.estimates.get('dream', 0):,} tokens"
              + (f" (about ${cost:.2f})" if cost is not None else ""))
    return 0
