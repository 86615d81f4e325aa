"""Fixtures of the Neovim client test (shared set-up in ../editor_workspace.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _editor_workspace() -> ModuleType:
    name = "reverie_e2e_editor_workspace"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).resolve().parents[1] / "editor_workspace.py"
        )
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def editors() -> ModuleType:
    """The shared helpers: make_agent_workspace, scratch_env, missing_tool, SECTION_HEADERS."""
    return _editor_workspace()
