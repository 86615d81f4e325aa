"""List the memory runs of the workspace (newest first), or show one run's diff.

``reverie history [--workspace DIR] [--json] [--diff [RUN_ID]]``. Each run: id, time, source
(auto / manual / sleep / undo), files added / changed / removed, tokens.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from reverie.cli import add_workspace_argument, fail, load_settings, resolve_workspace
from reverie.config import ProjectPaths
from reverie.memory.history import RunRecord


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the runs as JSON")
    parser.add_argument("--diff", nargs="?", const="", default=None, metavar="RUN_ID",
                        help="print the unified diff of a run (default: the latest)")


def run_json(record: RunRecord) -> dict[str, Any]:
    return {
        "run_id": record.run_id,
        "at": record.at.isoformat(),
        "source": record.source,
        "added": record.added,
        "changed": record.changed,
        "removed": record.removed,
        "tokens_in": record.tokens_in,
        "tokens_out": record.tokens_out,
        "sessions": record.sessions,
        "summary": record.summary,
        "undoes": record.undoes,
    }


def format_run(record: RunRecord) -> str:
    counts = f"+{len(record.added)} ~{len(record.changed)} -{len(record.removed)}"
    tokens = f"{record.tokens_in}/{record.tokens_out} tokens"
    line = (f"{record.run_id}  {record.at.strftime('%Y-%m-%d %H:%M:%S')}  "
            f"{record.source:<6}  {counts:<10}  {tokens}")
    files = "\n".join(
        [f"    + {n}" for n in record.added] + [f"    ~ {n}" for n in record.changed]
        + [f"    - {n}" for n in record.removed]
    )
    return f"{line}\n{files}" if files else line


def run(args: argparse.Namespace) -> int:
    from reverie.errors import UserError
    from reverie.services.memory import memory_run_diff, memory_runs

    settings = load_settings()
    workspace = resolve_workspace(args)
    memory_dir = ProjectPaths(settings, workspace).memory_dir
    try:
        if args.diff is not None:
            print(memory_run_diff(memory_dir, args.diff or None), end="")
            return 0
        runs = [entry.record for entry in memory_runs(memory_dir)]
    except UserError as exc:
        return fail(str(exc))
    if args.json:
        print(json.dumps({"memory_dir": str(memory_dir), "runs": [run_json(r) for r in runs]},
                         indent=2))
        return 0
    if not runs:
        print(f"no memory runs recorded yet in {memory_dir}")
        return 0
    for record in runs:
        print(format_run(record))
    return 0
