"""Slash commands typed at the start of a user's text (Aider logs them as typed: ``/diff``,
``/undo``, ``/ex``, ``/add x``, ``/model y``, ``/ask question``).

They drive the agent; they are not requests. Only the ones that carry a question or a task
(``/ask …``, ``/code …``, ``/architect …``) hand their argument on as the request, and the
text after the command lines (``/clear`` then "cache the tree context") is the request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: ``/name`` or ``/name args``: a lower-case word right after the slash, then a space or the end
#: (``/Users/me/x.py is broken`` is a path, not a command)
_COMMAND_LINE = re.compile(r"^/([a-z][a-z-]*)(?:[ \t]+(.*))?$")
#: commands whose argument is a question or a task for the agent
_ASKING = frozenset({"ask", "code", "architect", "context"})
#: commands that drive the agent (Aider's, and the common session controls): never a request,
#: whatever their arguments; any other ``/name args`` is a custom command whose arguments are
#: the request (Claude Code's ``/orchestrator update CLAUDE.md``)
_CONTROL = frozenset({
    "add", "drop", "diff", "undo", "ex", "exit", "quit", "q", "clear", "reset", "model",
    "models", "weak-model", "editor-model", "tokens", "ls", "help", "commit", "lint", "map",
    "map-refresh", "read-only", "copy", "copy-context", "paste", "voice", "settings", "editor",
    "git", "chat-mode", "load", "save", "report", "multiline-mode", "think-tokens",
    "reasoning-effort", "run", "test", "web", "compact", "resume", "cost", "status", "config",
    "bye",
})


@dataclass(frozen=True, slots=True)
class SlashCommand:
    name: str
    args: str


def split_commands(text: str) -> tuple[list[SlashCommand], str]:
    """The slash commands the text starts with, and the request that is left (the asking
    commands' arguments, then the lines after the commands)."""
    commands: list[SlashCommand] = []
    lines = text.strip().splitlines()
    index = 0
    asked: list[str] = []
    while index < len(lines):
        line = lines[index].strip()
        if not line:
            index += 1
            continue
        match = _COMMAND_LINE.match(line)
        if match is None:
            break
        command = SlashCommand(match.group(1), (match.group(2) or "").strip())
        if command.args and command.name not in _CONTROL and command.name not in _ASKING:
            break  # a custom command: its text is the request
        commands.append(command)
        if command.name in _ASKING and command.args:
            asked.append(command.args)
        index += 1
    if not commands:
        return [], text
    rest = "\n".join(lines[index:]).strip()
    # Aider echoes an /ask question as the next line: keep it once
    parts = [a for a in asked if a.strip() != rest.strip()] + ([rest] if rest else [])
    return commands, "\n".join(parts).strip()
