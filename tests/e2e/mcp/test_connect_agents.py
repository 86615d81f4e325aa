"""``reverie connect codex|gemini`` registers ``reverie mcp`` in the agent's own configuration:
the real CLI in a subprocess writes the entry, the entry's command is started the way the agent
starts it (Codex: only its few default variables plus those the entry names; Gemini CLI: its
whole environment; both in the project folder) and answers the MCP SDK's own client, and
``reverie disconnect`` gives the user's file back byte for byte. Bad and busy files: a config
that does not parse is refused untouched, the user's edits between connect and disconnect
stay, and a writer rewriting the file while Reverie edits it loses nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from reverie.agents.connection import ConnectError, connect, disconnect
from reverie.config import ProjectPaths, Settings

#: what Codex passes an MCP server of its own environment (codex-rs rmcp-client
#: ``DEFAULT_ENV_VARS``, Unix), before the entry's ``env_vars`` and ``env``
CODEX_DEFAULT_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM",
                     "TMPDIR", "TZ")

CODEX_CONFIG = (
    b"# Codex settings, by hand\n"
    b'model = "gpt-5-codex"  # the default one\n'
    b'approval_policy = "on-request"\n'
    b"\n"
    b"[mcp_servers.docs]\n"
    b'command = "npx"\n'
    b'args = ["-y", "docs-mcp"]  # pinned below\n'
    b"\n"
    b"[mcp_servers.docs.env]\n"
    b'DOCS_TOKEN = "ghp_R7kQ2mV9xL4pW8nT3bY6cF1hJ5sD0gA2zE7u"\n'
    b"\n"
    b'[projects."/home/me/elsewhere"]\n'
    b'trust_level = "trusted"\n'
)

GEMINI_SETTINGS = (
    b'{\n'
    b'    "theme": "GitHub",\n'
    b'    "mcpServers": {\n'
    b'        "git": {"command": "uvx", "args": ["mcp-server-git"], "trust": false}\n'
    b'    },\n'
    b'    "context": {"fileName": "GEMINI.md"}\n'
    b'}\n'
)

#: a writer that rewrites config.toml as Codex does when the user trusts a project: read the
#: file, add a table, write it atomically, again and again
WRITER = """
import os, sys, time
path, count = sys.argv[1], int(sys.argv[2])
for n in range(count):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    text += f'\\n[projects."/work/p{n}"]\\ntrust_level = "trusted"\\n'
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
    time.sleep(0.01)
print("done", flush=True)
"""


@pytest.fixture
def home(reverie_env: dict[str, Path]) -> Path:
    return reverie_env["agent_home"]


@pytest.fixture
def ws(tmp_path: Path, reverie_env: dict[str, Path]) -> Path:
    """A project with one memory entry, so a search through the server finds something."""
    workspace = (tmp_path / "shop").resolve()
    (workspace / ".git" / "info").mkdir(parents=True)
    (workspace / ".git" / "info" / "exclude").write_text("")
    memory = ProjectPaths(Settings(), workspace).memory_dir
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(
        "# Memory\n\n- [Build and test](build-and-test.md) - pnpm only; how to run tests\n",
        "utf-8")
    (memory / "build-and-test.md").write_text(
        "---\nname: Build and test\ndescription: pnpm only; how to run tests\ntype: project\n"
        "---\n\n# Build and test\n\n- **Package manager:** use pnpm, never npm or yarn. "
        "_(session 5e55104a, 2026-11-20)_\n", "utf-8")
    return workspace


def cli(*args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-P", "-m", "reverie", *args, "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def serve_and_search(command: str, args: list[str], env: dict[str, str],
                           cwd: Path) -> str:
    """Start the entry's command as the agent would and search through it."""
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "reverie"
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert {"search", "get_session", "read_memory", "remember"} <= tools
        result = await session.call_tool("search", {"query": "which package manager"})
        assert not result.is_error
        return "".join(str(getattr(part, "text", "")) for part in result.content)


async def test_codex_round_trip_through_the_cli(home: Path, ws: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(CODEX_CONFIG)

    result = cli("connect", "codex", "--workspace", str(ws))
    assert {"path": str(config), "role": "mcp", "action": "update"} in result["files"]
    text = config.read_text("utf-8")
    assert text.startswith(CODEX_CONFIG.decode())  # the user's bytes first, untouched
    data = tomllib.loads(text)
    entry = data["mcp_servers"]["reverie"]
    assert data["mcp_servers"]["docs"]["env"]["DOCS_TOKEN"].startswith("ghp_")
    assert entry["args"] == ["-P", "-m", "reverie", "mcp"] and "type" not in entry
    assert entry["env"]["REVERIE_DATA_DIR"] == os.environ["REVERIE_DATA_DIR"]

    # Codex's environment for the server: its defaults, the names in env_vars, then env
    env = {k: os.environ[k] for k in (*CODEX_DEFAULT_ENV, *entry["env_vars"]) if k in os.environ}
    env.update(entry["env"])
    found = await serve_and_search(entry["command"], entry["args"], env, ws)
    assert "pnpm" in found  # the project Codex runs in, from the data dir the hooks use

    cli("disconnect", "codex", "--workspace", str(ws))
    assert config.read_bytes() == CODEX_CONFIG
    assert not (home / ".codex" / "AGENTS.md").exists()


async def test_gemini_round_trip_through_the_cli(home: Path, ws: Path) -> None:
    settings_json = home / ".gemini" / "settings.json"
    settings_json.parent.mkdir(parents=True)
    settings_json.write_bytes(GEMINI_SETTINGS)

    result = cli("connect", "gemini", "--workspace", str(ws))
    assert {"path": str(settings_json), "role": "mcp", "action": "update"} in result["files"]
    data = json.loads(settings_json.read_text("utf-8"))
    assert set(data["mcpServers"]) == {"git", "reverie"} and data["theme"] == "GitHub"
    entry = data["mcpServers"]["reverie"]
    assert "type" not in entry and entry["args"][-2:] == ["reverie", "mcp"]

    found = await serve_and_search(entry["command"], entry["args"],
                                   {**os.environ, **entry["env"]}, ws)
    assert "pnpm" in found

    cli("disconnect", "gemini", "--workspace", str(ws))
    assert settings_json.read_bytes() == GEMINI_SETTINGS


@pytest.mark.parametrize(("agent", "name"), [("codex", ".codex/config.toml"),
                                             ("gemini", ".gemini/settings.json")])
def test_project_scope_writes_the_workspace_file_and_takes_it_away(
        agent: str, name: str, home: Path, ws: Path) -> None:
    result = connect(agent, ws, "project", Settings())
    path = ws / name
    assert any(f.path == str(path) and f.role == "mcp" for f in result.files)
    text = path.read_text("utf-8")
    data = tomllib.loads(text) if name.endswith(".toml") else json.loads(text)
    servers = data["mcp_servers" if agent == "codex" else "mcpServers"]
    assert servers["reverie"]["args"] == ["-P", "-m", "reverie", "mcp"]  # cwd: the project
    assert any(name.split("/")[-1] in note for note in result.notes)
    assert not (home / name).exists()
    disconnect(agent, ws, Settings())
    assert not path.exists() and not path.parent.exists()


@pytest.mark.parametrize(("agent", "name", "broken", "reason"), [
    ("codex", ".codex/config.toml", b'model = "gpt-5\n[mcp_servers\n', "not valid TOML"),
    ("codex", ".codex/config.toml", b'mcp_servers = "none"\n', "not a table"),
    ("gemini", ".gemini/settings.json", b'{"theme": "GitHub",\n', "not valid JSON"),
])
def test_a_config_that_does_not_parse_is_refused_untouched(
        agent: str, name: str, broken: bytes, reason: str, home: Path, ws: Path) -> None:
    path = home / name
    path.parent.mkdir(parents=True)
    path.write_bytes(broken)
    with pytest.raises(ConnectError, match=reason):
        connect(agent, ws, "personal", Settings())
    assert path.read_bytes() == broken
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # nothing else either


def test_gemini_settings_with_comments_keep_the_memory_and_say_why_no_server(
        home: Path, ws: Path) -> None:
    """Gemini CLI reads settings.json with its comments stripped: such a file is the user's
    valid configuration, not a broken one. The memory is connected; the server is not
    registered (Reverie edits plain JSON only) and the result says so."""
    settings_json = home / ".gemini" / "settings.json"
    settings_json.parent.mkdir(parents=True)
    commented = (b'{\n  // my theme\n  "theme": "GitHub", /* and my context file */\n'
                 b'  "context": {"fileName": "NOTES.md"}\n}\n')
    settings_json.write_bytes(commented)
    result = connect("gemini", ws, "personal", Settings())
    assert any("has comments" in note for note in result.notes)
    assert not any(f.role == "mcp" for f in result.files)
    assert settings_json.read_bytes() == commented
    assert "reverie:begin gemini" in (home / ".gemini" / "NOTES.md").read_text("utf-8")
    disconnect("gemini", ws, Settings())
    assert settings_json.read_bytes() == commented
    assert not (home / ".gemini" / "NOTES.md").exists()


def test_someone_elses_reverie_server_is_never_overwritten(home: Path, ws: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    theirs = b'[mcp_servers.reverie]\ncommand = "/opt/other/reverie-server"\nargs = ["serve"]\n'
    config.write_bytes(theirs)
    with pytest.raises(ConnectError, match="not Reverie's"):
        connect("codex", ws, "personal", Settings())
    assert config.read_bytes() == theirs


def test_the_users_edits_between_connect_and_disconnect_stay(home: Path, ws: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(CODEX_CONFIG)
    connect("codex", ws, "personal", Settings())
    # the user changes their own line, tunes Reverie's entry and adds a table after it
    edited = config.read_text("utf-8").replace('"gpt-5-codex"', '"o4"') \
        .replace('args = ["-P", "-m", "reverie", "mcp"]\n',
                 'args = ["-P", "-m", "reverie", "mcp"]\nstartup_timeout_sec = 20\n') \
        + '\n[profiles.fast]\nmodel = "o4-mini"\n'
    config.write_text(edited, "utf-8")
    disconnect("codex", ws, Settings())
    assert config.read_text("utf-8") == CODEX_CONFIG.decode().replace(
        '"gpt-5-codex"', '"o4"') + '\n[profiles.fast]\nmodel = "o4-mini"\n'


def test_an_inline_servers_table_is_edited_in_place(home: Path, ws: Path) -> None:
    """``mcp_servers`` written inline cannot take a ``[mcp_servers.reverie]`` table after it:
    the entry goes into the inline table (tomlkit's document), the rest stays as written."""
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    original = (b'# servers inline\nmcp_servers = { docs = { command = "docs-mcp" } }\n'
                b'model = "gpt-5"\n')
    config.write_bytes(original)
    connect("codex", ws, "personal", Settings())
    text = config.read_text("utf-8")
    assert text.startswith("# servers inline\n") and 'model = "gpt-5"\n' in text
    assert set(tomllib.loads(text)["mcp_servers"]) == {"docs", "reverie"}
    disconnect("codex", ws, Settings())
    assert config.read_bytes() == original


def test_two_workspaces_share_the_personal_entry(home: Path, ws: Path, tmp_path: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(CODEX_CONFIG)
    other = (tmp_path / "other").resolve()
    other.mkdir()
    connect("codex", ws, "personal", Settings())
    written = config.read_bytes()
    assert not any(f.path == str(config) and f.action != "unchanged"
                   for f in connect("codex", other, "personal", Settings()).files)
    disconnect("codex", ws, Settings())
    assert config.read_bytes() == written  # the other workspace still uses it
    disconnect("codex", other, Settings())
    assert config.read_bytes() == CODEX_CONFIG


def test_a_concurrent_writer_of_config_toml_loses_nothing(home: Path, ws: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(CODEX_CONFIG)
    count = 100
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(config), str(count)],
                              stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.05)
        connect("codex", ws, "personal", Settings())
        time.sleep(0.05)
        disconnect("codex", ws, Settings())
    finally:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "done"
        writer.wait(timeout=60)
    data = tomllib.loads(config.read_text("utf-8"))
    # every one of the writer's tables is there: none was overwritten by ours
    assert [key for key in data["projects"] if key.startswith("/work/p")] == [
        f"/work/p{n}" for n in range(count)]
    assert set(data["mcp_servers"]) == {"docs"}
