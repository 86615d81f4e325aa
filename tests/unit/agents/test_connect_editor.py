"""Connecting the editor's own agents: the MCP server where each reads MCP servers, Copilot's
compaction hook in VS Code's hook files, Kilo Code's rules; shared entries survive another
workspace's disconnect, and every file comes back byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reverie.agents.connection import ConnectError, connect, connections, disconnect
from reverie.config import Settings, project_key

USER = Path(".config/Code/User")
CLINE_MCP = USER / "globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"
ROO_MCP = USER / "globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json"
KILO_MCP = USER / "globalStorage/kilocode.kilo-code/settings/mcp_settings.json"


@pytest.fixture
def home(reverie_env: dict[str, Path]) -> Path:
    return reverie_env["agent_home"]


def workspace(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    (path / ".git" / "info").mkdir(parents=True)
    return path.resolve()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return workspace(tmp_path, "shop")


def servers(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text())["mcpServers"])


def everything(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_each_editor_agent_gets_its_mcp_server_where_it_reads_them(ws: Path, home: Path) -> None:
    settings = Settings()
    key = project_key(ws)
    for agent in ("cline", "roo-code", "kilo-code", "continue"):
        connect(agent, ws, "personal", settings)
    cline = servers(home / CLINE_MCP)
    # Cline starts servers without a working directory: its entry names the workspace
    assert list(cline) == [f"reverie-{key}"]
    assert cline[f"reverie-{key}"]["args"][-2:] == ["--workspace", str(ws)]
    assert cline[f"reverie-{key}"]["type"] == "stdio"
    # Roo, Kilo and Continue start it in the workspace: one entry, no workspace in it
    for path in (home / ROO_MCP, home / KILO_MCP, home / ".continue/mcpServers/reverie.json"):
        entry = servers(path)["reverie"]
        assert entry["args"][-2:] == ["reverie", "mcp"] and "--workspace" not in entry["args"]
    listed = connections(ws, settings, detect=False)
    states = {c.agent: {f.role: f.state for f in c.files} for c in listed.connections}
    assert all(s.get("mcp") == "ok" for s in states.values()), states


def test_copilot_gets_a_pre_compact_hook_in_vs_code_s_format(ws: Path, home: Path) -> None:
    result = connect("copilot-chat", ws, "personal", Settings())
    hooks = json.loads((home / ".copilot/hooks/reverie.json").read_text())["hooks"]
    assert list(hooks) == ["PreCompact"]  # VS Code's SessionStart cannot give notes back
    (entry,) = hooks["PreCompact"]
    assert entry["type"] == "command" and entry["timeout"] == 30
    assert entry["command"].endswith(f"hook pre-compact --data-dir {Settings().data_dir}")
    assert "matcher" not in entry  # VS Code's own format: no matcher groups
    assert any("1.109" in note for note in result.notes)
    project = workspace(ws.parent, "blog")
    connect("copilot-chat", project, "project", Settings())
    assert (project / ".github/hooks/reverie.json").is_file()


def test_a_shared_entry_stays_until_the_last_workspace_disconnects(tmp_path: Path,
                                                                   home: Path) -> None:
    settings = Settings()
    original = (b'{\n\t"mcpServers": {\n\t\t"fs": {"command": "uvx", "args": ["mcp-fs"]}\n\t}'
                b'\n}\n')
    (home / ROO_MCP).parent.mkdir(parents=True)
    (home / ROO_MCP).write_bytes(original)
    first, second = workspace(tmp_path, "shop"), workspace(tmp_path, "blog")
    connect("roo-code", first, "personal", settings)
    connect("roo-code", second, "personal", settings)
    assert set(servers(home / ROO_MCP)) == {"fs", "reverie"}
    disconnect("roo-code", first, settings)
    assert set(servers(home / ROO_MCP)) == {"fs", "reverie"}  # the blog still uses it
    disconnect("roo-code", second, settings)
    assert (home / ROO_MCP).read_bytes() == original

    # Cline: one entry per workspace, each taken away with its own workspace
    connect("cline", first, "personal", settings)
    connect("cline", second, "personal", settings)
    names = set(servers(home / CLINE_MCP))
    assert names == {f"reverie-{project_key(first)}", f"reverie-{project_key(second)}"}
    disconnect("cline", first, settings)
    assert set(servers(home / CLINE_MCP)) == {f"reverie-{project_key(second)}"}
    disconnect("cline", second, settings)
    assert not (home / CLINE_MCP).exists()


def test_the_editor_that_asks_is_the_one_connected(ws: Path, home: Path, tmp_path: Path) -> None:
    """From inside VS Code the server passes the editor's own User folder (code-server,
    Insiders, a portable install): the files go there, not to a detected one."""
    detected = home / ".config/Code/User"
    (detected / "globalStorage/rooveterinaryinc.roo-cline").mkdir(parents=True)
    editor = tmp_path / "code-server" / "User"
    (editor / "globalStorage/rooveterinaryinc.roo-cline").mkdir(parents=True)
    before = everything(home)
    connect("roo-code", ws, "personal", Settings(), user_dirs=[editor])
    connect("copilot-chat", ws, "personal", Settings(), user_dirs=[editor])
    assert "reverie" in servers(editor / "globalStorage/rooveterinaryinc.roo-cline/settings/"
                                         "mcp_settings.json")
    assert (editor / "prompts" / f"reverie-{project_key(ws)}.instructions.md").is_file()
    assert not (detected / "globalStorage/rooveterinaryinc.roo-cline/settings").exists()
    disconnect("roo-code", ws, Settings())
    disconnect("copilot-chat", ws, Settings())
    assert everything(home) == before and not list((editor / "prompts").glob("*"))


def test_an_extension_s_storage_chooses_the_vs_code_it_is_installed_in(ws: Path,
                                                                       home: Path) -> None:
    (home / ".config/Code/User").mkdir(parents=True)
    codium = home / ".config/VSCodium/User/globalStorage/saoudrizwan.claude-dev"
    codium.mkdir(parents=True)
    connect("cline", ws, "personal", Settings())
    assert (codium / "settings/cline_mcp_settings.json").is_file()
    assert not (home / CLINE_MCP).exists()


def test_someone_else_s_entry_named_reverie_is_never_overwritten(ws: Path, home: Path) -> None:
    path = home / ".continue/mcpServers/reverie.json"
    path.parent.mkdir(parents=True)
    mine = b'{"mcpServers": {"reverie": {"command": "node", "args": ["my-reverie.js"]}}}'
    path.write_bytes(mine)
    with pytest.raises(ConnectError, match="not Reverie's"):
        connect("continue", ws, "personal", Settings())
    assert path.read_bytes() == mine
    assert not (home / ".continue/rules").exists()  # nothing at all was written


def test_project_scope_writes_the_workspace_s_own_files(ws: Path, home: Path) -> None:
    settings = Settings()
    files = {
        "roo-code": ws / ".roo/mcp.json",
        "kilo-code": ws / ".kilocode/mcp.json",
        "continue": ws / ".continue/mcpServers/reverie.json",
    }
    before = everything(home)
    for agent, path in files.items():
        connect(agent, ws, "project", settings)
        entry = servers(path)["reverie"]
        assert "--workspace" not in entry["args"]  # a committed file: no path of this machine
    result = connect("cline", ws, "project", settings)
    assert any("personal scope" in note for note in result.notes)  # Cline has no project file
    assert everything(home) == before  # project scope writes nothing in the home folder
    for agent, path in files.items():
        disconnect(agent, ws, settings)
        assert not path.exists()
    disconnect("cline", ws, settings)
    assert not any(p.is_file() for p in ws.rglob("*") if ".git" not in p.parts)


def test_disconnect_without_the_ledger_finds_the_mcp_entries(ws: Path, home: Path) -> None:
    settings = Settings()
    connect("cline", ws, "personal", settings)
    connect("kilo-code", ws, "personal", settings)
    for ledger in settings.data_dir.rglob("connections.json"):
        ledger.unlink()
    disconnect("cline", ws, settings)
    disconnect("kilo-code", ws, settings)
    # the shared settings files: the machine-wide record of who uses them knows they did not
    # exist; the rules file is found by its block and emptied
    assert not (home / CLINE_MCP).exists() and not (home / KILO_MCP).exists()
    assert not (home / ".kilocode/rules" / f"reverie-{project_key(ws)}.md").read_text().strip()
