"""What the sessions a dream read confirm about memory: commands that ran successfully and files
that were edited, each with the latest day.

A fact whose command ran again successfully (``pnpm build`` for "Build with `pnpm build`"), or
whose file was edited again, is re-confirmed by that session: its ``verified`` date moves to
that day and it is not aging, even when the check itself cannot verify it on this machine (a
tool not installed here, a file in an ignored folder). A confirmation never overrides a check
that established the fact stale: the working tree now is the stronger evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from reverie.anchors.model import Anchor

_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _command(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Confirmations:
    """Command lines that succeeded and workspace-relative paths edited, with the latest day."""

    commands: dict[str, date] = field(default_factory=dict)
    paths: dict[str, date] = field(default_factory=dict)

    def add_command(self, command: str, day: date) -> None:
        key = _command(command)
        if key and (key not in self.commands or self.commands[key] < day):
            self.commands[key] = day

    def add_path(self, path: str, day: date) -> None:
        key = path.strip().removeprefix("./")
        if key and not key.startswith(("/", "~")) and (
                key not in self.paths or self.paths[key] < day):
            self.paths[key] = day

    def __bool__(self) -> bool:
        return bool(self.commands or self.paths)

    def day_for(self, text: str, anchors: list[Anchor]) -> date | None:
        """The latest day a session confirmed the fact: a command span of its text that ran
        successfully (the same command, or one that starts with it: ``pytest -q`` confirms
        ``pytest``), or a file it depends on that was edited."""
        days: list[date] = []
        spans = [_command(s) for s in _CODE_SPAN.findall(text) if len(s.split()) >= 2]
        for span in spans:
            for command, day in self.commands.items():
                if command == span or command.startswith(span + " "):
                    days.append(day)
        for anchor in anchors:
            edited = anchor.value if anchor.kind == "path" else anchor.where \
                if anchor.kind == "symbol" else None
            if edited and edited in self.paths:
                days.append(self.paths[edited])
        return max(days) if days else None
