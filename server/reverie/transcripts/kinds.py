"""What a tool call does, independent of the agent's own tool names.

Its own module, beside the pydantic models that carry it (``model.ToolCall``), so that tool
classification (``classify``) can be used without building models.
"""

from __future__ import annotations

from enum import StrEnum


class ToolKind(StrEnum):
    """What a tool call does, independent of the agent's own tool names."""

    READ = "read"
    EDIT = "edit"
    WRITE = "write"
    SHELL = "shell"
    SEARCH = "search"
    WEB = "web"
    TASK = "task"
    OTHER = "other"
