"""Discovery under a temp agent home: cwd matching, sub-agents, current session, dream gate."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from reverie.transcripts.discovery import (
    current_session,
    discover_sessions,
    sessions_touched_since,
)

from .conftest import CODEX_WS, FIX, PRIVATE_WS, SPOTTER_ID, SPOTTER_WS, at, set_mtime


def test_claude_sessions_match_on_record_cwd_not_slug(agent_home: Path) -> None:
    refs = discover_sessions(Path(SPOTTER_WS), agent_home)
    assert {r.session_id for r in refs} == {SPOTTER_ID, "agent-a2898e3", "agent-acompact-e1f845"}
    subs = [r for r in refs if r.is_subagent]
    assert {r.parent_session_id for r in subs} == {SPOTTER_ID}
    assert all(r.cwd == SPOTTER_WS for r in refs)
    # the decoy directory has a matching-looking slug but its records say /path/to/Demo
    assert not any("spotter-worktrees-spotter/" in str(r.path) for r in refs)
    assert [r.session_id for r in discover_sessions(Path("/path/to/Demo"), agent_home)] == [
        "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    ]


def test_memory_dir_is_skipped_and_sibling_agents_found(agent_home: Path) -> None:
    refs = discover_sessions(Path(PRIVATE_WS), agent_home)
    assert sorted(r.session_id for r in refs) == [
        "4c2ddfdc-b619-4525-8d03-1950fb1b0257", "agent-36541525", "agent-50243ee8",
    ]
    assert all("memory" not in r.path.parts for r in refs)
    parents = {r.session_id: r.parent_session_id for r in refs}
    assert parents["agent-36541525"] == "4c2ddfdc-b619-4525-8d03-1950fb1b0257"


def test_subfolder_sessions_belong_to_the_workspace(agent_home: Path) -> None:
    assert discover_sessions(Path("/home/USER/projects"), agent_home)  # cwd inside it
    assert discover_sessions(Path(SPOTTER_WS + "-other"), agent_home) == []
    assert discover_sessions(Path(SPOTTER_WS + "/lib"), agent_home) == []  # cwd is the parent


def test_codex_by_session_meta_cwd(agent_home: Path) -> None:
    refs = discover_sessions(Path(CODEX_WS), agent_home)
    assert [r.agent for r in refs] == ["codex"]
    assert refs[0].session_id == "019e1625-789d-76c0-80ab-3724b5ddb799"


def test_gemini_by_project_hash(gemini_workspace: Path, agent_home: Path) -> None:
    refs = discover_sessions(gemini_workspace, agent_home)
    assert sorted(r.session_id for r in refs) == [
        "37b7abef-713d-4522-85f0-8ff15a4e6d17",
        "5b959dae-8655-4cd1-b10f-720b8c336ea2",
        "gemini_stage0_jsonl",
    ]
    assert all(r.agent == "gemini-cli" for r in refs)


def test_aider_runs_in_the_workspace(tmp_path: Path, agent_home: Path) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".git").mkdir(parents=True)
    shutil.copy(FIX / "aider/aider-repo/.aider.chat.history.md", workspace)
    refs = discover_sessions(workspace, agent_home)
    assert len(refs) == 147 and {r.agent for r in refs} == {"aider"}
    current = current_session(workspace, agent_home)
    assert current is not None and current.session_id == refs[0].session_id
    sub = workspace / "pkg"
    sub.mkdir()
    assert len(discover_sessions(sub, agent_home)) == 147  # found at the git root


def test_generic_sessions_need_a_project(tmp_path: Path, agent_home: Path) -> None:
    sessions = agent_home / ".reverie" / "sessions"
    sessions.mkdir(parents=True)
    line = orjson.dumps({"role": "user", "content": "hi"}) + b"\n"
    (sessions / "mine.jsonl").write_bytes(line)
    (sessions / "mine.json").write_bytes(orjson.dumps({"workspace_dir": str(tmp_path)}))
    (sessions / "elsewhere.jsonl").write_bytes(line)
    (sessions / "elsewhere.json").write_bytes(orjson.dumps({"project_path": "/other"}))
    (sessions / "nobody.jsonl").write_bytes(line)
    refs = discover_sessions(tmp_path, agent_home)
    assert [(r.agent, r.session_id) for r in refs] == [("generic", "mine")]


def test_current_session_and_touched_since(agent_home: Path) -> None:
    projects = agent_home / ".claude" / "projects" / "-tmp-private"
    main = projects / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
    set_mtime(main, at(2026, 3, 1))
    set_mtime(projects / "agent-36541525.jsonl", at(2026, 3, 5))  # sub-agents never current
    set_mtime(projects / "agent-50243ee8.jsonl", at(2026, 3, 5))
    second = projects / "11111111-2222-3333-4444-555555555555.jsonl"
    second.write_bytes((FIX / "claude-code/spotter-v2.1.38-tool-heavy/tool_heavy.jsonl")
                       .read_bytes().replace(b"/home/marco/projects/spotter", b"/tmp/private"))
    set_mtime(second, at(2026, 3, 3))
    current = current_session(Path(PRIVATE_WS), agent_home)
    assert current is not None and current.session_id == second.stem
    touched = sessions_touched_since(Path(PRIVATE_WS), agent_home, at(2026, 2, 28))
    assert [r.session_id for r in touched] == [second.stem, main.stem]
    assert [r.session_id for r in sessions_touched_since(
        Path(PRIVATE_WS), agent_home, at(2026, 2, 28), exclude_session_id=second.stem
    )] == [main.stem]
    assert sessions_touched_since(Path(PRIVATE_WS), agent_home, at(2026, 3, 4)) == []


def test_an_unknown_workspace_has_no_current_session(agent_home: Path) -> None:
    assert current_session(Path("/nowhere"), agent_home) is None
