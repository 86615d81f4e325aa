"""Connections against a hostile repository (issue 27): the file a connection writes is chosen by
the user only, and is a plain Markdown file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reverie.agents.connection import connect, disconnect
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
        assert after[path] == data  # settings.json and the credentials are untouched
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
    assert (gemini / "settings.json").read_text() == settings_json
    assert (gemini / "GEMINI.md").is_file()


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
