"""What Reverie changed to connect an agent, so ``disconnect`` can take it back exactly.

Kept in the memory dir's private state dir (``.reverie/connections.json``, 0600): the memory's
post-apply refresh finds the managed copies from the memory dir alone. For a JSON settings file
or a TOML configuration (Codex's ``config.toml``) that existed before, the text before the first
connect is kept too (so an unchanged file comes back byte for byte whatever the edit did to it),
unless it holds a secret; it is dropped on disconnect.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from reverie.fsutil import atomic_write_text
from reverie.memory.paths import state_dir
from reverie.types import ConnectableAgent

logger = logging.getLogger(__name__)

Scope = Literal["personal", "project"]
#: how the memory reaches the agent: an import line, a managed copy, a file reference, nothing
Mode = Literal["import", "copy", "reference", "none"]
Role = Literal["memory", "hooks", "exclude", "mcp"]
EditKind = Literal["block", "json-hooks", "yaml-read", "json-mcp", "json-hooks-flat", "toml-mcp"]

LEDGER_NAME = "connections.json"


class FileRecord(BaseModel):
    path: str
    role: Role
    kind: EditKind
    block_id: str
    #: the file did not exist before Reverie wrote it (removed again when left empty)
    created: bool = False
    #: directories Reverie created for it (removed again when left empty), deepest first
    created_dirs: list[str] = Field(default_factory=list)
    #: what was inserted before the block (so disconnect takes exactly that away)
    separator: str | None = None
    #: JSON and TOML files only: the text before the first connect
    original: str | None = None
    #: sha256 of the text Reverie last wrote
    written_sha256: str | None = None
    #: MCP server entries (JSON, TOML): the path of the servers' map, and from which depth
    #: on Reverie created those objects (None: they were all there)
    json_path: list[str] = Field(default_factory=list)
    json_created_from: int | None = None
    #: the name of Reverie's MCP server entry (one per workspace where the agent keeps one
    #: global list and starts servers outside the project: Cline)
    mcp_name: str = "reverie"
    #: a file Reverie created with a header before its block (front matter the agent needs
    #: at the top): what is left after disconnect when nothing else was added; then removed
    preamble: str | None = None


class Connection(BaseModel):
    agent: ConnectableAgent
    workspace: str
    scope: Scope
    mode: Mode
    memory_dir: str
    connected_at: datetime
    files: list[FileRecord] = Field(default_factory=list)


class Ledger(BaseModel):
    version: int = 1
    connections: list[Connection] = Field(default_factory=list)

    def find(self, agent: str, workspace: Path) -> Connection | None:
        return next(
            (c for c in self.connections
             if c.agent == agent and c.workspace == str(workspace)), None
        )

    def for_workspace(self, workspace: Path) -> list[Connection]:
        return [c for c in self.connections if c.workspace == str(workspace)]

    def put(self, connection: Connection) -> None:
        self.drop(connection.agent, Path(connection.workspace))
        self.connections.append(connection)

    def drop(self, agent: str, workspace: Path) -> None:
        self.connections = [
            c for c in self.connections
            if not (c.agent == agent and c.workspace == str(workspace))
        ]


def ledger_path(memory_dir: Path) -> Path:
    return state_dir(memory_dir) / LEDGER_NAME


def load_ledger(memory_dir: Path) -> Ledger:
    """The ledger (empty when there is none; an unreadable one is reported and ignored)."""
    path = ledger_path(memory_dir)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Ledger()
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("cannot read %s: %s", path, exc)
        return Ledger()
    try:
        return Ledger.model_validate_json(raw)
    except ValidationError as exc:
        logger.warning("ignoring unreadable %s: %s", path, exc.errors()[0]["msg"])
        return Ledger()


def save_ledger(memory_dir: Path, ledger: Ledger) -> None:
    path = ledger_path(memory_dir)
    if not ledger.connections:
        path.unlink(missing_ok=True)
        return
    atomic_write_text(path, ledger.model_dump_json(indent=2) + "\n")
