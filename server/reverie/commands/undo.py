"""Restore the memory dir to what it was before a run (default: the latest); recorded as a run.

``reverie undo [RUN_ID] [--workspace DIR] [--json]``. ``--json`` prints the new undo run.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from reverie.cli import add_workspace_argument, fail, load_settings, resolve_workspace
from reverie.commands.history import format_run, run_json
from reverie.config import ProjectPaths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", nargs="?", default=None, metavar="RUN_ID",
                        help="the run to undo (an id or unique prefix; default: the latest)")
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the undo run as JSON")


def run(args: argparse.Namespace) -> int:
    from reverie.memory.history import HistoryError
    from reverie.memory.lock import LockBusy
    from reverie.memory.transaction import TransactionError
    from reverie.memory.undo import undo_run

    settings = load_settings()
    workspace = resolve_workspace(args)
    memory_dir = ProjectPaths(settings, workspace).memory_dir
    try:
        result = asyncio.run(undo_run(memory_dir, args.run_id))
    except HistoryError as exc:
        return fail(str(exc))
    except LockBusy:
        return fail("another process is consolidating this memory dir (lock_busy); try again")
    except (OSError, TransactionError) as exc:
        return fail(f"undo failed, memory unchanged: {exc}")
    record = result.record
    if args.json:
        print(json.dumps({"memory_dir": str(memory_dir),
                          "run": run_json(record) if record else None,
                          "changed": not result.changes.empty}, indent=2))
        return 0
    if record is None:
        print("nothing to undo: the memory dir already matches that state")
    else:
        print(format_run(record))
    return 0
