"""Serve the project's memory and past sessions to an agent as MCP tools over stdio.

``reverie mcp [--workspace DIR]``: the tools ``search``, ``get_session``, ``read_memory`` and
``remember`` for the workspace's own project (default: the current directory, where agents
start their MCP servers). stdout carries only the MCP protocol; logs go to stderr.
"""

from __future__ import annotations

import argparse

from reverie.cli import CommandError, add_workspace_argument, load_settings, resolve_workspace


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)


def run(args: argparse.Namespace) -> int:
    from reverie.mcp.server import serve
    from reverie.search.recall import too_broad

    workspace = resolve_workspace(args)
    if args.workspace is None and too_broad(workspace):
        # started outside any project (an agent that does not start its MCP servers in the
        # project): serving the home folder would mix every project below it
        raise CommandError(f"{workspace} is not a project folder: start reverie mcp in the "
                           "project or pass --workspace DIR")
    serve(load_settings(), workspace)
    return 0
