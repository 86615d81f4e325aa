"""Connections against a hostile repository or an unusual file (issue 27): the file a connection
writes is chosen by the user only and is a plain Markdown file; Aider's YAML is edited in place
or refused; linked folders are not written through; a restore keeps the user's formatting; no
secret reaches the ledger or the diff."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reverie.agents.connection import ConnectError, connect, disconnect
from reverie.agents.specs import safe_context_name
from reverie.config import Settings


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "project"
    (workspace / ".git" / "info").mkdir(parents=True)
    return workspace


def _files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", ["settings.json", "oauth_creds.json", "../.bashrc",
                                  "..\\..\\evil.md", "sub/NOTES.md", "CON.md", ".md", "x.md "])
def test_a_cloned_repositorys_gemini_settings_choose_nothing(
    name: str, ws: Path, reverie_env: dict[str, Path]
) -> None:
    home = reverie_env["agent_home"]
    gemini = home / ".gemini"
    gemini.mkdir(parents=True)
    (gemini / "settings.json").write_text('{"theme": "dark"}\n')
    (gemini / "oauth_creds.json").write_text('{"refresh_token": "x"}\n')
    (ws / ".gemini").mkdir()
    (ws / ".gemini" / "settings.json").write_text(json.dumps({"context": {"fileName": name}}))
    before = _files(gemini)

    connect("gemini", ws, "personal", Settings())
    after = _files(gemini)
    assert set(after) == set(before) | {str(gemini / "GEMINI.md")}
    for path, data in before.items():
        if path.endswith("settings.json"):  # only Reverie's MCP server is added to it
            added = json.loads(after[path])
            assert set(added.pop("mcpServers")) == {"reverie"}
            assert added == json.loads(data)
        else:
            assert after[path] == data  # the credentials are untouched
    assert not (home / ".bashrc").exists() and not (home.parent / "evil.md").exists()
    disconnect("gemini", ws, Settings())
    assert _files(gemini) == before


@pytest.mark.parametrize("name", ["settings.json", "oauth_creds.json", "../GEMINI.md",
                                  "nested/AGENTS.md", "NUL.md", "AGENTS..md"])
def test_the_users_own_setting_is_refused_when_it_is_not_a_plain_md_name(
    name: str, ws: Path, reverie_env: dict[str, Path]
) -> None:
    gemini = reverie_env["agent_home"] / ".gemini"
    gemini.mkdir(parents=True)
    settings_json = json.dumps({"context": {"fileName": name}})
    (gemini / "settings.json").write_text(settings_json)
    connect("gemini", ws, "personal", Settings())
    kept = json.loads((gemini / "settings.json").read_text())
    assert set(kept.pop("mcpServers")) == {"reverie"}  # Reverie's MCP server, nothing else
    assert kept == json.loads(settings_json)
    assert (gemini / "GEMINI.md").is_file()
    disconnect("gemini", ws, Settings())
    assert (gemini / "settings.json").read_text() == settings_json


def test_the_users_own_plain_name_is_used(ws: Path, reverie_env: dict[str, Path]) -> None:
    gemini = reverie_env["agent_home"] / ".gemini"
    gemini.mkdir(parents=True)
    (gemini / "settings.json").write_text(json.dumps({"context": {"fileName": ["AGENTS.md"]}}))
    connect("gemini", ws, "personal", Settings())
    assert "reverie:begin" in (gemini / "AGENTS.md").read_text()
    assert not (gemini / "GEMINI.md").exists()


def test_safe_context_names() -> None:
    assert safe_context_name("GEMINI.md") and safe_context_name("My Notes.md")
    for bad in ("GEMINI.md/..", "a\\b.md", "a/b.md", "..md", "com1.md", "x.txt", "", "x.md\x00"):
        assert not safe_context_name(bad), bad


# --- Aider's YAML: edited in place, refused where the shape is unexpected ----------------------


def test_a_quoted_read_key_gets_the_entry_in_the_users_own_list(
    ws: Path, reverie_env: dict[str, Path]
) -> None:
    """``"read":`` used to get a second ``read:`` block after it; YAML kept the last, so the
    user's own list was dropped."""
    import yaml

    path = ws / ".aider.conf.yml"
    original = '# mine\n"read":\n  - CONVENTIONS.md   # style\nmodel: sonnet\n'
    path.write_text(original)
    connect("aider", ws, "project", Settings())
    text = path.read_text()
    assert len(re.findall(r"(?m)^[\"']?read[\"']?\s*:", text)) == 1  # no second read: key
    data = yaml.safe_load(text)
    assert data["read"][1:] == ["CONVENTIONS.md"] and data["read"][0].endswith("MEMORY.md")
    assert "# style" in text and text.startswith("# mine\n")
    disconnect("aider", ws, Settings())
    assert path.read_text() == original


@pytest.mark.parametrize("original", [
    "read:\n  [CONVENTIONS.md,\n   OTHER.md]\nmodel: x\n",  # a flow list on the next line
    "read: [CONVENTIONS.md]\n",
    "read: CONVENTIONS.md\n",
    "read:\n  - a.md\nread:\n  - b.md\n",
    "- not\n- a mapping\n",
])
def test_a_read_list_reverie_cannot_extend_is_refused_and_nothing_is_written(
    original: str, ws: Path, reverie_env: dict[str, Path]
) -> None:
    path = ws / ".aider.conf.yml"
    path.write_text(original)
    with pytest.raises(ConnectError):
        connect("aider", ws, "project", Settings())
    assert path.read_text() == original


# --- linked folders, formatting, secrets -------------------------------------------------------


@pytest.mark.parametrize(("agent", "scope", "folder"), [
    ("claude-code", "personal", ".claude"),
    ("codex", "project", ".codex"),
    ("claude-code", "personal", ".git/info"),
])
def test_a_linked_parent_folder_is_refused_like_a_linked_file(
    agent: str, scope: str, folder: str, ws: Path, tmp_path: Path,
    reverie_env: dict[str, Path]
) -> None:
    elsewhere = tmp_path / "shared-dotfiles"
    elsewhere.mkdir()
    link = ws / folder
    if link.exists():
        link.rmdir()
    link.symlink_to(elsewhere, target_is_directory=True)
    before = _files(ws)
    with pytest.raises(ConnectError, match="symbolic link"):
        connect(agent, ws, scope, Settings())
    assert list(elsewhere.iterdir()) == [] and _files(ws) == before


def test_a_settings_file_with_a_secret_comes_back_in_its_own_formatting(
    ws: Path, reverie_env: dict[str, Path]
) -> None:
    """A file holding a secret is never copied into the ledger, so disconnect restores it
    from its structure: that used to reformat it (tabs, one-line objects)."""
    secret = "sk-ant-api03-" + "Q" * 80 + "AA"
    path = ws / ".claude" / "settings.local.json"
    path.parent.mkdir()
    original = ('{\n\t"env": {"ANTHROPIC_API_KEY": "' + secret + '"},\n'
                '\t"permissions": { "allow": ["Bash(ls)"] }\n}\n')
    path.write_text(original)
    connect("claude-code", ws, "personal", Settings())
    assert path.read_text().startswith(original[:-3])  # the user's lines as they were
    path.write_text(path.read_text().replace('\t"env"', '\t"model": "opus",\n\t"env"'))
    disconnect("claude-code", ws, Settings())
    assert path.read_text() == original.replace('\t"env"', '\t"model": "opus",\n\t"env"')


def test_no_secret_in_the_ledger_or_the_connect_diff(
    ws: Path, reverie_env: dict[str, Path]
) -> None:
    secret = "sk-ant-api03-" + "Q" * 80 + "AA"
    path = ws / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text('{\n  "env": {"ANTHROPIC_API_KEY": "' + secret + '"}\n}\n')
    from reverie.config import ProjectPaths

    preview = connect("claude-code", ws, "personal", Settings(), dry_run=True)
    done = connect("claude-code", ws, "personal", Settings())
    ledger = ProjectPaths(Settings(), ws).memory_dir / ".reverie" / "connections.json"
    for text in (preview.diff, done.diff, ledger.read_text()):
        assert "QQQQQQQQ" not in text
    assert "ANTHROPIC_API_KEY" in done.diff  # the context is still shown, its value is not
