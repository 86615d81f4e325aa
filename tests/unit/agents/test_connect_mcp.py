"""``reverie connect claude-code`` registers the MCP server: personal scope in Claude Code's own
``~/.claude.json`` (its "local" scope: this project, this user), project scope in ``.mcp.json``;
disconnect takes exactly that away, and a concurrent writer of ``~/.claude.json`` (Claude Code
rewrites it while it runs) never loses a write."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reverie.agents.connection import ConnectError, connect, connections, disconnect
from reverie.config import Settings

#: what Claude Code's own file looks like (JSON.stringify(value, null, 2): no final newline)
CLAUDE_STATE = {
    "numStartups": 41,
    "theme": "dark",
    "projects": {
        "/somewhere/else": {"allowedTools": [], "mcpServers": {"other": {
            "type": "stdio", "command": "npx", "args": ["other-server"], "env": {}}}},
    },
    "mcpServers": {"global-one": {"type": "stdio", "command": "uvx", "args": ["x"]}},
}

#: Claude Code's config save as its debug log describes it: take ~/.claude.json.lock
#: (proper-lockfile: mkdir), read the file again, change it, write it atomically, unlock
WRITER = """
import json, os, sys, time
path, count = sys.argv[1], int(sys.argv[2])
lock = path + ".lock"
for n in range(count):
    while True:
        try:
            os.mkdir(lock)
            break
        except FileExistsError:
            time.sleep(0.001)
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        data.setdefault("tipsHistory", []).append(n)
        data["numStartups"] = data.get("numStartups", 0) + 1
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=2, ensure_ascii=False))
        os.replace(tmp, path)
    finally:
        os.rmdir(lock)
    time.sleep(0.002)
print("done", flush=True)
"""


@pytest.fixture
def home(reverie_env: dict[str, Path]) -> Path:
    return reverie_env["agent_home"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = (tmp_path / "project").resolve()
    (workspace / ".git" / "info").mkdir(parents=True)
    (workspace / ".git" / "info" / "exclude").write_text("")
    return workspace


def _state_file(home: Path) -> Path:
    path = home / ".claude.json"
    path.write_text(json.dumps(CLAUDE_STATE, indent=2), "utf-8")
    return path


def test_personal_scope_registers_in_claude_json_and_disconnect_restores_it(
        home: Path, ws: Path) -> None:
    state = _state_file(home)
    before = state.read_bytes()
    connect("claude-code", ws, "personal", Settings())
    data = json.loads(state.read_text("utf-8"))
    server = data["projects"][str(ws)]["mcpServers"]["reverie"]
    assert server["type"] == "stdio" and server["command"] == sys.executable
    assert server["args"] == ["-P", "-m", "reverie", "mcp", "--workspace", str(ws)]
    # everything else untouched
    assert data["projects"]["/somewhere/else"] == CLAUDE_STATE["projects"]["/somewhere/else"]
    assert data["mcpServers"] == CLAUDE_STATE["mcpServers"]
    assert not (ws / ".mcp.json").exists()  # never a file the user would commit
    listed = connections(ws, Settings()).connections
    assert any(f.role == "mcp" and f.state == "ok" for c in listed for f in c.files)
    # connecting again changes nothing
    assert not connect("claude-code", ws, "personal", Settings()).changed
    disconnect("claude-code", ws, Settings())
    assert state.read_bytes() == before


def test_the_registered_command_starts_the_mcp_server(home: Path, ws: Path) -> None:
    connect("claude-code", ws, "personal", Settings())
    server = json.loads((home / ".claude.json").read_text("utf-8"))["projects"][str(ws)][
        "mcpServers"]["reverie"]
    started = time.monotonic()
    done = subprocess.run([server["command"], *server["args"]], cwd=ws, input=b"",
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]  # EOF on stdin: a clean exit
    assert done.stdout == b""
    assert time.monotonic() - started < 60


def test_a_concurrent_writer_of_claude_json_loses_nothing(home: Path, ws: Path) -> None:
    state = _state_file(home)
    count = 300
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(state), str(count)],
                              stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.05)
        connect("claude-code", ws, "personal", Settings())
        time.sleep(0.05)
        disconnect("claude-code", ws, Settings())
    finally:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "done"
        writer.wait(timeout=60)
    data = json.loads(state.read_text("utf-8"))
    # every one of the writer's read-modify-writes is there: none was overwritten by ours
    assert data["tipsHistory"] == list(range(count))
    assert data["numStartups"] == CLAUDE_STATE["numStartups"] + count
    # and ours came and went: no trace of the server or the project entry we added
    assert str(ws) not in data["projects"]
    assert not Path(f"{state}.lock").exists()


def test_a_held_claude_lock_is_waited_for_then_reported(home: Path, ws: Path) -> None:
    state = _state_file(home)
    before = state.read_bytes()
    lock = Path(f"{state}.lock")
    lock.mkdir()
    try:
        with pytest.raises(ConnectError, match="locked by Claude Code"):
            connect("claude-code", ws, "personal", Settings())
    finally:
        lock.rmdir()
    assert state.read_bytes() == before
    assert not (ws / "CLAUDE.local.md").exists()  # the other files were put back too


def test_project_scope_writes_mcp_json_and_disconnect_removes_it(home: Path,
                                                                  ws: Path) -> None:
    result = connect("claude-code", ws, "project", Settings())
    mcp = json.loads((ws / ".mcp.json").read_text("utf-8"))
    assert mcp["mcpServers"]["reverie"]["args"][-2:] == ["reverie", "mcp"]  # cwd: the project
    assert any(".mcp.json" in note for note in result.notes)
    assert not (home / ".claude.json").exists()
    disconnect("claude-code", ws, Settings())
    assert not (ws / ".mcp.json").exists()


def test_an_existing_mcp_json_comes_back_byte_for_byte(home: Path, ws: Path) -> None:
    original = (b'{\n    "mcpServers": {\n        "db": {"command": "pg-mcp", "args": []}\n'
                b'    }\n}\n')
    (ws / ".mcp.json").write_bytes(original)
    connect("claude-code", ws, "project", Settings())
    data = json.loads((ws / ".mcp.json").read_text("utf-8"))
    assert set(data["mcpServers"]) == {"db", "reverie"}
    disconnect("claude-code", ws, Settings())
    assert (ws / ".mcp.json").read_bytes() == original


def test_someone_elses_server_named_reverie_is_never_overwritten(home: Path,
                                                                 ws: Path) -> None:
    theirs = {"projects": {str(ws): {"mcpServers": {"reverie": {
        "type": "stdio", "command": "/opt/other-tool", "args": ["serve"]}}}}}
    state = home / ".claude.json"
    state.write_text(json.dumps(theirs, indent=2), "utf-8")
    before = state.read_bytes()
    with pytest.raises(ConnectError, match="not Reverie's"):
        connect("claude-code", ws, "personal", Settings())
    assert state.read_bytes() == before
    assert not (ws / "CLAUDE.local.md").exists()  # nothing at all was written


def test_a_broken_claude_json_is_refused_and_left_alone(home: Path, ws: Path) -> None:
    state = home / ".claude.json"
    state.write_text('{"numStartups": 3,', "utf-8")
    with pytest.raises(ConnectError, match="not valid JSON"):
        connect("claude-code", ws, "personal", Settings())
    assert state.read_text("utf-8") == '{"numStartups": 3,'
