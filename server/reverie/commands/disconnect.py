"""Take back what ``reverie connect`` wrote for an agent (byte for byte where nothing else
changed; files Reverie created are removed when nothing else was added to them).

``reverie disconnect AGENT [--workspace DIR] [--dry-run] [--json]``.
"""

from __future__ import annotations

import argparse

from reverie.cli import CommandError, add_workspace_argument, load_settings
from reverie.commands.connect import add_output_arguments, report, workspace_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent", metavar="AGENT", help="claude-code, codex, gemini or aider")
    add_workspace_argument(parser)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from reverie.agents.connection import ConnectError, disconnect

    settings = load_settings()
    try:
        result = disconnect(args.agent, workspace_of(args), settings, dry_run=args.dry_run)
    except ConnectError as exc:
        raise CommandError(str(exc)) from None
    return report(result, args, "disconnected")
