"""Fixtures shared by the real-editor tests (VS Code and Neovim)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

_MODULE = "reverie_e2e_editor_workspace"


def _editor_workspace() -> ModuleType:
    """``editor_workspace.py``, loaded once (tests are not a package under importlib mode)."""
    if _MODULE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            _MODULE, Path(__file__).resolve().parent / "editor_workspace.py"
        )
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[_MODULE] = module
        spec.loader.exec_module(module)
    return sys.modules[_MODULE]


@pytest.fixture(scope="module")
def editors() -> ModuleType:
    """The shared helpers: make_agent_workspace, scratch_env, missing_tool, SECTION_HEADERS."""
    return _editor_workspace()
