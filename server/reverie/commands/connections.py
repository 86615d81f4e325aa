"""What is wired where: the workspace's agent connections and the state of each file.

``reverie connections [--workspace DIR] [--given] [--json]``. ``detected`` lists the agents
that have sessions in the workspace (connected or not). ``--given`` shows what each connected
agent loads instead: Reverie's blocks, the memory they bring in and what the hooks last sent,
with token sizes (``reverie.services.given``).
"""

from __future__ import annotations

import argparse
import json

from reverie.cli import CommandError, add_workspace_argument, load_settings
from reverie.commands.connect import workspace_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--given", action="store_true",
                        help="what each connected agent loads, with token sizes")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _given(args: argparse.Namespace) -> int:
    from reverie.services.given import agent_context

    report = agent_context(load_settings(), workspace_of(args))
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
        return 0
    if not report.agents:
        print(f"no agent connected for {report.workspace}")
    for agent in report.agents:
        print(f"{agent.label} ({agent.scope}, {agent.mode}): ~{agent.start_tokens:,} tokens at "
              "every session start")
        for part in agent.parts:
            print(f"  ~{part.tokens:>6,} tokens  {part.title}: {part.when}")
    return 0


def run(args: argparse.Namespace) -> int:
    from reverie.agents.connection import ConnectError, connections

    if args.given:
        try:
            return _given(args)
        except ConnectError as exc:
            raise CommandError(str(exc)) from None
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
