"""Finding the editor's agents' sessions of a workspace: VS Code user-data dirs by platform and
flavour, ``workspace.json`` URIs (remote and virtual ones skipped with a reason), the
extensions' task folders and how each extension records a task's workspace, Continue's index,
the folders the running editor reports, and ``reverie sessions`` over all of it."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.transcripts.discovery import discover_sessions, session_ref
from reverie.transcripts.editor_discovery import editor_watch_roots
from reverie.transcripts.editor_places import EditorPlaces, local_path_of_uri

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
COPILOT_JSON = (FIX / "copilot-chat/source-types/chatSessions/"
                "3f8e2b7c-9a41-4d6e-b0c5-7e1d2a9f4b68.json")
COPILOT_LOG = (FIX / "copilot-chat/source-types/chatSessions/"
               "8c2d4e6f-1a3b-4c5d-9e7f-0a1b2c3d4e5f.jsonl")
CLINE_TASK = FIX / "cline/source-types/saoudrizwan.claude-dev/tasks/1769100000000"
ROO_TASK = (FIX / "roo-code/source-types/rooveterinaryinc.roo-cline/tasks/"
            "0b9c1f2e-5d4a-4c3b-9e8f-7a6b5c4d3e2f")
KILO_TASK = (FIX / "kilo-code/source-types/kilocode.kilo-code/tasks/"
             "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0")
CONTINUE_IDE = FIX / "continue/source-types/sessions/3c1d9a44-2f7e-4b8a-9c61-0d5e4f3a2b1c.json"
CONTINUE_CLI = FIX / "continue/source-types-cli/sessions/4b6d8f0a-2c4e-4f6a-8c0e-2a4c6e8f0a2c.json"


def storage(user: Path, name: str, meta: dict[str, str] | None) -> Path:
    folder = user / "workspaceStorage" / name
    (folder / "chatSessions").mkdir(parents=True)
    if meta is not None:
        (folder / "workspace.json").write_text(json.dumps(meta))
    return folder


def put(source: Path, folder: Path, name: str | None = None) -> Path:
    target = folder / (name or source.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "shop"
    path.mkdir()
    return path


@pytest.fixture
def home(reverie_env: dict[str, Path]) -> Path:
    return reverie_env["agent_home"]


def test_copilot_sessions_by_workspace_json(home: Path, workspace: Path, tmp_path: Path) -> None:
    user = home / ".config" / "Code" / "User"
    mine = storage(user, "a1", {"folder": workspace.as_uri()})
    put(COPILOT_JSON, mine / "chatSessions")
    log = put(COPILOT_LOG, mine / "chatSessions")
    # the same session in both forms: VS Code reads the log, so does discovery
    put(COPILOT_LOG, mine / "chatSessions", COPILOT_LOG.stem + ".json").write_text("{}")
    os.utime(mine / "chatSessions" / (COPILOT_LOG.stem + ".json"), (1, 1))
    sub = workspace / "pkg"
    sub.mkdir()
    inside = storage(user, "a2", {"folder": sub.as_uri()})  # a folder inside the workspace
    put(COPILOT_JSON, inside / "chatSessions", "inner.json")
    remote = storage(user, "r1", {"folder": "vscode-remote://ssh-remote%2Bbox" + str(workspace)})
    put(COPILOT_JSON, remote / "chatSessions")
    virtual = storage(user, "v1", {"folder": "vscode-vfs://github/me/shop"})
    put(COPILOT_JSON, virtual / "chatSessions")
    other = storage(user, "o1", {"folder": (tmp_path / "elsewhere").as_uri()})
    put(COPILOT_JSON, other / "chatSessions")
    (mine / "chatSessions" / "new.jsonl").write_text(  # a chat opened, nothing asked yet
        '{"kind":0,"v":{"version":3,"sessionId":"new","requests":[],"inputState":{}}}\n')
    storage(user, "n1", None)  # no workspace.json: not ours
    put(COPILOT_JSON, user / "workspaceStorage" / "n1" / "chatSessions")
    notes: list[str] = []
    refs = discover_sessions(workspace, home, notes=notes)
    got = sorted((r.agent, r.path.parent.parent.name, r.path.name, r.cwd) for r in refs)
    assert got == [
        ("copilot-chat", "a1", COPILOT_JSON.name, str(workspace)),
        ("copilot-chat", "a1", log.name, str(workspace)),
        ("copilot-chat", "a2", "inner.json", str(sub)),
    ]
    assert any("vscode-remote" in n and "not a folder on this machine" in n for n in notes)
    assert any("vscode-vfs" in n for n in notes)
    assert session_ref(log, workspace, home) is not None
    assert session_ref(remote / "chatSessions" / COPILOT_JSON.name, workspace, home) is None
    assert session_ref(mine / "chatSessions" / (COPILOT_LOG.stem + ".json"), workspace,
                       home) is None  # the log is the one read


@pytest.mark.parametrize(("platform", "parts"), [
    ("linux", (".config", "Code - Insiders", "User")),
    ("linux", (".config", "VSCodium", "User")),
    ("linux", (".local", "share", "code-server", "User")),
    ("linux", (".vscode-server", "data", "User")),
    ("darwin", ("Library", "Application Support", "Code", "User")),
    ("win32", ("AppData", "Roaming", "Code", "User")),
])
def test_user_dirs_by_platform_and_flavour(home: Path, workspace: Path, platform: str,
                                           parts: tuple[str, ...]) -> None:
    user = home.joinpath(*parts)
    put(COPILOT_JSON, storage(user, "h", {"folder": workspace.as_uri()}) / "chatSessions")
    places = EditorPlaces.detect(home, env={}, platform=platform)
    assert user in places.user_dirs
    refs = discover_sessions(workspace, home, editor=places)
    assert [r.agent for r in refs] == ["copilot-chat"]


def test_user_dir_override(home: Path, workspace: Path, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    product = tmp_path / "portable" / "data"
    put(COPILOT_JSON, storage(product / "User", "h", {"folder": workspace.as_uri()})
        / "chatSessions")
    monkeypatch.setenv("REVERIE_VSCODE_USER_DIR", str(product))  # the folder above User works
    assert EditorPlaces.detect(home).user_dirs == (product / "User",)
    assert [r.agent for r in discover_sessions(workspace, home)] == ["copilot-chat"]


def test_multi_root_workspace_file(home: Path, workspace: Path, tmp_path: Path) -> None:
    config = tmp_path / "team.code-workspace"
    config.write_text('{\n  // the folders\n  "folders": [{"path": "shop"}, '
                      '{"path": "/nowhere/else"},],\n  "settings": {}\n}\n')
    user = home / ".config" / "Code" / "User"
    put(COPILOT_JSON, storage(user, "m", {"workspace": config.as_uri()}) / "chatSessions")
    refs = discover_sessions(workspace, home)
    assert [(r.agent, r.cwd) for r in refs] == [("copilot-chat", str(workspace))]


def test_the_editor_reported_storage_is_used_exactly(home: Path, workspace: Path,
                                                     tmp_path: Path) -> None:
    user = tmp_path / "Insiders" / "User"  # not under the agent home at all
    exact = storage(user, "e", None)
    put(COPILOT_JSON, exact / "chatSessions")
    stranger = storage(user, "s", {"folder": (tmp_path / "x").as_uri()})
    put(COPILOT_JSON, stranger / "chatSessions")
    places = EditorPlaces.detect(home).with_editor_storage(
        (exact / "reverie.reverie").as_uri(), (user / "globalStorage" / "reverie.reverie").as_uri())
    assert places.workspace_storage == (exact,) and user in places.user_dirs
    refs = discover_sessions(workspace, home, editor=places)
    assert [(r.path.parent.parent, r.cwd) for r in refs] == [(exact, str(workspace))]
    assert exact / "chatSessions" in editor_watch_roots(workspace, places)
    assert all(user / "workspaceStorage" != root for root in editor_watch_roots(workspace, places))
    # a reported folder whose workspace.json names another folder is not this workspace's
    mismatched = EditorPlaces().with_editor_storage((stranger / "r.r").as_uri(), None)
    notes: list[str] = []
    assert discover_sessions(workspace, home, editor=mismatched, notes=notes) == []
    remote = EditorPlaces().with_editor_storage("vscode-remote://ssh-remote+h/x/r.r", None)
    assert remote.workspace_storage == () and "not a folder on this machine" in remote.notes[0]


def _task_history(folder: Path, entries: list[dict[str, str]]) -> None:
    (folder / "state").mkdir(parents=True, exist_ok=True)
    (folder / "state" / "taskHistory.json").write_text(json.dumps(entries))


def test_cline_family_tasks_by_recorded_workspace(home: Path, workspace: Path,
                                                  tmp_path: Path) -> None:
    global_storage = home / ".config" / "Code" / "User" / "globalStorage"
    cline = global_storage / "saoudrizwan.claude-dev"
    shutil.copytree(CLINE_TASK, cline / "tasks" / "111")
    shutil.copytree(CLINE_TASK, cline / "tasks" / "222")
    _task_history(cline, [{"id": "111", "ts": 1, "task": "t", "cwdOnTaskInitialization":
                           str(workspace)},
                          {"id": "222", "ts": 2, "task": "t", "cwdOnTaskInitialization":
                           str(tmp_path / "other")}])
    roo = global_storage / "rooveterinaryinc.roo-cline" / "tasks"
    shutil.copytree(ROO_TASK, roo / "r1")
    item = json.loads((roo / "r1" / "history_item.json").read_text())
    (roo / "r1" / "history_item.json").write_text(json.dumps({**item, "workspace":
                                                              str(workspace)}))
    kilo = global_storage / "kilocode.kilo-code" / "tasks"
    shutil.copytree(KILO_TASK, kilo / "k1")  # no history: its environment details say
    text = (kilo / "k1" / "ui_messages.json").read_text().replace("/home/dev/shop",
                                                                  str(workspace))
    (kilo / "k1" / "ui_messages.json").write_text(text)
    refs = discover_sessions(workspace, home)
    got = sorted((r.agent, r.session_id, r.cwd) for r in refs)
    assert got == [("cline", "111", str(workspace)), ("kilo-code", "k1", str(workspace)),
                   ("roo-code", "r1", str(workspace))]
    assert session_ref(cline / "tasks" / "111" / "ui_messages.json", workspace, home)
    assert session_ref(cline / "tasks" / "222" / "ui_messages.json", workspace, home) is None
    assert session_ref(cline / "tasks" / "111" / "api_conversation_history.json", workspace,
                       home) is None


def test_old_cline_history_in_vscode_global_state(home: Path, workspace: Path) -> None:
    """Before ``taskHistory.json``, Cline kept its history in VS Code's global state."""
    global_storage = home / ".config" / "Code" / "User" / "globalStorage"
    task = global_storage / "saoudrizwan.claude-dev" / "tasks" / "333"
    task.mkdir(parents=True)
    (task / "ui_messages.json").write_text(json.dumps([
        {"ts": 1, "type": "say", "say": "text", "text": "hello"}]))
    with sqlite3.connect(global_storage / "state.vscdb") as db:
        db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        db.execute("INSERT INTO ItemTable VALUES (?, ?)", ("saoudrizwan.claude-dev", json.dumps(
            {"taskHistory": [{"id": "333", "cwdOnTaskInitialization": str(workspace)}]})))
    refs = discover_sessions(workspace, home)
    assert [(r.agent, r.session_id) for r in refs] == [("cline", "333")]


CLINE4 = FIX / "cline/cline-sdk-4/sessions/1784094124598_rruoq"


def test_cline_4_sessions_by_their_manifest(home: Path, workspace: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Cline 4 keeps sessions in its own data folder, VS Code's included; the manifest beside
    the conversation names the workspace. Sub-agents' files are not sessions of their own."""
    sessions = home / ".cline" / "data" / "sessions"
    mine = sessions / CLINE4.name
    shutil.copytree(CLINE4, mine)
    manifest = mine / f"{CLINE4.name}.json"
    manifest.write_text(manifest.read_text().replace("/Users/example/dev/cline", str(workspace)))
    put(mine / f"{CLINE4.name}.messages.json", mine, "agent_7.messages.json")  # a sub-agent
    other = sessions / "1784000000000_other"
    shutil.copytree(CLINE4, other)
    for path in other.iterdir():
        path.rename(other / path.name.replace(CLINE4.name, other.name))
    refs = discover_sessions(workspace, home)
    assert [(r.agent, r.session_id, r.cwd) for r in refs] == [
        ("cline", CLINE4.name, str(workspace))]
    messages = mine / f"{CLINE4.name}.messages.json"
    assert session_ref(messages, workspace, home) is not None
    assert session_ref(mine / "agent_7.messages.json", workspace, home) is None
    assert session_ref(other / f"{other.name}.messages.json", workspace, home) is None
    assert sessions in editor_watch_roots(workspace, EditorPlaces.detect(home))
    # CLINE_SESSION_DATA_DIR / CLINE_DATA_DIR / CLINE_DIR move it (the user's real home only)
    moved = EditorPlaces.detect(Path.home(), env={"CLINE_DIR": str(tmp_path / "cl")})
    assert moved.cline_sessions_dir() == tmp_path / "cl" / "data" / "sessions"
    moved = EditorPlaces.detect(Path.home(), env={"CLINE_DIR": str(tmp_path / "cl"),
                                                  "CLINE_SESSION_DATA_DIR": str(tmp_path / "s")})
    assert moved.cline_sessions_dir() == tmp_path / "s"


def test_continue_sessions(home: Path, workspace: Path, tmp_path: Path) -> None:
    sessions = home / ".continue" / "sessions"
    ide = put(CONTINUE_IDE, sessions)
    cli = put(CONTINUE_CLI, sessions)
    (sessions / "sessions.json").write_text(json.dumps([
        {"sessionId": ide.stem, "title": "t", "dateCreated": "1",
         "workspaceDirectory": workspace.as_uri()}]))
    text = cli.read_text().replace('"/home/dev/cart-ts"', json.dumps(str(workspace)))
    cli.write_text(text)  # not in the index: the head of the file says
    refs = discover_sessions(workspace, home)
    assert sorted(r.session_id for r in refs) == sorted([ide.stem, cli.stem])
    assert {r.agent for r in refs} == {"continue"}
    assert session_ref(sessions / "sessions.json", workspace, home) is None
    other = tmp_path / "other"
    other.mkdir()
    assert discover_sessions(other, home) == []


def test_file_uris() -> None:
    assert local_path_of_uri("file:///home/me/my%20shop") == ("/home/me/my shop", "")
    assert local_path_of_uri("file:///c%3A/Users/me/shop")[0] == "c:\\Users\\me\\shop"
    assert local_path_of_uri("file://server/share/x")[0] == "\\\\server\\share\\x"
    assert local_path_of_uri("file:///tmp/caf%E9")[0] == os.fsdecode(b"/tmp/caf\xe9")
    assert local_path_of_uri("vscode-vfs://github/me/x")[0] is None
    assert local_path_of_uri("file:///a%00b")[0] is None


@pytest.mark.skipif(sys.platform != "linux", reason="a non-UTF-8 file name needs Linux")
def test_a_non_utf8_workspace_path(home: Path, tmp_path: Path) -> None:
    workspace = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    workspace.mkdir()
    user = home / ".config" / "Code" / "User"
    uri = "file://" + "".join(f"%{b:02X}" if b > 127 or b == 32 else chr(b)
                              for b in os.fsencode(workspace))
    put(COPILOT_JSON, storage(user, "u", {"folder": uri}) / "chatSessions")
    assert [r.agent for r in discover_sessions(workspace, home)] == ["copilot-chat"]


def test_reverie_sessions_lists_them_with_the_others(home: Path, workspace: Path) -> None:
    user = home / ".config" / "Code" / "User"
    put(COPILOT_LOG, storage(user, "a", {"folder": workspace.as_uri()}) / "chatSessions")
    put(COPILOT_JSON, storage(user, "r", {"folder": "vscode-remote://wsl%2Bx/home"})
        / "chatSessions")
    cline = user / "globalStorage" / "saoudrizwan.claude-dev"
    shutil.copytree(CLINE_TASK, cline / "tasks" / "111")
    _task_history(cline, [{"id": "111", "cwdOnTaskInitialization": str(workspace)}])
    put(CONTINUE_IDE, home / ".continue" / "sessions").write_text(
        CONTINUE_IDE.read_text().replace("file:///home/dev/shop", workspace.as_uri()))
    done = subprocess.run(
        [sys.executable, "-m", "reverie", "sessions", "--workspace", str(workspace), "--json"],
        capture_output=True, text=True, timeout=120, env={**os.environ},
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert sorted(r["agent"] for r in rows) == ["cline", "continue", "copilot-chat"]
    by_agent = {r["agent"]: r for r in rows}
    assert by_agent["copilot-chat"]["messages"] == 15
    assert by_agent["cline"]["session_id"] == "111" and by_agent["cline"]["messages"] == 13
    assert "vscode-remote" in done.stderr and "not a folder on this machine" in done.stderr


def test_os_variables_apply_only_to_the_real_home(home: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = tmp_path / "xdg"
    continue_dir = tmp_path / "cont"
    env = {"XDG_CONFIG_HOME": str(xdg), "CONTINUE_GLOBAL_DIR": str(continue_dir),
           "APPDATA": str(tmp_path / "appdata")}
    other = EditorPlaces.detect(home, env=env, platform="linux")
    assert home / ".config" / "Code" / "User" in other.user_dirs
    assert other.continue_dir == home / ".continue"
    monkeypatch.setenv("HOME", str(home))  # now the agent home is the user's real home
    real = EditorPlaces.detect(home, env=env, platform="linux")
    assert xdg / "Code" / "User" in real.user_dirs
    assert real.continue_dir == continue_dir
    windows = EditorPlaces.detect(home, env=env, platform="win32")
    assert tmp_path / "appdata" / "Code" / "User" in windows.user_dirs
