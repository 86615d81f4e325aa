"""``reverie notes --force``, ``reverie dream --manual`` and ``reverie sleep`` as real processes
with ``REVERIE_PROVIDER=claude-code-cli`` / ``codex-cli`` / ``gemini-cli`` and fake CLIs on
PATH that print the documented output shapes. Whatever the CLI does, Reverie applies only what
its own checks accept, and a failure changes nothing."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reverie.samples import install_samples
from support.fake_agent_cli import install_fake_clis

pytestmark = pytest.mark.e2e

PROVIDERS = ["claude-code-cli", "codex-cli", "gemini-cli"]


@pytest.fixture
def world(tmp_path: Path, reverie_env: dict[str, Path]) -> dict[str, Path]:
    workspace = (tmp_path / "ws").resolve()
    workspace.mkdir()
    installed = install_samples(reverie_env["agent_home"], workspace)
    hour_ago = time.time() - 3600  # sleep reviews sessions idle for more than five minutes
    for index, path in enumerate(installed):
        os.utime(path, (hour_ago + index * 60, hour_ago + index * 60))
    bin_dir = tmp_path / "bin"
    install_fake_clis(bin_dir)
    return {"ws": workspace, "bin": bin_dir, "log": tmp_path / "cli.log",
            "data": reverie_env["data"], "home": reverie_env["agent_home"]}


def reverie(world: dict[str, Path], provider: str, *args: str, mode: str = "ok",
            **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "REVERIE_PROVIDER": provider,
               "PATH": f"{world['bin']}{os.pathsep}{os.environ['PATH']}",
               "FAKE_CLI_MODE": mode, "FAKE_CLI_LOG": str(world["log"]), **env}
    return subprocess.run([sys.executable, "-m", "reverie", *args], capture_output=True,
                          text=True, timeout=120, env=environ, cwd=world["ws"], check=False)


def tree(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".reverie" not in p.parts
            and ".staging-" not in str(p)}


def memory_dir(world: dict[str, Path]) -> Path:
    [project] = (world["data"] / "projects").iterdir()
    return project / "memory"


#: how each fake CLI fails (or, ``banner`` / ``outside``, half-succeeds), per provider; a mode
#: that changes something on purpose comes last, so every other mode starts from the same state
FAILURES = {
    "claude-code-cli": ["is_error", "prose", "outside"],
    "codex-cli": ["quota", "malformed", "banner"],
    "gemini-cli": ["logged_out", "exit"],
}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_notes_dream_and_sleep_through_each_cli_and_failures_change_nothing(
        world: dict[str, Path], provider: str) -> None:
    """Notes, a dream and the sleep cycle through the CLI; then, with that memory and those
    notes to protect, every failure mode of the CLI in turn, each checked against the state
    just before it (the earlier modes changed nothing)."""
    notes = reverie(world, provider, "notes", "--force", "--json")
    assert notes.returncode == 0, notes.stderr
    result = json.loads(notes.stdout)
    assert result["edited"], result
    assert Path(result["notes_path"]).read_text().endswith("- updated through the CLI\n")

    dream = reverie(world, provider, "dream", "--manual", "--json")
    assert dream.returncode == 0, dream.stderr
    body = json.loads(dream.stdout)
    assert body["ran"] and body["run_id"]
    memory = memory_dir(world)
    assert "make test" in (memory / "cli-provider.md").read_text()
    assert "cli-provider.md" in (memory / "MEMORY.md").read_text()

    sleep = reverie(world, provider, "sleep", "--json")
    assert sleep.returncode == 0, sleep.stderr
    report = json.loads(sleep.stdout)
    assert report["summaries_ok"] >= 1 and report["summaries_failed"] == 0
    assert (memory / "build.md").is_file()

    runs = [json.loads(line) for line in world["log"].read_text().splitlines()]
    assert {r["cwd"] for r in runs} == {str(world["data"] / "reverie-cli-workdir")}
    assert all(len(str(a)) < 200 for r in runs for a in r["argv"])  # prompts never in argv

    for mode in FAILURES[provider]:
        before = tree(world["data"])
        notes = reverie(world, provider, "notes", "--force", "--json", mode=mode)
        dream = reverie(world, provider, "dream", "--manual", "--json", mode=mode)
        if mode == "banner":  # banners around the JSON are fine
            assert notes.returncode == 0 and dream.returncode == 0, notes.stderr + dream.stderr
            continue
        if mode != "outside":  # memory changes to a path outside the memory dir: notes are fine
            assert notes.returncode == 1 and "failed" in notes.stderr, mode
        assert dream.returncode == 1, (mode, dream.stdout)
        after = tree(world["data"])
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        # spend.json: what the failed job's model calls cost is recorded (the cost governor)
        bookkeeping = (".state.json", ".log", "llm-capabilities.json", "spend.json")
        allowed = {k for k in changed if k.endswith(bookkeeping)
                   or ("session_memory.md" in k and mode == "outside") or "/logs/" in k}
        assert changed <= allowed, (mode, changed - allowed)
        assert not (world["ws"].parent / "outside.md").exists(), mode
        assert not (memory.parent / "outside.md").exists(), mode


def test_a_hung_cli_ends_within_the_job_budget(world: dict[str, Path]) -> None:
    started = time.monotonic()
    pid_file = world["log"].with_name("pid")
    done = reverie(world, "claude-code-cli", "notes", "--force", mode="hang",
                   REVERIE_SESSION_MEMORY_BUDGET_SECONDS="2", FAKE_CLI_PID_FILE=str(pid_file))
    assert time.monotonic() - started < 60
    assert done.returncode == 1 and "within the 2 s job budget" in done.stderr
    with pytest.raises(ProcessLookupError):  # the CLI was killed, not left behind
        os.kill(int(pid_file.read_text()), 0)


def test_the_cli_own_session_is_never_tracked(world: dict[str, Path]) -> None:
    """Even with the data dir inside the workspace, the CLI's session (recorded under its
    working directory like a real one) is not discovered."""
    data = world["ws"] / ".reverie-data"
    env = {"REVERIE_DATA_DIR": str(data), "FAKE_CLI_AGENT_HOME": str(world["home"])}

    def sessions() -> list[str]:
        listed = reverie(world, "claude-code-cli", "sessions", "--workspace", str(world["ws"]),
                         "--json", **env)
        assert listed.returncode == 0, listed.stderr
        return sorted(row["session_id"] for row in json.loads(listed.stdout))

    before = sessions()
    done = reverie(world, "claude-code-cli", "notes", "--force", "--json", **env)
    assert done.returncode == 0, done.stderr
    recorded = list((world["home"] / ".claude" / "projects").glob("*reverie-cli-workdir*/*"))
    assert recorded, "the fake CLI recorded its own session, as the real one does"
    assert sessions() == before
