"""Roo Code's ``roo-cline.customStoragePath`` (and the Roo-based Kilo Code's
``kilo-code.customStoragePath``): task folders moved out of VS Code's storage are found from the
user's ``settings.json`` (JSON with comments, a profile's too), matched on their recorded
workspace, and followed live; a relative or foreign path is not used."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from reverie.transcripts.discovery import discover_sessions, session_ref
from reverie.transcripts.editor_discovery import editor_watch_roots
from reverie.transcripts.editor_places import EditorPlaces
from reverie.transcripts.reader import load_transcript
from reverie.transcripts.reading import SessionReader

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
ROO_TASK = (FIX / "roo-code/source-types/rooveterinaryinc.roo-cline/tasks/"
            "0b9c1f2e-5d4a-4c3b-9e8f-7a6b5c4d3e2f")
KILO_TASK = (FIX / "kilo-code/source-types/kilocode.kilo-code/tasks/"
             "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0")


def task(source: Path, tasks: Path, name: str, workspace: Path) -> Path:
    shutil.copytree(source, tasks / name)
    for path in (tasks / name).iterdir():
        path.write_text(path.read_text().replace("/home/dev/shop", str(workspace)))
    return tasks / name / "ui_messages.json"


def test_tasks_in_a_custom_storage_path(reverie_env: dict[str, Path], tmp_path: Path) -> None:
    home = reverie_env["agent_home"]
    workspace = tmp_path / "shop"
    workspace.mkdir()
    user = home / ".config" / "Code" / "User"
    user.mkdir(parents=True)
    roo_store = tmp_path / "RooCodeStorage"
    kilo_store = tmp_path / "KiloStorage"
    (user / "settings.json").write_text(
        "{\n  // where Roo keeps its conversations\n"
        f'  "roo-cline.customStoragePath": {json.dumps(str(roo_store))},\n'
        '  "editor.fontSize": 14, /* trailing comma next */\n}\n')
    profile = user / "profiles" / "-4f1c2a" / "settings.json"
    profile.parent.mkdir(parents=True)
    profile.write_text(json.dumps({"kilo-code.customStoragePath": str(kilo_store)}))
    moved = task(ROO_TASK, roo_store / "tasks", "r1", workspace)
    kilo = task(KILO_TASK, kilo_store / "tasks", "k1", workspace)
    task(ROO_TASK, roo_store / "tasks", "r2", tmp_path / "elsewhere")
    places = EditorPlaces.detect(home)
    assert [(a, r) for a, r, _u, _e in places.custom_task_roots()] == [
        ("roo-code", roo_store / "tasks"), ("kilo-code", kilo_store / "tasks")]
    refs = [r for r in discover_sessions(workspace, home) if r.agent in ("roo-code", "kilo-code")]
    assert sorted((r.agent, r.session_id, r.path) for r in refs) == [
        ("kilo-code", "k1", kilo), ("roo-code", "r1", moved)]
    ref = session_ref(moved, workspace, home)
    assert ref is not None and ref.agent == "roo-code"
    # a moved folder's name no longer says whose it is: the settings do, and readers are told
    assert places.moved_task_agent(moved) == "roo-code"
    assert places.moved_task_agent(kilo) == "kilo-code"
    assert places.moved_task_agent(workspace / "ui_messages.json") is None
    assert load_transcript(moved, agent=ref.agent).session.agent == "roo-code"
    assert session_ref(roo_store / "tasks" / "r2" / "ui_messages.json", workspace, home) is None
    assert roo_store / "tasks" in editor_watch_roots(workspace, places)

    # live: a new message in the moved task folder is read like any other task's
    reader = SessionReader(workspace, home)
    reader.scan(report=False)
    rows = json.loads(moved.read_text())
    rows.append({"ts": rows[-1]["ts"] + 1000, "type": "say", "say": "user_feedback",
                 "text": "Also cover leap years"})
    moved.write_text(json.dumps(rows))
    events = reader.apply([str(moved)])
    assert [(e.ref.agent, e.session.agent, [m.text for m in e.messages]) for e in events] == [
        ("roo-code", "roo-code", ["Also cover leap years"])]


def test_the_history_in_global_state_still_counts(reverie_env: dict[str, Path],
                                                  tmp_path: Path) -> None:
    """An older Roo kept its task history in VS Code's global state, not beside the tasks:
    a moved task is still matched through it."""
    home = reverie_env["agent_home"]
    workspace = tmp_path / "shop"
    workspace.mkdir()
    user = home / ".config" / "Code" / "User"
    (user / "globalStorage").mkdir(parents=True)
    store = tmp_path / "store"
    (user / "settings.json").write_text(json.dumps({"roo-cline.customStoragePath": str(store)}))
    path = store / "tasks" / "r9" / "ui_messages.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([{"ts": 1, "type": "say", "say": "text", "text": "hello"}]))
    with sqlite3.connect(user / "globalStorage" / "state.vscdb") as db:
        db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        db.execute("INSERT INTO ItemTable VALUES (?, ?)", ("RooVeterinaryInc.roo-cline",
                   json.dumps({"taskHistory": [{"id": "r9", "workspace": str(workspace)}]})))
    refs = discover_sessions(workspace, home)
    assert [(r.agent, r.session_id) for r in refs] == [("roo-code", "r9")]


def test_paths_that_are_not_used(reverie_env: dict[str, Path], tmp_path: Path) -> None:
    home = reverie_env["agent_home"]
    user = home / ".config" / "Code" / "User"
    user.mkdir(parents=True)
    for value in ("relative/store", "D:\\RooCodeStorage", "", "   ", 42):
        (user / "settings.json").write_text(json.dumps({"roo-cline.customStoragePath": value}))
        assert EditorPlaces.detect(home).custom_task_roots() == [], value
    (user / "settings.json").write_text("{ not json at all")
    assert EditorPlaces.detect(home).custom_task_roots() == []
