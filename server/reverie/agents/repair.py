"""Hooks whose interpreter is gone are rewritten when Reverie's server starts.

A hook runs ``<python> -P -m reverie hook EVENT``, with the editor's bundled libraries on
``PYTHONPATH`` when the editor connected it. An extension update (the bundle moves to the new
version's folder) or a deleted virtualenv leaves that command pointing at nothing, and the agent
then reports a failing hook at every compaction while the notes silently stop reaching it. The
server connects such an agent again, which writes the hooks with its own interpreter and keeps
the ledger (and so an exact disconnect) right. Hooks that still work are left as they are, so
a terminal's ``reverie connect`` and the editor never take turns rewriting them.
"""

from __future__ import annotations

import logging
import os
import shlex
from pathlib import Path

from reverie.agents.connection import ConnectError, connect
from reverie.agents.edits import our_hook_commands
from reverie.agents.ledger import load_ledger
from reverie.config import ProjectPaths, Settings

logger = logging.getLogger(__name__)


def broken_hook(command: str) -> bool:
    """Whether ``command``'s interpreter, or a folder its ``PYTHONPATH`` names, is gone."""
    try:
        argv = shlex.split(command, posix=os.name != "nt")
    except ValueError:
        return False  # not a command Reverie wrote: not ours to judge
    argv = [arg.strip('"') for arg in argv]
    paths: list[str] = []
    if argv[:1] == ["env"]:
        argv = argv[1:]
        while argv and "=" in argv[0] and not argv[0].startswith("-"):
            name, _, value = argv.pop(0).partition("=")
            if name == "PYTHONPATH":
                paths = [p for p in value.split(os.pathsep) if p]
    if not argv:
        return False
    return not Path(argv[0]).is_file() or any(not Path(p).is_dir() for p in paths)


def repair_hooks(workspace: Path, settings: Settings) -> list[str]:
    """Connect again every agent of ``workspace`` whose installed hooks cannot run; the agents
    repaired. Never raises: a repair that fails is logged and left to the user's reconnect."""
    memory_dir = ProjectPaths(settings, workspace).memory_dir
    repaired: list[str] = []
    for connection in load_ledger(memory_dir).for_workspace(workspace):
        commands = [command for record in connection.files
                    if record.kind in ("json-hooks", "json-hooks-flat")
                    for command in _commands(Path(record.path))]
        if not any(broken_hook(command) for command in commands):
            continue
        try:
            connect(connection.agent, workspace, connection.scope, settings)
        except (ConnectError, OSError) as exc:
            logger.warning("the %s hooks of %s point at a missing interpreter and could not be "
                           "rewritten: %s", connection.agent, workspace, exc)
            continue
        logger.info("rewrote the %s hooks of %s: the interpreter they named is gone",
                    connection.agent, workspace)
        repaired.append(connection.agent)
    return repaired


def _commands(path: Path) -> list[str]:
    try:
        if path.is_symlink():
            return []
        return our_hook_commands(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []
