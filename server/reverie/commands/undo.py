"""Restore the memory dir to what it was before a run; recorded as a run of its own.

``reverie undo [RUN_ID] [--redo] [--discard-edits] [--workspace DIR] [--json]``. Without
``RUN_ID`` it undoes the latest dream or sleep run still in effect; ``--redo`` undoes the latest
undo still in effect (the editor's Undo / Redo Last Dream: ``reverie.services.memory``). An undo
that would discard hand edits made after the run is refused with the files and how to get them
back, unless ``--discard-edits``. ``--json`` prints the new undo run.
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
                        help="the run to undo (an id or unique prefix; default: the latest "
                             "dream or sleep run still in effect)")
    parser.add_argument("--redo", action="store_true",
                        help="undo the latest undo still in effect (redo what it undid)")
    parser.add_argument("--discard-edits", action="store_true",
                        help="undo even when that discards hand edits made to memory after "
                             "the run (they stay in the history)")
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the undo run as JSON")


def run(args: argparse.Namespace) -> int:
    from reverie.errors import UserError
    from reverie.services.memory import undo
    from reverie.services.wiring import memory_writer

    if args.run_id is not None and args.redo:
        return fail("give either RUN_ID or --redo, not both")
    settings = load_settings()
    workspace = resolve_workspace(args)
    memory_dir = ProjectPaths(settings, workspace).memory_dir
    try:
        outcome = asyncio.run(undo(memory_writer(), memory_dir, args.run_id, redo=args.redo,
                                   discard_edits=args.discard_edits))
    except UserError as exc:
        return fail(str(exc))
    result = outcome.result
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
