"""Accept a staged change set (``reverie dream --review``): all of it, or ``--only`` some files.

``reverie apply RUN [--only FILE ...] [--workspace DIR] [--json]``: one recorded, undoable run;
the files not accepted are discarded with the rest of the change set.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from reverie.cli import add_workspace_argument, fail, load_settings, resolve_workspace
from reverie.config import ProjectPaths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("review_id", metavar="RUN", help="the staged change set (id or prefix)")
    parser.add_argument("--only", nargs="+", metavar="FILE", default=None,
                        help="accept only these files of the change set")
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    from reverie.errors import UserError
    from reverie.memory.lock import LockBusy
    from reverie.memory.transaction import TransactionError
    from reverie.services.review import apply_review

    memory_dir = ProjectPaths(load_settings(), resolve_workspace(args)).memory_dir
    try:
        outcome = asyncio.run(apply_review(memory_dir, args.review_id, args.only))
    except UserError as exc:
        return fail(str(exc))
    except LockBusy:
        return fail("another process is consolidating this memory dir (lock_busy); try again")
    except (OSError, TransactionError) as exc:
        return fail(f"apply failed, memory unchanged: {exc}")
    print(json.dumps(outcome.model_dump(), indent=2) if args.json else outcome.message)
    return 0
