"""What git would commit: the repository around a workspace, its private exclude file, and
whether a path is tracked. A personal connection keeps its in-workspace files out of git through
``info/exclude`` (never ``.gitignore``, which is itself committed)."""

from __future__ import annotations

import logging
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GitRepo:
    root: Path
    #: the directory holding ``info/exclude`` (the common dir for a linked worktree)
    common_dir: Path

    @property
    def exclude_file(self) -> Path:
        return self.common_dir / "info" / "exclude"

    def relative(self, path: Path) -> str | None:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return None


def find_repo(workspace: Path) -> GitRepo | None:
    """The git repository containing ``workspace`` (a ``.git`` dir, or a worktree's file)."""
    for directory in (workspace, *workspace.parents):
        dot_git = directory / ".git"
        if dot_git.is_dir():
            return GitRepo(directory, dot_git)
        if dot_git.is_file():
            try:
                line = dot_git.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            if not line.startswith("gitdir:"):
                return None
            git_dir = (directory / line.removeprefix("gitdir:").strip()).resolve()
            common = git_dir
            try:
                pointer = (git_dir / "commondir").read_text(encoding="utf-8").strip()
                common = (git_dir / pointer).resolve()
            except (OSError, UnicodeDecodeError):
                pass
            return GitRepo(directory, common)
    return None


def is_tracked(repo: GitRepo, path: Path) -> bool:
    """True when git tracks ``path`` (False when git is not installed: nothing to ask)."""
    git = shutil.which("git")
    rel = repo.relative(path)
    if git is None or rel is None:
        return False
    try:
        done = subprocess.run(
            [git, "-C", str(repo.root), "ls-files", "--error-unmatch", "--", rel],
            capture_output=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        logger.debug("git ls-files failed: %s", exc)
        return False
    return done.returncode == 0
