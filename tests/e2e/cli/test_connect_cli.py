"""``reverie connect`` / ``disconnect`` / ``connections`` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def reverie(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reverie", *args], capture_output=True,
                          text=True, timeout=60, cwd=cwd, env=dict(os.environ), check=False)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("# Rules\n")
    return workspace


def test_dry_run_prints_the_diff_and_writes_nothing(ws: Path) -> None:
    done = reverie("connect", "codex", "--workspace", str(ws), "--scope", "project", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"--- {ws / 'AGENTS.md'}\n+++ {ws / 'AGENTS.md'}\n")
    assert "+<!-- reverie:begin codex" in done.stdout
    assert f"+++ {ws / '.codex' / 'hooks.json'}" in done.stdout
    assert f"+++ {ws / '.codex' / 'config.toml'}" in done.stdout
    assert (ws / "AGENTS.md").read_text() == "# Rules\n"
    assert not (ws / ".codex").exists()


def test_connect_json_connections_and_disconnect(ws: Path) -> None:
    done = reverie("connect", "codex", "--scope", "project", "--json", cwd=ws)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["agent"] == "codex" and result["mode"] == "copy" and result["changed"]
    assert {f["action"] for f in result["files"]} == {"update", "create"}
    # the instruction file, the hooks and the MCP server's entry (Codex's project config.toml)
    assert [(Path(f["path"]).relative_to(ws).as_posix(), f["role"]) for f in result["files"]] == [
        ("AGENTS.md", "memory"), (".codex/hooks.json", "hooks"), (".codex/config.toml", "mcp")]
    again = json.loads(reverie("connect", "codex", "--scope", "project", "--json",
                               cwd=ws).stdout)
    assert not again["changed"]

    listing = reverie("connections", "--workspace", str(ws), "--json")
    data = json.loads(listing.stdout)
    assert data["connections"][0]["agent"] == "codex"
    assert [f["state"] for f in data["connections"][0]["files"]] == ["ok", "ok", "ok"]
    assert "codex (project, copy)" in reverie("connections", cwd=ws).stdout

    gone = reverie("disconnect", "codex", "--workspace", str(ws))
    assert gone.returncode == 0 and "disconnected" in gone.stdout
    assert (ws / "AGENTS.md").read_text() == "# Rules\n"
    assert not (ws / ".codex").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["connect", "cursor"], "unknown agent 'cursor'"),
    (["connect", "codex", "--workspace", "/no/such/dir"], "not a directory"),
    (["disconnect", "gemini"], "not connected"),
])
def test_bad_input_is_a_one_line_error_and_no_write(ws: Path, args: list[str],
                                                     message: str) -> None:
    done = reverie(*args, cwd=ws)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("reverie: ") and message in done.stderr
    assert sorted(p.name for p in ws.iterdir()) == ["AGENTS.md"]
