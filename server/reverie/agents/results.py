"""Typed results of connect / disconnect / connections (the CLI's ``--json`` and the LSP's)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from reverie.agents.ledger import Mode, Role, Scope
from reverie.types import ConnectableAgent

FileAction = Literal["create", "update", "delete", "unchanged"]
FileState = Literal["ok", "missing", "block-missing", "damaged", "symlink"]


class FileChange(BaseModel):
    path: str
    role: Role
    action: FileAction


class ConnectResult(BaseModel):
    """What ``connect`` / ``disconnect`` did (or, with ``dry_run``, would do)."""

    agent: ConnectableAgent
    workspace: str
    scope: Scope
    mode: Mode
    memory_dir: str
    dry_run: bool
    changed: bool
    files: list[FileChange] = Field(default_factory=list)
    #: unified diff of every file (``--- /dev/null`` for a new file)
    diff: str = ""
    notes: list[str] = Field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class ConnectedFile(BaseModel):
    path: str
    role: Role
    state: FileState


class ConnectionInfo(BaseModel):
    agent: ConnectableAgent
    scope: Scope
    mode: Mode
    connected_at: datetime
    files: list[ConnectedFile] = Field(default_factory=list)


class ConnectionsResult(BaseModel):
    workspace: str
    memory_dir: str
    connections: list[ConnectionInfo] = Field(default_factory=list)
    #: agents with transcripts for this workspace
    detected: list[ConnectableAgent] = Field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
