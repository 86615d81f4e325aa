"""connect / disconnect on real files in a temp home and workspace, for every agent."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from reverie.agents.connection import ConnectError, connect, connections, disconnect
from reverie.agents.ledger import load_ledger
from reverie.config import ProjectPaths, Settings
from reverie.types import CONNECTABLE_AGENTS as AGENTS


@pytest.fixture
def home(reverie_env: dict[str, Path]) -> Path:
    return reverie_env["agent_home"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "project"
    (workspace / ".git" / "info").mkdir(parents=True)
    (workspace / ".git" / "info" / "exclude").write_text("# git ls-files --others\n*.log\n")
    return workspace


@pytest.fixture
def settings() -> Settings:
    return Settings()


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under ``roots`` (relative path -> bytes), Reverie's own data excluded."""
    files: dict[str, bytes] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                files[str(path)] = path.read_bytes()
    return files


def dirs(*roots: Path) -> set[str]:
    return {str(p) for root in roots for p in root.rglob("*") if p.is_dir()}


USER_FILES = {
    "claude-code": {"CLAUDE.local.md": b"# My notes\n\nUse pnpm.\n",
                    ".claude/settings.local.json":
                        b'{\n    "permissions": {\n        "allow": ["Bash(ls)"]\n    }\n}\n'},
    "codex": {"~/.codex/AGENTS.md": b"Always run the tests.\n",
              "~/.codex/hooks.json": b'{"hooks": {"Stop": [{"hooks": [{"type": "command", '
                                     b'"command": "notify-send done"}]}]}}',
              # Reverie's MCP server goes in after the user's own, comments and all
              "~/.codex/config.toml": b'# my settings\nmodel = "gpt-5"  # the default\n\n'
                                      b'[mcp_servers.docs]\ncommand = "docs-mcp"\n'
                                      b'args = ["--stdio"]\n'},
    "gemini": {"~/.gemini/GEMINI.md": b"Be brief.",
               "~/.gemini/settings.json": b'{\n  "theme": "GitHub",\n  "mcpServers": {\n'
                                          b'    "git": {"command": "uvx", "args": '
                                          b'["mcp-server-git"]}\n  }\n}\n'},
    "aider": {".aider.conf.yml": b"model: sonnet\nread:\n  - CONVENTIONS.md\n"},
    # the editor's agents: Reverie writes a file of its own beside the user's, and its MCP
    # server into the settings the extension keeps (with the user's own servers in them)
    "copilot-chat": {"~/.config/Code/User/prompts/style.instructions.md":
                         b"---\napplyTo: '**/*.py'\n---\nUse type hints.\n",
                     "~/.copilot/hooks/format.json":
                         b'{"hooks": {"PostToolUse": [{"type": "command", '
                         b'"command": "npx prettier --write ."}]}}\n'},
    "cline": {"~/Documents/Cline/Rules/style.md": b"Prefer small commits.\n",
              "~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/"
              "cline_mcp_settings.json":
                  b'{\n  "mcpServers": {\n    "github": {\n      "command": "npx",\n'
                  b'      "args": ["-y", "@modelcontextprotocol/server-github"],\n'
                  b'      "disabled": false,\n      "autoApprove": []\n    }\n  }\n}'},
    "roo-code": {"~/.roo/rules/style.md": b"Prefer small commits.\n",
                 "~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/"
                 "mcp_settings.json":
                     b'{\n\t"mcpServers": {\n\t\t"fs": {"command": "uvx", "args": '
                     b'["mcp-server-fs"], "alwaysAllow": []}\n\t}\n}\n'},
    "kilo-code": {"~/.kilocode/rules/style.md": b"Prefer small commits.\n",
                  "~/.config/Code/User/globalStorage/kilocode.kilo-code/settings/"
                  "mcp_settings.json": b'{"mcpServers": {}}'},
    "continue": {"~/.continue/rules/style.md": b"---\nalwaysApply: true\n---\nBe brief.\n",
                 "~/.continue/mcpServers/sqlite.json":
                     b'{"mcpServers": {"sqlite": {"command": "uvx", "args": ["mcp-sqlite"]}}}'},
}


def place(files: dict[str, bytes], ws: Path, home: Path) -> list[Path]:
    placed = []
    for name, data in files.items():
        path = home / name[2:] if name.startswith("~/") else ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        placed.append(path)
    return placed


@pytest.mark.parametrize("agent", AGENTS)
def test_connect_twice_is_once_and_disconnect_restores_every_byte(
    agent: str, ws: Path, home: Path, settings: Settings
) -> None:
    place(USER_FILES[agent], ws, home)
    before, before_dirs = snapshot(ws, home), dirs(ws, home)

    first = connect(agent, ws, "personal", settings)
    assert first.changed and first.scope == "personal"
    after_first = snapshot(ws, home)
    assert after_first != before
    for path, data in before.items():  # the user's text is all still there, in order
        if path in after_first and path.endswith((".md", ".yml")):
            text = after_first[path].decode()
            old = data.decode()
            assert old.rstrip("\n") in text or all(line in text for line in old.splitlines())
    second = connect(agent, ws, "personal", settings)
    assert not second.changed
    assert snapshot(ws, home) == after_first

    gone = disconnect(agent, ws, settings)
    assert gone.changed
    assert snapshot(ws, home) == before
    assert dirs(ws, home) == before_dirs
    assert load_ledger(ProjectPaths(settings, ws).memory_dir).find(agent, ws.resolve()) is None


@pytest.mark.parametrize("agent", AGENTS)
def test_missing_files_are_created_then_removed_with_their_folders(
    agent: str, ws: Path, home: Path, settings: Settings
) -> None:
    before, before_dirs = snapshot(ws, home), dirs(ws, home)
    result = connect(agent, ws, "personal", settings)
    created = [f for f in result.files if f.action == "create"]
    assert created and all(Path(f.path).is_file() for f in created)
    for f in created:
        assert stat.S_IMODE(Path(f.path).stat().st_mode) == 0o600
    disconnect(agent, ws, settings)
    assert snapshot(ws, home) == before
    assert dirs(ws, home) == before_dirs


def test_claude_code_personal_imports_memory_and_installs_hooks(
    ws: Path, settings: Settings
) -> None:
    result = connect("claude-code", ws, "personal", settings)
    memory_dir = ProjectPaths(settings, ws).memory_dir
    local = (ws / "CLAUDE.local.md").read_text()
    assert f"@{memory_dir / 'MEMORY.md'}" in local
    assert result.mode == "import"
    hooks = json.loads((ws / ".claude" / "settings.local.json").read_text())["hooks"]
    assert hooks["PreCompact"][0]["hooks"][0]["command"].split()[-3:-1] == [
        "pre-compact", "--data-dir"]
    assert hooks["SessionStart"][0]["matcher"] == "compact|resume"
    assert "hook session-start" in hooks["SessionStart"][0]["hooks"][0]["command"]
    exclude = (ws / ".git" / "info" / "exclude").read_text()
    assert "/CLAUDE.local.md\n" in exclude and "/.claude/settings.local.json\n" in exclude
    assert not (ws / "CLAUDE.md").exists() and not (ws / ".claude" / "settings.json").exists()


def test_installed_hooks_never_import_the_projects_code(ws: Path, settings: Settings,
                                                         tmp_path: Path) -> None:
    """The agent runs a hook in the project: a repository's own ``reverie`` package (or a
    module shadowing a dependency) must not be what runs."""
    connect("claude-code", ws, "personal", settings)
    hooks = json.loads((ws / ".claude" / "settings.local.json").read_text())["hooks"]
    trap = tmp_path / "imported.log"
    for name in ("reverie/__init__.py", "yaml.py", "pydantic/__init__.py"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(f"open({str(trap)!r}, 'a').write({name!r})\nraise SystemExit(7)\n")
    for event in ("PreCompact", "SessionStart", "UserPromptSubmit"):
        command = hooks[event][0]["hooks"][0]["command"]
        done = subprocess.run(command, shell=True, cwd=ws, capture_output=True, timeout=120,
                              input=json.dumps({"session_id": "s", "cwd": str(ws)}).encode())
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert not trap.exists(), trap.read_text()
    # hooks written before the fix (no -P) are replaced by connecting again
    local = ws / ".claude" / "settings.local.json"
    local.write_text(local.read_text().replace(" -P -m reverie", " -m reverie"))
    connect("claude-code", ws, "personal", settings)
    hooks = json.loads(local.read_text())["hooks"]
    assert all(" -P -m reverie hook " in group["hooks"][0]["command"]
               for groups in hooks.values() for group in groups)
    assert sum(len(groups) for groups in hooks.values()) == 3


def test_project_scope_writes_shared_files_and_says_so(
    ws: Path, home: Path, settings: Settings
) -> None:
    result = connect("codex", ws, "project", settings)
    assert (ws / "AGENTS.md").is_file() and (ws / ".codex" / "hooks.json").is_file()
    assert not (home / ".codex").exists()
    assert any("project scope writes files meant to be committed" in n for n in result.notes)
    assert "reverie:begin codex" not in (ws / ".git" / "info" / "exclude").read_text()
    with pytest.raises(ConnectError, match="connected at project scope"):
        connect("codex", ws, "personal", settings)


def test_crlf_file_keeps_crlf_and_comes_back_exactly(ws: Path, settings: Settings) -> None:
    original = b"# Team rules\r\n\r\nRun make test.\r\n"
    (ws / "CLAUDE.md").write_bytes(original)
    connect("claude-code", ws, "project", settings)
    data = (ws / "CLAUDE.md").read_bytes()
    assert data.startswith(original)
    assert b"\n" not in data.replace(b"\r\n", b"")  # every line ending is CRLF
    disconnect("claude-code", ws, settings)
    assert (ws / "CLAUDE.md").read_bytes() == original


def test_file_without_final_newline_comes_back_exactly(ws: Path, home: Path,
                                                       settings: Settings) -> None:
    target = home / ".gemini" / "GEMINI.md"
    target.parent.mkdir()
    target.write_bytes(b"no newline at the end")
    connect("gemini", ws, "personal", settings)
    assert target.read_bytes().startswith(b"no newline at the end\n\n<!-- reverie:begin")
    disconnect("gemini", ws, settings)
    assert target.read_bytes() == b"no newline at the end"


def test_text_the_user_adds_around_the_block_survives_disconnect(
    ws: Path, home: Path, settings: Settings
) -> None:
    target = home / ".codex" / "AGENTS.md"
    target.parent.mkdir()
    target.write_text("top\n")
    connect("codex", ws, "personal", settings)
    target.write_text("added before\n" + target.read_text() + "added after\n")
    disconnect("codex", ws, settings)
    assert target.read_text() == "added before\ntop\nadded after\n"


def test_json_settings_changed_after_connect_keep_the_users_entries(
    ws: Path, settings: Settings
) -> None:
    path = ws / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text('{"hooks": {"PreCompact": [{"matcher": "", "hooks": [{"type": "command", '
                    '"command": "my-backup.sh"}]}]}}')
    connect("claude-code", ws, "personal", settings)
    data = json.loads(path.read_text())
    commands = [g["hooks"][0]["command"] for g in data["hooks"]["PreCompact"]]
    assert commands[0] == "my-backup.sh" and "reverie hook pre-compact" in commands[1]
    data["permissions"] = {"allow": ["Bash(make)"]}  # Claude Code itself writes this file
    path.write_text(json.dumps(data, indent=2))
    disconnect("claude-code", ws, settings)
    assert json.loads(path.read_text()) == {
        "hooks": {"PreCompact": [{"matcher": "", "hooks": [
            {"type": "command", "command": "my-backup.sh"}]}]},
        "permissions": {"allow": ["Bash(make)"]},
    }


def test_aider_one_line_read_is_a_clear_error(ws: Path, settings: Settings) -> None:
    (ws / ".aider.conf.yml").write_text("read: [CONVENTIONS.md]\n")
    before = snapshot(ws)
    with pytest.raises(ConnectError, match="flow list"):
        connect("aider", ws, "personal", settings)
    assert snapshot(ws) == before


def test_aider_read_list_gets_one_tagged_line(ws: Path, settings: Settings) -> None:
    (ws / ".aider.conf.yml").write_text("read:\n    - CONVENTIONS.md\nmodel: x\n")
    connect("aider", ws, "personal", settings)
    lines = (ws / ".aider.conf.yml").read_text().splitlines()
    assert lines[0] == "read:"
    assert lines[1].startswith('    - "') and "MEMORY.md" in lines[1]
    assert lines[2:] == ["    - CONVENTIONS.md", "model: x"]


def test_read_only_file_is_an_error_and_nothing_is_written(
    ws: Path, home: Path, settings: Settings
) -> None:
    (ws / "CLAUDE.local.md").write_text("mine\n")
    (ws / "CLAUDE.local.md").chmod(0o444)
    before = snapshot(ws, home)
    with pytest.raises(ConnectError, match="read-only"):
        connect("claude-code", ws, "personal", settings)
    assert snapshot(ws, home) == before
    assert not (ws / ".claude").exists()


def test_symlinked_instruction_file_is_refused(ws: Path, settings: Settings) -> None:
    (ws / "AGENTS.md").write_text("shared\n")
    (ws / "CLAUDE.md").symlink_to("AGENTS.md")
    before = snapshot(ws)
    with pytest.raises(ConnectError, match="symbolic link"):
        connect("claude-code", ws, "project", settings)
    assert snapshot(ws) == before and (ws / "CLAUDE.md").is_symlink()


def test_damaged_block_is_an_error_for_connect_and_disconnect(
    ws: Path, home: Path, settings: Settings
) -> None:
    connect("gemini", ws, "personal", settings)
    target = home / ".gemini" / "GEMINI.md"
    text = target.read_text()
    end = next(line for line in text.splitlines() if "reverie:end" in line)
    target.write_text(text.replace(end + "\n", ""))
    before = snapshot(ws, home)
    with pytest.raises(ConnectError, match="damaged"):
        connect("gemini", ws, "personal", settings)
    with pytest.raises(ConnectError, match="damaged"):
        disconnect("gemini", ws, settings)
    assert snapshot(ws, home) == before


def test_unknown_agent_and_bad_workspace_are_errors(ws: Path, tmp_path: Path,
                                                    settings: Settings) -> None:
    with pytest.raises(ConnectError, match="unknown agent 'cursor'"):
        connect("cursor", ws, "personal", settings)
    not_dir = tmp_path / "file.txt"
    not_dir.write_text("x")
    with pytest.raises(ConnectError, match="not a directory"):
        connect("codex", not_dir, "personal", settings)
    with pytest.raises(ConnectError, match="not a directory"):
        connect("codex", tmp_path / "missing", "personal", settings)
    with pytest.raises(ConnectError, match="not connected"):
        disconnect("codex", ws, settings)


def test_dry_run_prints_a_diff_and_writes_nothing(ws: Path, home: Path,
                                                  settings: Settings) -> None:
    (ws / "CLAUDE.local.md").write_text("mine\n")
    before = snapshot(ws, home)
    result = connect("claude-code", ws, "personal", settings, dry_run=True)
    assert result.dry_run and result.changed
    assert f"--- {ws / 'CLAUDE.local.md'}" in result.diff
    assert "--- /dev/null" in result.diff and "+<!-- reverie:begin claude-code" in result.diff
    assert snapshot(ws, home) == before
    connect("claude-code", ws, "personal", settings)
    preview = disconnect("claude-code", ws, settings, dry_run=True)
    assert "-<!-- reverie:begin claude-code" in preview.diff
    assert (ws / "CLAUDE.local.md").read_text() != "mine\n"


def test_disconnect_without_the_ledger_finds_the_blocks(ws: Path, home: Path,
                                                        settings: Settings) -> None:
    (home / ".codex").mkdir()
    (home / ".codex" / "AGENTS.md").write_text("top\n")
    connect("codex", ws, "personal", settings)
    memory_dir = ProjectPaths(settings, ws).memory_dir
    (memory_dir / ".reverie" / "connections.json").unlink()
    disconnect("codex", ws, settings)
    assert (home / ".codex" / "AGENTS.md").read_text() == "top\n"
    # hooks.json is shared by every workspace's connection: the machine-wide record of its
    # users knows connect created it, so it goes again
    assert not (home / ".codex" / "hooks.json").exists()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_personal_scope_refuses_a_file_git_tracks(ws: Path, settings: Settings) -> None:
    shutil.rmtree(ws / ".git")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", str(ws)], check=True, env=env)
    (ws / ".aider.conf.yml").write_text("model: x\n")
    subprocess.run(["git", "-C", str(ws), "add", ".aider.conf.yml"], check=True, env=env)
    with pytest.raises(ConnectError, match="tracked by git"):
        connect("aider", ws, "personal", settings)
    assert (ws / ".aider.conf.yml").read_text() == "model: x\n"
    connect("aider", ws, "project", settings)  # the shared file is what project scope is for
    assert "MEMORY.md" in (ws / ".aider.conf.yml").read_text()


def test_connections_lists_files_and_their_state(ws: Path, home: Path,
                                                 settings: Settings) -> None:
    connect("gemini", ws, "personal", settings)
    connect("claude-code", ws, "personal", settings)
    (home / ".gemini" / "GEMINI.md").write_text("the user removed the block\n")
    listing = connections(ws, settings)
    states = {(c.agent, f.role): f.state for c in listing.connections for f in c.files}
    assert states[("gemini", "memory")] == "block-missing"
    assert states[("claude-code", "memory")] == "ok"
    assert states[("claude-code", "hooks")] == "ok"


def test_a_settings_file_with_a_secret_is_never_copied_into_the_ledger(
    ws: Path, settings: Settings
) -> None:
    secret = "sk-ant-api03-" + "Q" * 80 + "AA"
    path = ws / ".claude" / "settings.local.json"
    path.parent.mkdir()
    original = json.dumps({"env": {"ANTHROPIC_API_KEY": secret}}, indent=2) + "\n"
    path.write_text(original)
    connect("claude-code", ws, "personal", settings)
    ledger = ProjectPaths(settings, ws).memory_dir / ".reverie" / "connections.json"
    assert secret not in ledger.read_text()
    disconnect("claude-code", ws, settings)
    assert json.loads(path.read_text()) == json.loads(original)  # restored structurally


def test_claude_code_auto_memory_preset_needs_only_the_hooks(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REVERIE_MEMORY_DIR_PRESET", "claude-code")
    settings = Settings()
    result = connect("claude-code", ws, "personal", settings)
    assert result.mode == "none"
    assert any("auto-memory directory" in n for n in result.notes)
    assert not (ws / "CLAUDE.local.md").exists()
    assert "reverie hook" in (ws / ".claude" / "settings.local.json").read_text()
    disconnect("claude-code", ws, settings)
    assert not (ws / ".claude").exists()


def test_reconnect_after_the_user_deleted_the_block(ws: Path, home: Path,
                                                    settings: Settings) -> None:
    target = home / ".gemini" / "GEMINI.md"
    target.parent.mkdir()
    target.write_text("mine\n")
    connect("gemini", ws, "personal", settings)
    target.write_text("mine, edited")  # the block is gone, and so is the final newline
    connect("gemini", ws, "personal", settings)
    assert "reverie:begin gemini" in target.read_text()
    disconnect("gemini", ws, settings)
    assert target.read_text() == "mine, edited"


def test_editor_agents_get_a_rules_file_of_reverie_s_own(ws: Path, home: Path,
                                                         settings: Settings) -> None:
    """Each reads the file by itself: front matter first where the agent needs it (VS Code
    applies an instructions file only with ``applyTo``; Continue a rule only with
    ``alwaysApply`` or matching globs), then the labelled copy of MEMORY.md."""
    from reverie.config import project_key

    memory = ProjectPaths(settings, ws.resolve()).memory_dir
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "MEMORY.md").write_text("- [Build](build.md) — pnpm, never npm\n")
    key = project_key(ws.resolve())
    expected = {
        "copilot-chat": home / ".config/Code/User/prompts" / f"reverie-{key}.instructions.md",
        "cline": home / "Documents/Cline/Rules" / f"reverie-{key}.md",
        "roo-code": home / ".roo/rules" / f"reverie-{key}.md",
        "kilo-code": home / ".kilocode/rules" / f"reverie-{key}.md",
        "continue": home / ".continue/rules" / f"reverie-{key}.md",
    }
    for agent, path in expected.items():
        connect(agent, ws, "personal", settings)
        text = path.read_text()
        assert "pnpm, never npm" in text
        assert f"Applies only when working in `{ws.resolve()}`" in text
        if agent == "copilot-chat":
            assert text.startswith('---\napplyTo: "**"\n')
        elif agent == "continue":
            assert text.startswith("---\nname: ") and "\nalwaysApply: true\n---\n" in text
        else:
            assert text.startswith("<!-- reverie:begin ")
    listed = connections(ws, settings, detect=False)
    assert {c.agent for c in listed.connections} == set(expected)
    from reverie.agents.refresh import refresh_copies

    (memory / "MEMORY.md").write_text("- [Build](build.md) — pnpm 9 only\n")
    assert set(refresh_copies(memory)) == set(expected.values())
    assert expected["copilot-chat"].read_text().startswith('---\napplyTo: "**"\n')
    assert all("pnpm 9 only" in p.read_text() for p in expected.values())
    for agent, path in expected.items():
        disconnect(agent, ws, settings)
        assert not path.exists()


def test_editor_agents_project_scope(ws: Path, settings: Settings) -> None:
    places = {
        "copilot-chat": ws / ".github" / "copilot-instructions.md",
        "cline": ws / ".clinerules" / "reverie-memory.md",
        "roo-code": ws / ".roo" / "rules" / "reverie-memory.md",
        "kilo-code": ws / ".kilocode" / "rules" / "reverie-memory.md",
        "continue": ws / ".continue" / "rules" / "reverie-memory.md",
    }
    for agent, path in places.items():
        connect(agent, ws, "project", settings)
        assert path.is_file()
        disconnect(agent, ws, settings)
        assert not path.exists()
    (ws / ".clinerules").write_text("Use tabs.\n")  # the older single-file form
    connect("cline", ws, "project", settings)
    assert (ws / ".clinerules").read_text().startswith("Use tabs.\n\n<!-- reverie:begin cline")
    disconnect("cline", ws, settings)
    assert (ws / ".clinerules").read_text() == "Use tabs.\n"


def test_sessions_of_editor_agents_offer_their_connection() -> None:
    from reverie.agents.connection import agents_of

    assert agents_of(["copilot-chat", "kilo-code", "continue", "gemini-cli"]) == [
        "gemini", "copilot-chat", "kilo-code", "continue"]
