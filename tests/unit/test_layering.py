"""The pure core never imports the protocol libraries; only ``reverie.lsp`` may."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "reverie"
PROTOCOL_MODULES = ("pygls", "lsprotocol")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_does_not_import_pygls_or_lsprotocol() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ("lsp",) or rel.as_posix() == "commands/serve.py":
            continue
        for name in _imports(path):
            if name.split(".")[0] in PROTOCOL_MODULES:
                offenders.append(f"{rel}: {name}")
    assert offenders == []


def test_package_layout_has_core_modules() -> None:
    for sub in ("transcripts", "llm", "tools", "session_memory", "memory", "dream", "sleep", "lsp"):
        assert (PACKAGE / sub / "__init__.py").is_file(), sub
