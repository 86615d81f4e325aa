"""What the client sends unasked: chat messages of agents that write no transcript
(``reverie/appendMessages``) and where the editor keeps its data (``initializationOptions``).

Unknown keys are ignored here (``extra="ignore"``): clients may send more than we read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from reverie.lsp.payloads.wire import Wire


class PushedToolCall(Wire):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    name: str
    id: str | None = None
    input: dict[str, Any] = Field(default_factory=dict)
    file_paths: list[str] = Field(default_factory=list)


class PushedUsage(Wire):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class PushedMessage(Wire):
    """One chat message pushed by a client; ``content`` is accepted as a synonym of ``text``."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    role: Literal["user", "assistant", "system", "tool"]
    text: str = ""
    content: str | None = None
    id: str | None = None
    timestamp: datetime | None = None
    model: str | None = None
    tool_calls: list[PushedToolCall] = Field(default_factory=list)
    usage: PushedUsage | None = None


class AppendMessagesParams(Wire):
    """``reverie/appendMessages``: messages of an agent that writes no transcript."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    session_id: str = Field(min_length=1)
    cwd: str
    messages: list[PushedMessage]
    title: str | None = None


class EditorStorage(Wire):
    """``initializationOptions.editorStorage``: where the editor keeps the extension's data
    (VS Code's ``ExtensionContext.storageUri`` and ``globalStorageUri``). From them the server
    knows the current workspace's storage folder (``workspaceStorage/<hash>``, where VS Code
    keeps its chat sessions) and the user-data dir in use (Insiders, VSCodium, a profile,
    code-server), without computing the hash."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    #: ``.../User/workspaceStorage/<hash>/<publisher.name>`` (absent in an empty window)
    storage_uri: str | None = None
    #: ``.../User/globalStorage/<publisher.name>``
    global_storage_uri: str | None = None
