"""What ``reverie forget`` and ``reverie pin`` share: the entry argument, the run, the output."""

from __future__ import annotations

import argparse
import asyncio
import json

from reverie.cli import add_workspace_argument, fail, load_settings, resolve_workspace
from reverie.config import ProjectPaths


def add_entry_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("entry", metavar="ENTRY",
                        help="FILE:LINE (MEMORY.md:3) or a piece of the entry's text")
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run_curation(args: argparse.Namespace, action: str) -> int:
    from reverie.errors import UserError
    from reverie.memory.lock import LockBusy
    from reverie.memory.transaction import TransactionError
    from reverie.services.curation import curate

    settings = load_settings()
    memory_dir = ProjectPaths(settings, resolve_workspace(args)).memory_dir
    try:
        result = asyncio.run(curate(memory_dir, action, args.entry))  # type: ignore[arg-type]
    except UserError as exc:
        return fail(str(exc))
    except LockBusy:
        return fail("another process is consolidating this memory dir (lock_busy); try again")
    except (OSError, TransactionError) as exc:
        return fail(f"{action} failed, memory unchanged: {exc}")
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
    else:
        print(result.message)
        if result.run_id:
            print(f"run {result.run_id} (reverie undo {result.run_id[:12]} reverts it)")
    return 0
