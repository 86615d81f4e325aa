"""Importing a script file (a benchmark in ``tests/bench``) as a module, so the tests drive the
very code a contributor runs by hand."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str) -> ModuleType:
    """The module defined by ``path``, registered as ``name`` (dataclasses and pickling look
    their module up in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
