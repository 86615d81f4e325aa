"""Windows and macOS paths, homes and slugs, tested on any OS (pure path rules + real files).

Transcripts here are written in the shapes the agents write on Windows and macOS (see
docs/formats.md, "Windows and macOS"): the ``cwd`` and file paths use that OS's syntax.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PureWindowsPath

import orjson
import pytest

from reverie.agent_roots import AgentRoots
from reverie.config import CLAUDE_SLUG_LIMIT, claude_project_dir, claude_project_slug
from reverie.transcripts.discovery import claude_ref, codex_ref, discover_sessions, is_inside
from reverie.transcripts.pathstyle import PathStyle, looks_like_windows_path
from reverie.transcripts.reader import load_transcript

WIN, MAC, LINUX = PathStyle.win(), PathStyle.macos(), PathStyle.linux()


@pytest.mark.parametrize("style, child, root, inside", [
    # Windows: drive-letter case, name case, either separator, long-path prefix, UNC
    (WIN, r"c:\users\ME\proj\src", r"C:\Users\me\proj", True),
    (WIN, "C:/Users/me/proj", r"C:\Users\me\proj", True),
    (WIN, r"\\?\C:\Users\me\proj\x", r"c:\users\me\proj", True),
    (WIN, r"\\fileserver\share\proj\a", r"\\FILESERVER\Share\proj", True),
    (WIN, r"C:\Users\me\proj2", r"C:\Users\me\proj", False),
    (WIN, r"D:\Users\me\proj", r"C:\Users\me\proj", False),
    (WIN, r"C:\Users\me\proj\..\other", r"C:\Users\me\proj", False),
    (WIN, "/home/me/proj", r"C:\home\me\proj", False),  # a POSIX cwd is not a Windows place
    (WIN, r"proj\sub", r"C:\proj", False),  # relative
    # macOS: the default volume is case-insensitive
    (MAC, "/Users/Me/Proj/app", "/Users/me/proj", True),
    (MAC, "/Users/me/project", "/Users/me/proj", False),
    (MAC, r"C:\Users\me\proj", "/Users/me/proj", False),
    # Linux: exact
    (LINUX, "/Users/Me/Proj/app", "/Users/me/proj", False),
    (LINUX, "/home/me/proj/./a/../b", "/home/me/proj", True),
    (LINUX, r"C:\Users\me\proj", "/Users/me/proj", False),
    (LINUX, "", "/home/me/proj", False),
    (LINUX, "/home/me/proj\x00/x", "/home/me/proj", False),
])
def test_workspace_matching_per_os(style: PathStyle, child: str, root: str, inside: bool) -> None:
    assert style.is_inside(child, root) is inside


def test_host_style_is_the_running_os() -> None:
    host = PathStyle.host()
    assert host.windows is (os.name == "nt")
    assert is_inside("/a/b", Path("/a"), LINUX) and not is_inside("C:\\a", Path("/a"), LINUX)


def test_windows_spellings_cover_both_drive_cases() -> None:
    assert WIN.spellings(r"c:\Users\me\proj") == [r"c:\Users\me\proj", r"C:\Users\me\proj"]
    assert LINUX.spellings("/home/me") == ["/home/me"]
    assert looks_like_windows_path(r"C:\x") and looks_like_windows_path(r"\\srv\share")
    assert not looks_like_windows_path("/mnt/c/x")


@pytest.mark.parametrize("cwd, slug", [
    # examples reported against real Claude Code folders (cited in docs/formats.md)
    (r"C:\Users\john\Projects\myapp", "C--Users-john-Projects-myapp"),
    (r"D:\My DATA\Project", "D--My-DATA-Project"),
    ("/Users/foo/src/github.com/omnara-ai/omnara", "-Users-foo-src-github-com-omnara-ai-omnara"),
    ("/home/me/.local/x_y", "-home-me--local-x-y"),
    ("C:\\Users\\alice\\OneDrive\\文档\\some project", "C--Users-alice-OneDrive----some-project"),
])
def test_claude_slug(cwd: str, slug: str) -> None:
    assert claude_project_slug(cwd) == slug


def test_claude_slug_of_a_long_path_is_bounded_and_hashed(tmp_path: Path) -> None:
    long_path = "/work/" + "/".join(["segment"] * 40)
    slug = claude_project_slug(long_path)
    assert slug.startswith(claude_project_slug(long_path)[:CLAUDE_SLUG_LIMIT])
    assert len(slug) > CLAUDE_SLUG_LIMIT and slug[CLAUDE_SLUG_LIMIT] == "-"
    assert slug != claude_project_slug(long_path + "x")  # the hash tells them apart
    projects = tmp_path / "projects"
    projects.mkdir()
    assert claude_project_dir(projects, long_path) == projects / slug  # nothing there yet
    # a build that hashed differently: the one folder with the same prefix is the project's
    other = projects / (slug[:CLAUDE_SLUG_LIMIT] + "-zz9")
    other.mkdir()
    assert claude_project_dir(projects, long_path) == other
    (projects / (slug[:CLAUDE_SLUG_LIMIT] + "-aa1")).mkdir()  # ambiguous: the computed one
    assert claude_project_dir(projects, long_path) == projects / slug


def _write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _claude_windows_session(home: Path) -> Path:
    cwd = r"C:\Users\me\proj"
    sid = "7f0c7e4e-7c1e-4a43-9b55-2f3e2b1f6a10"
    return _write_jsonl(home / ".claude" / "projects" / claude_project_slug(cwd) / f"{sid}.jsonl", [
        {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd,
         "sessionId": sid, "version": "2.0.30", "gitBranch": "main", "type": "user",
         "message": {"role": "user", "content": "fix the failing test in src\\app.ts"},
         "uuid": "u1", "timestamp": "2026-03-02T10:00:00.000Z"},
        {"parentUuid": "u1", "isSidechain": False, "userType": "external", "cwd": cwd,
         "sessionId": sid, "version": "2.0.30", "type": "assistant",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "tool_use", "id": "toolu_1", "name": "Edit",
                                  "input": {"file_path": "C:\\Users\\me\\proj\\src\\app.ts",
                                            "old_string": "a", "new_string": "b"}}],
                     "usage": {"input_tokens": 10, "output_tokens": 5}},
         "uuid": "a1", "timestamp": "2026-03-02T10:00:05.000Z"},
    ])


def _codex_windows_session(home: Path) -> Path:
    return _write_jsonl(
        home / ".codex" / "sessions" / "2026" / "03" / "02"
        / "rollout-2026-03-02T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
        [{"timestamp": "2026-03-02T10:00:00.000Z", "type": "session_meta",
          "payload": {"id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
                      "timestamp": "2026-03-02T10:00:00.000Z", "cwd": r"C:\Users\me\proj",
                      "originator": "codex_cli_rs", "cli_version": "0.46.0"}},
         {"timestamp": "2026-03-02T10:00:01.000Z", "type": "response_item",
          "payload": {"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": "run the tests"}]}}])


def test_windows_transcripts_parse_and_match_only_a_windows_workspace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude = _claude_windows_session(home)
    codex = _codex_windows_session(home)
    transcript = load_transcript(claude)
    edited = [f for m in transcript.messages for c in m.tool_calls for f in c.file_paths]
    assert edited == [r"C:\Users\me\proj\src\app.ts"]
    for ref in (claude_ref(claude), codex_ref(codex)):
        assert ref is not None and ref.cwd == r"C:\Users\me\proj"
        # what Reverie on Windows does with VS Code's spelling of the folder
        assert WIN.is_inside(ref.cwd, str(PureWindowsPath(r"c:\users\me\PROJ")))
        assert not WIN.is_inside(ref.cwd, r"c:\users\me\other")
        # read on Linux (a shared folder, WSL): never taken for a local workspace
        assert not LINUX.is_inside(ref.cwd, "/mnt/c/Users/me/proj")
    if os.name != "nt":
        assert discover_sessions(tmp_path / "proj", home) == []


def test_macos_transcript_matches_a_differently_cased_workspace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = _write_jsonl(home / ".claude" / "projects" / "-Users-Me-Proj" / "s1.jsonl", [
        {"cwd": "/Users/Me/Proj", "sessionId": "s1", "type": "user", "uuid": "u1",
         "timestamp": "2026-03-02T10:00:00.000Z",
         "message": {"role": "user", "content": "hello"}}])
    ref = claude_ref(path)
    assert ref is not None
    assert MAC.is_inside(ref.cwd, "/Users/me/proj") and not LINUX.is_inside(ref.cwd,
                                                                           "/Users/me/proj")


def test_agent_roots_honour_the_agents_overrides_only_for_the_real_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-cfg"), "CODEX_HOME": str(tmp_path / "cx"),
           "GEMINI_CLI_HOME": str(tmp_path / "gh")}
    other = AgentRoots.for_home(tmp_path / "elsewhere", env)
    assert other.claude_projects == tmp_path / "elsewhere" / ".claude" / "projects"
    assert other.codex_sessions == tmp_path / "elsewhere" / ".codex" / "sessions"
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    monkeypatch.setenv("USERPROFILE", str(tmp_path / "me"))
    (tmp_path / "me").mkdir()
    real = AgentRoots.for_home(tmp_path / "me", env)
    assert real.claude_projects == tmp_path / "claude-cfg" / "projects"
    assert real.codex_sessions == tmp_path / "cx" / "sessions"
    assert real.gemini_tmp == tmp_path / "gh" / ".gemini" / "tmp"
    assert real.generic_sessions == tmp_path / "me" / ".reverie" / "sessions"
    relative = AgentRoots.for_home(tmp_path / "me", {"CODEX_HOME": "relative/dir"})
    assert relative.codex_sessions == tmp_path / "me" / ".codex" / "sessions"


def test_discovery_finds_codex_sessions_under_codex_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "me"
    workspace = tmp_path / "proj"
    workspace.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-state"))
    _write_jsonl(tmp_path / "codex-state" / "sessions" / "2026" / "03" / "02"
                 / "rollout-2026-03-02T10-00-00-abc.jsonl",
                 [{"timestamp": "2026-03-02T10:00:00.000Z", "type": "session_meta",
                   "payload": {"id": "abc", "cwd": str(workspace)}}])
    home.mkdir()
    assert [r.session_id for r in discover_sessions(workspace, home)] == ["abc"]
    # an explicit agent home that is not the user's home ignores CODEX_HOME
    assert discover_sessions(workspace, tmp_path / "other-home") == []


def test_gemini_hashes_every_spelling_of_a_windows_folder() -> None:
    spelled = WIN.spellings(r"c:\Users\me\proj")
    digests = {hashlib.sha256(s.encode()).hexdigest() for s in spelled}
    assert hashlib.sha256(rb"C:\Users\me\proj").hexdigest() in digests
