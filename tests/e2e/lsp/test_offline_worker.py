"""Offline jobs run in worker processes of the real server, not on its interpreter.

A long offline notes extraction (a 12 MB session) runs in the ``notes`` worker: the server keeps
answering commands and spends a fraction of the CPU the worker does; killing the worker in the
middle leaves a hand-written notes file byte-identical, and the next extraction works (in a new
worker). Killing the dream worker in the middle of an offline dream leaves memory as it was.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil

from bench import scale
from reverie.config import ProjectPaths, Settings
from reverie.session_memory.template import default_template

from .agents import claude_session_path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "scale.py"
QUIET = {"watchDebounceMs": 50, "dreamEnabled": False, "sleepEnabled": False}
SESSION_ID = "5e55a0e2-0000-4000-8000-00000000b1b1"


def hand_notes() -> str:
    """The template with a title and a line typed by hand."""
    text = default_template().text
    text = text.replace("no filler_\n", "no filler_\n\nHand-written title that must survive\n", 1)
    steps = "the very next steps_\n"
    return text.replace(steps, steps + "\nA line typed by hand.\n", 1)


def big_session(agent_home: Path, workspace: Path, megabytes: float) -> Path:
    path = claude_session_path(agent_home, workspace, f"{SESSION_ID}.jsonl")
    scale.write_session(path, int(megabytes * (1 << 20)), "mix", 5, str(workspace))
    return path


def notes_path(s: Any) -> Path:
    settings = Settings(data_dir=s.data_dir, agent_home=s.agent_home, config_dir=s.data_dir)
    return ProjectPaths(settings, s.workspace).notes_path(SESSION_ID)


def cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


async def finished(s: Any, job_id: str, timeout: float = 120.0) -> dict[str, Any]:
    return await s.wait_for_event(
        "reverie/jobEvent",
        lambda e: e["jobId"] == job_id and e["type"] in ("complete", "error", "skipped",
                                                         "cancelled"),
        timeout=timeout,
    )


async def test_long_offline_extraction_runs_in_the_notes_worker(start_server, workspace,
                                                                reverie_env):
    big_session(reverie_env["agent_home"], workspace, 24)
    s = await start_server(init_options=QUIET)
    status = await s.command("reverie.server.status")
    server_pid = status["pid"]
    assert "notes" not in status["workers"]
    server_cpu = cpu(server_pid)
    job_id = (await s.command("reverie.server.updateNotes"))["jobId"]
    latencies: list[float] = []
    notes_pid = None
    while not any(e["jobId"] == job_id and e["type"] in ("complete", "error")
                  for e in s.events("reverie/jobEvent")):
        began = time.monotonic()
        status = await s.command("reverie.server.status")
        latencies.append(time.monotonic() - began)
        notes_pid = status["workers"].get("notes", notes_pid)
        await asyncio.sleep(0.1)
    done = await finished(s, job_id)
    assert done["type"] == "complete", done
    server_used = cpu(server_pid) - server_cpu
    assert notes_pid is not None and notes_pid != server_pid
    worker_used = cpu(notes_pid)
    # the commands kept being answered while the extraction ran...
    assert len(latencies) >= 5 and max(latencies) < 2.0, latencies
    # ...and the reading and building happened in the worker, not on the server's interpreter
    # (which meanwhile answered ten status requests a second: on a busy 2-core machine that
    # alone costs it a good share of the worker's time, so the bound is "less", not a ratio)
    assert worker_used > 0.5 and server_used < worker_used, (server_used, worker_used)
    text = notes_path(s).read_text(encoding="utf-8")
    assert "pytest -q tests/" in text  # built from the session's commands


async def test_killed_notes_worker_leaves_notes_intact(start_server, workspace, reverie_env):
    big_session(reverie_env["agent_home"], workspace, 12)
    s = await start_server(init_options=QUIET)
    await s.command("reverie.server.status")
    notes = notes_path(s)
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text(hand_notes(), encoding="utf-8")
    before = notes.read_bytes()
    job_id = (await s.command("reverie.server.updateNotes"))["jobId"]
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and time.monotonic() < deadline:
        pid = (await s.command("reverie.server.status"))["workers"].get("notes")
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            killed = pid
        else:
            await asyncio.sleep(0.02)
    assert killed is not None, "the notes worker never started"
    done = await finished(s, job_id)
    assert done["type"] == "error", done  # killed in the middle: the update failed...
    assert notes.read_bytes() == before  # ...and the notes are exactly as they were
    assert not notes.with_name(notes.name + ".tmp").exists()
    # the next extraction starts a new worker and works
    job_id = (await s.command("reverie.server.updateNotes"))["jobId"]
    done = await finished(s, job_id)
    assert done["type"] == "complete", done
    text = notes.read_text(encoding="utf-8")
    assert "Hand-written title that must survive" in text and "A line typed by hand." in text
    assert "pytest -q tests/" in text
    status = await s.command("reverie.server.status")
    assert status["workers"].get("notes") not in (None, killed)


async def test_killed_dream_worker_leaves_memory_as_it_was(start_server, workspace, reverie_env):
    folder = claude_session_path(reverie_env["agent_home"], workspace, "x").parent
    for n in range(12):
        scale.write_session(folder / f"{n:08d}-0000-4000-8000-000000000000.jsonl", 1 << 20,
                            "mix", 40 + n, str(workspace))
    s = await start_server(init_options=QUIET)
    await s.command("reverie.server.status")
    topic = s.write_memory("workflow-and-commands.md", "---\nname: Workflow\n---\n\n- kept\n")
    before = {p.name: p.read_bytes() for p in s.memory_dir.iterdir() if p.is_file()}
    job_id = (await s.command("reverie.server.dream", {"extraContext": "bench"}))["jobId"]
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and time.monotonic() < deadline:
        pid = (await s.command("reverie.server.status"))["workers"].get("dream")
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            killed = pid
        else:
            await asyncio.sleep(0.02)
    assert killed is not None, "the dream worker never started"
    done = await finished(s, job_id)
    assert done["type"] == "error", done
    after = {p.name: p.read_bytes() for p in s.memory_dir.iterdir() if p.is_file()}
    assert {k: v for k, v in after.items() if k != ".consolidate-lock"} == {
        k: v for k, v in before.items() if k != ".consolidate-lock"
    }
    assert topic.read_text(encoding="utf-8").endswith("- kept\n")
    lock = await s.command("reverie.server.lockStatus")
    assert lock["holderPid"] is None or not lock["holderAlive"], lock
    # the next dream runs in a new worker and writes
    job_id = (await s.command("reverie.server.dream", {"extraContext": "bench"}))["jobId"]
    done = await finished(s, job_id)
    assert done["type"] == "complete", done
    memory = {p.name: p.read_text(encoding="utf-8") for p in s.memory_dir.glob("*.md")}
    assert any("pytest" in text for name, text in memory.items() if name != "MEMORY.md"), memory
    # the line typed by hand into a topic file survives the dream that then ran
    assert "- kept" in memory["workflow-and-commands.md"]
