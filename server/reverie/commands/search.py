"""Search the project's memory, session notes and past sessions.

``reverie search QUERY [--workspace DIR] [--limit N] [--agent A] [--since DATE] [--json]``
brings the project's search index up to date first (only what changed is read), then prints
the best hits: title, date, agent and a snippet; ``--json`` prints
``{"query", "results": [{"kind", "session_id", "agent", "date", "title", "text", "source",
"score", ...}], "index": {"sessions", "documents"}}``. Only the workspace's own project is
searched.
"""

from __future__ import annotations

import argparse
import sys

import orjson

from reverie.cli import CommandError, add_workspace_argument, load_settings, resolve_workspace
from reverie.errors import UserError

AGENTS = ("claude-code", "codex", "gemini-cli", "aider", "generic")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="what to look for, in your own words")
    add_workspace_argument(parser)
    parser.add_argument("--limit", type=int, default=10, help="at most this many hits (1-50)")
    parser.add_argument("--agent", choices=AGENTS, default=None,
                        help="only hits from this agent's sessions")
    parser.add_argument("--since", default=None, metavar="DATE",
                        help="only hits from this day on (YYYY-MM-DD)")
    parser.add_argument("--json", action="store_true", help="print the hits as JSON")


def run(args: argparse.Namespace) -> int:
    from reverie.services.search import parse_since, search_project

    workspace = resolve_workspace(args)
    settings = load_settings()
    if args.limit < 1:
        raise CommandError("--limit must be at least 1")
    try:
        response = search_project(settings, workspace, args.query, limit=args.limit,
                                  agent=args.agent, since=parse_since(args.since))
    except UserError as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(response.model_dump(mode="json"),
                                             option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
        return 0
    if not response.results:
        print(f"No matches in {response.index.sessions} sessions "
              f"({response.index.documents} documents).")
        return 0
    for number, hit in enumerate(response.results, 1):
        where = " · ".join(part for part in (hit.date, hit.agent, hit.kind, hit.section) if part)
        print(f"{number}. {hit.title}")
        print(f"   {where}" + (f" · session {hit.session_id[:8]}" if hit.session_id else ""))
        for line in hit.text.splitlines()[:4]:
            print(f"   {line[:160]}")
        print(f"   {hit.source}")
    return 0
