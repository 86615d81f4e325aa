"""What is wired where: the workspace's agent connections and the state of each file.

``reverie connections [--workspace DIR] [--json]``. ``detected`` lists the agents that have
sessions in the workspace (connected or not).
"""

from __future__ import annotations

import argparse
import json

from reverie.cli import CommandError, add_workspace_argument, load_settings
from reverie.commands.connect import workspace_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    from reverie.agents.connection import ConnectError, connections

    settings = load_settings()
    try:
        result = connections(workspace_of(args), settings)
    except ConnectError as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
        return 0
    if not result.connections:
        print(f"no agent connected for {result.workspace}")
    for info in result.connections:
        print(f"{info.agent} ({info.scope}, {info.mode})")
        for f in info.files:
            print(f"  {f.role:7} {f.state:13} {f.path}")
    missing = [a for a in result.detected if a not in {c.agent for c in result.connections}]
    if missing:
        print("sessions found but not connected: " + ", ".join(missing))
    return 0
