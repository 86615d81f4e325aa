"""Where each agent keeps its sessions, on Linux, macOS and Windows.

All four agents keep their state under the user's home on every OS (``~`` is ``%USERPROFILE%``
on Windows): Claude Code in ``~/.claude`` (``CLAUDE_CONFIG_DIR`` moves it), Codex in
``~/.codex`` (``CODEX_HOME``), Gemini CLI in ``~/.gemini`` (``GEMINI_CLI_HOME`` replaces the
home it is under), Aider next to the repository. Sources are cited in docs/formats.md.

The overrides are honoured only for the user's real home: an explicit ``REVERIE_AGENT_HOME``
(tests, a copied home, another user's home) means "look exactly here".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AgentRoots:
    """The folders discovery scans and the watcher watches."""

    claude_dir: Path
    codex_dir: Path
    gemini_dir: Path
    generic_dir: Path

    @property
    def claude_projects(self) -> Path:
        return self.claude_dir / "projects"

    @property
    def codex_sessions(self) -> Path:
        return self.codex_dir / "sessions"

    @property
    def gemini_tmp(self) -> Path:
        return self.gemini_dir / "tmp"

    @property
    def generic_sessions(self) -> Path:
        return self.generic_dir / "sessions"

    def watched(self) -> list[Path]:
        return [self.claude_projects, self.codex_sessions, self.gemini_tmp, self.generic_sessions]

    @classmethod
    def for_home(cls, agent_home: Path, env: Mapping[str, str] | None = None) -> AgentRoots:
        """The agents' folders under ``agent_home``; the agents' own environment overrides
        apply when ``agent_home`` is the user's real home."""
        home = Path(agent_home).expanduser()
        roots = cls(
            claude_dir=home / ".claude",
            codex_dir=home / ".codex",
            gemini_dir=home / ".gemini",
            generic_dir=home / ".reverie",
        )
        environ = os.environ if env is None else env
        if not _is_real_home(home):
            return roots
        claude = _absolute(environ.get("CLAUDE_CONFIG_DIR"))
        codex = _absolute(environ.get("CODEX_HOME"))
        gemini_home = _absolute(environ.get("GEMINI_CLI_HOME"))
        return cls(
            claude_dir=claude or roots.claude_dir,
            codex_dir=codex or roots.codex_dir,
            gemini_dir=(gemini_home / ".gemini") if gemini_home else roots.gemini_dir,
            generic_dir=roots.generic_dir,
        )


def _absolute(value: str | None) -> Path | None:
    if not value or not value.strip():
        return None
    path = Path(value.strip()).expanduser()
    return path if path.is_absolute() else None


def _is_real_home(home: Path) -> bool:
    try:
        return home.resolve() == Path.home().resolve()
    except (OSError, RuntimeError):
        return False
