"""Shared set-up of the real-editor tests (VS Code via code-server, Neovim).

A workspace plus a temporary agent home holding a real Claude Code fixture transcript, whose
records' ``cwd`` (and the paths under it) are rewritten to the workspace, so the server discovers
it as the workspace's current session. Also: the scratch environment (XDG dirs, TMPDIR) and the
skip-or-fail rule for missing tooling.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from reverie.config import claude_project_slug

REPO = Path(__file__).resolve().parents[2]
FIXTURE = (
    REPO / "tests/fixtures/transcripts/claude-code/spotter-v2.1.38-tool-heavy/tool_heavy.jsonl"
)
FIXTURE_CWD = "/home/marco/projects/spotter"
REQUIRE_ENV = "REVERIE_REQUIRE_REAL_EDITORS"
SECTION_HEADERS = (
    "Session Title",
    "Current State",
    "Task specification",
    "Files and Functions",
    "Workflow",
    "Errors & Corrections",
    "Codebase and System Documentation",
    "Learnings",
    "Key results",
    "Worklog",
)


def missing_tool(what: str) -> None:
    """Skip when real editors are optional here; fail when CI requires them."""
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{what} (required because {REQUIRE_ENV} is set; run .ci/vscode-setup.sh)")
    pytest.skip(f"{what}; run .ci/vscode-setup.sh (set {REQUIRE_ENV}=1 to make this a failure)")


@dataclass(frozen=True)
class AgentWorkspace:
    root: Path
    workspace: Path
    agent_home: Path
    data_dir: Path
    config_dir: Path
    transcript: Path
    session_id: str

    def env(self) -> dict[str, str]:
        """Reverie's directories for a server started in this scratch area."""
        return {
            "REVERIE_AGENT_HOME": str(self.agent_home),
            "REVERIE_DATA_DIR": str(self.data_dir),
            "REVERIE_CONFIG_DIR": str(self.config_dir),
        }


def make_agent_workspace(root: Path, name: str = "spotter") -> AgentWorkspace:
    """Workspace + agent home with the fixture transcript in Claude Code's layout."""
    workspace = root / name
    workspace.mkdir(parents=True)
    (workspace / "README.md").write_text("# spotter\n\nA small project Reverie remembers.\n")
    agent_home = root / "agent-home"
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    session_id = next(r["sessionId"] for r in records if r.get("sessionId"))
    project = agent_home / ".claude" / "projects" / claude_project_slug(str(workspace))
    project.mkdir(parents=True)
    transcript = project / f"{session_id}.jsonl"
    old, new = json.dumps(FIXTURE_CWD)[1:-1], json.dumps(str(workspace))[1:-1]
    with transcript.open("w") as out:
        for record in records:
            out.write(json.dumps(record).replace(old, new) + "\n")
    data_dir, config_dir = root / "reverie-data", root / "reverie-config"
    data_dir.mkdir()
    config_dir.mkdir()
    return AgentWorkspace(root, workspace, agent_home, data_dir, config_dir, transcript, session_id)


#: the longest unix socket path Linux binds (``sizeof(sun_path)`` is 108, with the NUL)
SOCKET_PATH_MAX = 107
#: the longest socket path the editors make in TMPDIR: VS Code's IPC handles (Chromium's
#: ``org.chromium.Chromium.XXXXXX/SingletonSocket`` and code-server's session socket, which the
#: fixtures put there, are shorter)
DEEPEST_SOCKET = "/vscode-ipc-00000000-0000-0000-0000-000000000000.sock"


@contextmanager
def scratch_env(root: Path) -> Iterator[dict[str, str]]:
    """XDG dirs and TMPDIR for an editor, its browser and everything they start, so they write
    nothing outside the test; removed on exit.

    They live in a short folder under /tmp, not in ``root``: Chromium, VS Code and Neovim put
    unix sockets in TMPDIR, a socket path longer than 107 bytes cannot be bound (Chromium aborts
    at launch; VS Code's IPC handles are longer still), and pytest's temp paths (``popen-gwN``,
    the fixture's name) come close. ``root/scratch`` links to the folder while it exists.
    """
    base = Path(tempfile.mkdtemp(prefix="rv-", dir="/tmp" if Path("/tmp").is_dir() else None))
    try:
        dirs = {
            "XDG_CONFIG_HOME": base / "config",
            "XDG_DATA_HOME": base / "data",
            "XDG_CACHE_HOME": base / "cache",
            "XDG_STATE_HOME": base / "state",
            "TMPDIR": base / "tmp",
        }
        for path in dirs.values():
            path.mkdir()
        socket = f"{dirs['TMPDIR']}{DEEPEST_SOCKET}"
        assert len(socket) <= SOCKET_PATH_MAX, f"{socket} is too long for a unix socket"
        root.mkdir(parents=True, exist_ok=True)
        link = root / "scratch"
        if not link.exists() and not link.is_symlink():
            link.symlink_to(base, target_is_directory=True)
        yield {key: str(value) for key, value in dirs.items()}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def which(name: str) -> str | None:
    return shutil.which(name)
