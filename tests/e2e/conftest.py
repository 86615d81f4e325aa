"""Fixtures shared by the real-editor tests (VS Code and Neovim)."""

from __future__ import annotations

from types import ModuleType

import pytest

from e2e import editor_workspace


@pytest.fixture(scope="session")
def editors() -> ModuleType:
    """The shared helpers: make_agent_workspace, scratch_env, missing_tool, SECTION_HEADERS."""
    return editor_workspace
