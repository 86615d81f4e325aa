"""A `reverie sleep` process killed with SIGKILL in the middle of REM leaves memory untouched;
the next cycle takes the dead holder's lock over, recovers and consolidates."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from reverie.config import ProjectPaths, Settings
from reverie.memory.history import MemoryHistory
from reverie.memory.paths import LOCK_NAME
from reverie.sleep.cycle import SleepCycle
from reverie.sleep.entries import load_entries
from reverie.sleep.tracing import SleepTracer
from support.fake_llm import BatchBehaviour, FakeLLMServer, FakeRequest, Step


def visible(directory: Path) -> dict[str, str]:
    return {
        p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(directory).parts)
    }


GOOD_REM = {
    "entries": [
        {
            "key": "npm-build",
            "title": "Build command",
            "description": "How to build",
            "type": "project",
            "content": "Build with `npm run build`.",
            "recorded": "2026-01-01",
        },
    ]
}


async def test_sigkill_during_rem_then_recovery(workspace, reverie_env) -> None:
    mode = {"rem": "hang"}

    def respond(request: FakeRequest) -> Step:
        if "memory keeper" in request.system:
            return Step.hang(60) if mode["rem"] == "hang" else Step.json_reply(GOOD_REM)
        return Step.json_reply(
            {
                "summary": "Worked on the build.",
                "memory_candidates": [{"key": "npm-build", "value": "Build with `npm run build`."}],
            }
        )

    with FakeLLMServer(fallback=respond, batch=BatchBehaviour(polls_before_done=0)) as server:
        settings = Settings(provider="openai", base_url=server.base_url, api_key="k", max_retries=0)
        memory = ProjectPaths(settings, workspace.root).memory_dir
        memory.mkdir(parents=True)
        (memory / "MEMORY.md").write_text("# Memory\n\n- [Old](old.md) - an old fact\n")
        (memory / "old.md").write_text(
            "---\nname: Old\ndescription: an old fact\ntype: project\n---\n\nOld fact.\n"
        )
        before = visible(memory)
        env = {
            **os.environ,
            "REVERIE_DATA_DIR": str(reverie_env["data"]),
            "REVERIE_AGENT_HOME": str(reverie_env["agent_home"]),
            "REVERIE_CONFIG_DIR": str(reverie_env["config"]),
            "REVERIE_PROVIDER": "openai",
            "REVERIE_BASE_URL": server.base_url,
            "REVERIE_API_KEY": "k",
            "REVERIE_MAX_RETRIES": "0",
        }
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "reverie",
                "sleep",
                "--workspace",
                str(workspace.root),
                "--json",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 30
            while not any("memory keeper" in r.body for r in server.model_requests()):
                assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
                assert time.monotonic() < deadline, "REM request never arrived"
                time.sleep(0.05)
            assert (memory / LOCK_NAME).read_text().strip() == str(child.pid)
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait(timeout=10) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            for stream in (child.stdout, child.stderr):
                if stream is not None:
                    stream.close()

        assert visible(memory) == before  # memory untouched by the killed run
        assert MemoryHistory(memory).runs() == []

        mode["rem"] = "ok"
        report = await SleepCycle(
            settings, tracer=SleepTracer(use_otel=False), lock_wait_seconds=0
        ).run(workspace.root)

    assert report.rem_error is None and report.run_id is not None
    assert [e.key for e in load_entries(memory)] == ["npm-build"]
    assert (memory / LOCK_NAME).read_text() == ""  # released by the live run
    (run,) = MemoryHistory(memory).runs()
    assert run.source == "sleep" and run.removed == ["old.md"]
    assert not (memory / ".reverie" / "staging").exists() or not any(
        (memory / ".reverie" / "staging").iterdir()
    )
