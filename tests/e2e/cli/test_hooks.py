"""The compaction hooks as the agents run them: a subprocess, hook JSON on stdin.

Covers each documented source (compact, resume, startup, clear), unknown fields, garbage stdin,
an unknown session, and the waiter against a REAL concurrent extraction process (``reverie
notes --force`` talking to a slow fake LLM).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.services.hooks import HookSkip, parse_hook_input, pre_compact
from reverie.session_memory.marker import marker_path
from support.fake_llm import FakeLLMServer, Step

SESSION = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"


@pytest.fixture
def transcript(transcripts_dir: Path, tmp_path: Path) -> Path:
    source = transcripts_dir / "claude-code" / "spotter-v2.1.38-tool-heavy" / "tool_heavy.jsonl"
    target = tmp_path / "transcripts" / f"{SESSION}.jsonl"
    target.parent.mkdir()
    shutil.copyfile(source, target)
    return target


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def hook(event: str, payload: Any, env: dict[str, str] | None = None,
         data_dir: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    argv = [sys.executable, "-m", "reverie", "hook", event]
    if data_dir is not None:
        argv += ["--data-dir", str(data_dir)]
    return subprocess.run(argv, input=raw, capture_output=True, timeout=60,
                          env=env or dict(os.environ), check=False)


def claude_input(event: str, transcript: Path, ws: Path, **extra: Any) -> dict[str, Any]:
    return {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(ws),
            "hook_event_name": event, "permission_mode": "default", **extra}


def notes_path(ws: Path) -> Path:
    return ProjectPaths(Settings(), ws).notes_path(SESSION)


def test_pre_compact_writes_notes_then_session_start_injects_them(
    transcript: Path, ws: Path
) -> None:
    done = hook("pre-compact", claude_input("PreCompact", transcript, ws, trigger="auto",
                                            custom_instructions="", future_field=[1, 2]))
    assert done.returncode == 0 and done.stdout == b""
    assert b"notes updated" in done.stderr
    notes = notes_path(ws).read_text()
    assert "# Current State" in notes and "phoenix" in notes.lower()

    for source in ("compact", "resume"):
        started = hook("session-start", claude_input("SessionStart", transcript, ws,
                                                     source=source, model="claude-x"))
        assert started.returncode == 0, started.stderr
        output = json.loads(started.stdout)
        specific = output["hookSpecificOutput"]
        assert specific["hookEventName"] == "SessionStart"
        assert str(notes_path(ws)) in specific["additionalContext"]
        assert "# Current State" in specific["additionalContext"]

    for source in ("startup", "clear"):
        quiet = hook("session-start", claude_input("SessionStart", transcript, ws, source=source))
        assert quiet.returncode == 0 and quiet.stdout == b""


def test_sub_folder_cwd_finds_the_workspace_notes(transcript: Path, ws: Path) -> None:
    assert hook("pre-compact", claude_input("PreCompact", transcript, ws)).returncode == 0
    sub = ws / "src" / "lib"
    sub.mkdir(parents=True)
    started = hook("session-start", claude_input("SessionStart", transcript, sub,
                                                 source="compact"))
    assert "# Current State" in json.loads(started.stdout)["hookSpecificOutput"][
        "additionalContext"]


def test_oversized_notes_are_cut_with_a_pointer(transcript: Path, ws: Path) -> None:
    assert hook("pre-compact", claude_input("PreCompact", transcript, ws)).returncode == 0
    path = notes_path(ws)
    text = path.read_text()
    huge = "\n".join(f"- worklog line {n} " + "x" * 80 for n in range(3000))
    path.write_text(text.replace("# Worklog\n", "# Worklog\n" + huge + "\n", 1))
    started = hook("session-start", claude_input("SessionStart", transcript, ws,
                                                 source="compact"))
    context = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "[... section truncated for length ...]" in context
    assert f"read {path} for everything" in context
    assert len(context) < 12_000 * 4 + 2_000


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1, 2]", b'{"cwd": "/tmp"}',
                                 b"\xff\xfe\x00garbage", b'{"session_id": 7}'])
@pytest.mark.parametrize("event", ["pre-compact", "session-start"])
def test_garbage_stdin_exits_zero_with_nothing_on_stdout(event: str, raw: bytes) -> None:
    done = hook(event, raw)
    assert done.returncode == 0
    assert done.stdout == b""
    assert done.stderr.startswith(b"reverie hook: ")
    assert done.stderr.count(b"\n") == 1


def test_unknown_session_exits_zero_quietly(ws: Path) -> None:
    payload = {"session_id": "no-such-session", "transcript_path": None, "cwd": str(ws),
               "hook_event_name": "PreCompact", "trigger": "manual"}
    done = hook("pre-compact", payload)
    assert done.returncode == 0 and done.stdout == b""
    assert b"no transcript found" in done.stderr
    started = hook("session-start", {**payload, "hook_event_name": "SessionStart",
                                     "source": "compact"})
    assert started.returncode == 0 and started.stdout == b""


def test_codex_shaped_input_with_null_transcript_path(
    reverie_env: dict[str, Path], transcripts_dir: Path, ws: Path
) -> None:
    """Codex documents transcript_path as nullable: the session is found by its id."""
    from reverie.transcripts.reader import load_transcript

    rollout = next((transcripts_dir / "codex" / "codemie-code").rglob("*.jsonl"))
    session = load_transcript(rollout).session
    target = reverie_env["agent_home"] / ".codex" / "sessions" / "2026" / "01" / rollout.name
    target.parent.mkdir(parents=True)
    text = rollout.read_text()
    if session.cwd:
        text = text.replace(json.dumps(session.cwd)[1:-1], str(ws))
    target.write_text(text)
    payload = {"session_id": session.id, "transcript_path": None, "cwd": str(ws),
               "hook_event_name": "PreCompact", "model": "gpt-5", "turn_id": "t1",
               "trigger": "manual"}
    done = hook("pre-compact", payload)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    assert b"notes " in done.stderr
    started = hook("session-start", {**payload, "hook_event_name": "SessionStart",
                                     "source": "resume"})
    assert "additionalContext" in json.loads(started.stdout)["hookSpecificOutput"]


def test_pre_compact_waits_for_a_real_concurrent_extraction(
    transcript: Path, ws: Path, reverie_env: dict[str, Path]
) -> None:
    with FakeLLMServer() as llm:
        llm.set_default(Step.reply("Nothing to change.", delay=2.5))
        env = {**os.environ, "REVERIE_PROVIDER": "openai", "REVERIE_BASE_URL": llm.base_url,
               "REVERIE_API_KEY": "test-key", "REVERIE_MODEL": "fake"}
        extraction = subprocess.Popen(
            [sys.executable, "-m", "reverie", "notes", str(transcript), "--workspace", str(ws),
             "--force", "--json"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        marker = marker_path(ProjectPaths(Settings(), ws).session_dir(SESSION))
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert extraction.poll() is None, extraction.communicate()
            assert time.monotonic() < deadline, "the extraction never wrote its marker"
            time.sleep(0.02)
        llm.wait_for_requests(1, timeout=30)  # the extraction is inside its model call now
        started = time.monotonic()
        done = hook("pre-compact", claude_input("PreCompact", transcript, ws, trigger="auto"))
        waited = time.monotonic() - started
        extraction_out, _ = extraction.communicate(timeout=30)
        assert done.returncode == 0 and done.stdout == b""
        assert b"brought up to date by the running extraction" in done.stderr
        assert extraction.returncode == 0, extraction_out
        assert waited < 15
        assert not marker.exists()
        # no double extraction: the hook made no model call and wrote no notes of its own
        assert len(llm.model_requests()) == 1


def test_waiter_gives_up_at_the_cap_and_ignores_stale_or_dead_markers(
    transcript: Path, ws: Path
) -> None:
    settings = Settings()
    hook_input = parse_hook_input(json.dumps(claude_input("PreCompact", transcript, ws)))
    marker = marker_path(ProjectPaths(settings, ws).session_dir(SESSION))
    marker.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        marker.write_text(json.dumps({"pid": holder.pid, "started_at": time.time()}))
        started = time.monotonic()
        with pytest.raises(HookSkip, match="did not finish within 1 s"):
            asyncio.run(pre_compact(settings, hook_input, budget=1.0))
        assert 0.9 <= time.monotonic() - started < 5
        assert not notes_path(ws).exists()  # gave up: did not run a second extraction

        marker.write_text(json.dumps({"pid": holder.pid, "started_at": time.time() - 61}))
        assert "notes updated" in asyncio.run(pre_compact(settings, hook_input, budget=10))
    finally:
        holder.kill()
        holder.wait()
    marker.write_text(json.dumps({"pid": holder.pid, "started_at": time.time()}))
    assert "notes " in asyncio.run(pre_compact(settings, hook_input, budget=10))


def test_a_secret_typed_into_the_notes_by_hand_is_not_injected(transcript: Path,
                                                                ws: Path) -> None:
    assert hook("pre-compact", claude_input("PreCompact", transcript, ws)).returncode == 0
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    path = notes_path(ws)
    path.write_text(path.read_text().replace("# Worklog\n", f"# Worklog\ntoken {secret}\n", 1))
    started = hook("session-start", claude_input("SessionStart", transcript, ws,
                                                 source="resume"))
    context = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "# Worklog" in context and secret not in context


def test_vs_code_s_copilot_hook_input_finds_the_chat_session(
    reverie_env: dict[str, Path], transcripts_dir: Path, ws: Path, tmp_path: Path
) -> None:
    """VS Code's agent hooks send ``sessionId`` / ``hookEventName`` and, as ``transcript_path``,
    the Copilot extension's own event log; the notes are kept for VS Code's chat session file
    beside it (``chatSessions/<id>.json``), which the language server tracks under that id."""
    source = (transcripts_dir / "copilot-chat" / "source-types" / "chatSessions"
              / "3f8e2b7c-9a41-4d6e-b0c5-7e1d2a9f4b68.json")
    session_id = source.stem
    storage = tmp_path / "User" / "workspaceStorage" / "5e0b1c2d3e4f"
    (storage / "chatSessions").mkdir(parents=True)
    shutil.copyfile(source, storage / "chatSessions" / source.name)
    (storage / "workspace.json").write_text(json.dumps({"folder": ws.as_uri()}))
    log = storage / "GitHub.copilot-chat" / "transcripts" / f"{session_id}.jsonl"
    log.parent.mkdir(parents=True)
    events = next((transcripts_dir / "copilot-chat" / "source-types-events").rglob("e1d2c3b4*"))
    log.write_text(events.read_text().replace("e1d2c3b4-a596-4788-9a0b-1c2d3e4f5a6b", session_id))
    payload = {"timestamp": "2026-02-09T10:30:00.000Z", "cwd": str(ws), "sessionId": session_id,
               "hookEventName": "PreCompact", "transcript_path": str(log), "trigger": "auto"}
    hook_input = parse_hook_input(json.dumps(payload))
    assert hook_input.transcript_path == storage / "chatSessions" / source.name
    assert hook_input.event == "PreCompact" and hook_input.source == "auto"
    # the command ``reverie connect copilot-chat`` installs in VS Code's user hook folder
    from reverie.agents.connection import connect

    connect("copilot-chat", ws, "personal", Settings())
    hooks = json.loads((reverie_env["agent_home"] / ".copilot" / "hooks" / "reverie.json")
                       .read_text())["hooks"]
    command = hooks["PreCompact"][0]["command"]
    done = subprocess.run(command, shell=True, input=json.dumps(payload).encode(),
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    assert b"notes updated" in done.stderr
    notes = ProjectPaths(Settings(), ws).notes_path(session_id).read_text()
    assert "# Current State" in notes
    assert "cart" in notes.lower() or "typescript" in notes.lower()
    # no chat session file beside the log (a session VS Code did not keep): the extension's
    # own event log is read instead
    (storage / "chatSessions" / source.name).unlink()
    notes_file = ProjectPaths(Settings(), ws).notes_path(session_id)
    notes_file.unlink()
    assert parse_hook_input(json.dumps(payload)).transcript_path == log
    again = hook("pre-compact", payload)
    assert again.returncode == 0 and b"notes updated" in again.stderr, again.stderr
    assert "cart.ts" in notes_file.read_text()  # the file the logged calls read and patched
