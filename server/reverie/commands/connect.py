"""Wire an agent to this workspace's memory: managed blocks in its files, plus its hooks.

``reverie connect AGENT [--workspace DIR] [--scope personal|project] [--dry-run] [--json]``.
AGENT is ``claude-code``, ``codex``, ``gemini``, ``aider``, ``copilot-chat``, ``cline``,
``roo-code`` or ``continue``. ``personal`` (the default) writes
nothing that would be committed to the repository; ``project`` writes the shared files.
``--dry-run`` prints the unified diff and writes nothing. What goes where: docs/agents.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reverie.cli import CommandError, add_workspace_argument, load_settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent", metavar="AGENT",
                        help="claude-code, codex, gemini, aider, copilot-chat, cline, roo-code "
                             "or continue")
    add_workspace_argument(parser)
    parser.add_argument("--scope", default="personal", choices=["personal", "project"],
                        help="personal (default: nothing committed) or project (shared files)")
    add_output_arguments(parser)


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help="print the unified diff and write nothing")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def workspace_of(args: argparse.Namespace) -> Path:
    return Path(args.workspace or Path.cwd())


def report(result: object, args: argparse.Namespace, verb: str) -> int:
    """Print a connect / disconnect result: JSON, the diff (dry run) or a short summary."""
    from reverie.agents.results import ConnectResult

    assert isinstance(result, ConnectResult)
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
        return 0
    if args.dry_run:
        print(result.diff, end="")
        if not result.changed:
            print(f"{result.agent}: nothing to change")
        return 0
    if not result.changed:
        print(f"{result.agent}: already {verb} ({result.scope}, {result.mode})")
    else:
        print(f"{result.agent}: {verb} ({result.scope}, {result.mode})")
        for change in result.files:
            if change.action != "unchanged":
                print(f"  {change.action:7} {change.path}")
    for note in result.notes:
        print(f"  note: {note}")
    return 0


def run(args: argparse.Namespace) -> int:
    from reverie.agents.connection import ConnectError, connect

    settings = load_settings()
    try:
        result = connect(args.agent, workspace_of(args), args.scope, settings,
                         dry_run=args.dry_run)
    except ConnectError as exc:
        raise CommandError(str(exc)) from None
    return report(result, args, "connected")
