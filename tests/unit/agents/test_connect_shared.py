"""Connections that share a file, and connections made at the same time (issue 27): the last
disconnect takes Reverie's part out, and every concurrent connect and disconnect ends exact."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.agents.connection import connect, disconnect
from reverie.agents.edits import has_json_hooks
from reverie.config import Settings

pytestmark = pytest.mark.xdist_group("connect-race")


def _workspace(root: Path, name: str) -> Path:
    ws = root / name
    (ws / ".git" / "info").mkdir(parents=True)
    return ws


def test_disconnecting_one_workspace_keeps_the_hooks_the_others_use(
    tmp_path: Path, reverie_env: dict[str, Path]
) -> None:
    settings = Settings()
    hooks = reverie_env["agent_home"] / ".codex" / "hooks.json"
    first, second = _workspace(tmp_path, "one"), _workspace(tmp_path, "two")
    connect("codex", first, "personal", settings)
    connect("codex", second, "personal", settings)
    disconnect("codex", first, settings)
    assert hooks.is_file() and has_json_hooks(hooks.read_text())  # the second still has them
    disconnect("codex", second, settings)
    assert not hooks.exists() or not has_json_hooks(hooks.read_text())


_SCRIPT = (
    "import sys; from pathlib import Path; from reverie.config import Settings; "
    "from reverie.agents.connection import connect, disconnect; "
    "ws = Path(sys.argv[2]); "
    "connect('codex', ws, 'personal', Settings()) if sys.argv[1] == 'connect' "
    "else disconnect('codex', ws, Settings())"
)


def test_concurrent_connects_and_disconnects_end_exact(
    tmp_path: Path, reverie_env: dict[str, Path]
) -> None:
    """Six processes connect six workspaces to the same personal files at once, then
    disconnect at once: every block lands (once), and the user's file comes back exactly."""
    home = reverie_env["agent_home"]
    agents_md = home / ".codex" / "AGENTS.md"
    agents_md.parent.mkdir(parents=True)
    original = b"# Mine\n\nAlways run the tests.\n"
    agents_md.write_bytes(original)
    workspaces = [str(_workspace(tmp_path, f"ws{i}")) for i in range(6)]
    for action in ("connect", "disconnect"):
        processes = [subprocess.Popen([sys.executable, "-c", _SCRIPT, action, ws],
                                      env=dict(os.environ)) for ws in workspaces]
        for process in processes:
            assert process.wait(120) == 0
        if action == "connect":
            assert agents_md.read_text().count("reverie:begin codex ") == len(workspaces)
            assert has_json_hooks((home / ".codex" / "hooks.json").read_text())
    assert agents_md.read_bytes() == original
    hooks = home / ".codex" / "hooks.json"
    assert not hooks.exists() or not has_json_hooks(hooks.read_text())
