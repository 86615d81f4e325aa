"""An agent proposes, the person decides: ``propose_memory_change`` over a real ``reverie mcp``
(the MCP SDK's own stdio client), then the person's ``reverie review`` / ``apply`` /
``discard`` / ``undo`` as real CLI processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import Implementation

from reverie.config import ProjectPaths, Settings
from reverie.memory.history import MemoryHistory

pytestmark = pytest.mark.e2e

TOKEN = "ghp_R7kQ2mV9xL4pW8nT3bY6cF1hJ5sD0gA2zE7u"
INDEX = "# Memory\n\n- [Build and test](build-and-test.md) - pnpm only; how to run tests\n"
TOPIC = ("---\nname: Build and test\ndescription: pnpm only; how to run tests\ntype: project\n"
         "---\n\n# Build and test\n\n- Use pnpm, never npm or yarn.\n"
         "- Run the tests with `pnpm test -- --runInBand`.\n")


@pytest.fixture
def project(reverie_env: dict[str, Path], tmp_path: Path) -> Path:
    workspace = (tmp_path / "shop").resolve()
    workspace.mkdir()
    memory = ProjectPaths(Settings(), workspace).memory_dir
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(INDEX, "utf-8")
    (memory / "build-and-test.md").write_text(TOPIC, "utf-8")
    return workspace


@asynccontextmanager
async def agent(workspace: Path, name: str = "claude-code") -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "reverie", "mcp", "--workspace", str(workspace)],
        env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(
        read, write, client_info=Implementation(name=name, version="1.0")
    ) as session:
        await session.initialize()
        yield session


def _text(result: object) -> str:
    content = result.content  # type: ignore[attr-defined]
    assert len(content) == 1
    return str(content[0].text)


def reverie(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reverie", *args], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ))


def _files(memory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in memory.glob("*.md")}


async def test_a_proposal_changes_nothing_until_the_person_accepts_it(project: Path) -> None:
    memory = ProjectPaths(Settings(), project).memory_dir
    before = _files(memory)
    async with agent(project) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert listed["propose_memory_change"].input_schema["required"] == [
            "action", "entry", "reason"]
        result = await session.call_tool("propose_memory_change", {
            "action": "forget", "entry": "runInBand",
            "reason": "the user said the suite no longer needs --runInBand"})
        assert not result.is_error, _text(result)
        proposal = json.loads(_text(result))
        assert proposal["status"] == "waiting for the user"
        assert "\n-- Run the tests with `pnpm test -- --runInBand`." in proposal["diff"]
        # agents still read the memory as it was
        still = await session.call_tool("read_memory", {"topic": "build-and-test"})
        assert "runInBand" in _text(still)
        found = await session.call_tool("search", {"query": "runInBand tests"})
        assert "runInBand" in _text(found)
    assert _files(memory) == before
    assert MemoryHistory(memory).runs() == []

    listed_cli = reverie("review", "--workspace", str(project), "--json")
    assert listed_cli.returncode == 0, listed_cli.stderr
    reviews = json.loads(listed_cli.stdout)["reviews"]
    assert [r["review_id"] for r in reviews] == [proposal["proposal"]]
    assert reviews[0]["source"] == "agent" and reviews[0]["proposed_by"] == "claude-code"
    change = reviews[0]["changes"][0]
    assert change["path"] == "build-and-test.md"
    assert change["reason"] == "claude-code: the user said the suite no longer needs --runInBand"
    text = reverie("review", "--workspace", str(project))
    assert "proposed by claude-code" in text.stdout and "reverie apply" in text.stdout

    partial = reverie("apply", proposal["proposal"], "--only", "MEMORY.md", "--workspace",
                      str(project))
    assert partial.returncode == 1 and "not in the change set" in partial.stderr
    applied = reverie("apply", proposal["proposal"], "--workspace", str(project), "--json")
    assert applied.returncode == 0, applied.stderr
    outcome = json.loads(applied.stdout)
    assert outcome["accepted"] == ["build-and-test.md"] and outcome["run_id"]
    topic = (memory / "build-and-test.md").read_text("utf-8")
    assert "runInBand" not in topic and "Use pnpm, never npm or yarn." in topic
    runs = MemoryHistory(memory).runs()
    assert runs[0].run_id == outcome["run_id"] and runs[0].source == "curate"
    assert runs[0].summary.startswith("accepted: forget build-and-test.md:")
    assert not reverie("review", "--workspace", str(project), "--json").stdout.count('"agent"')

    undone = reverie("undo", outcome["run_id"], "--workspace", str(project))
    assert undone.returncode == 0, undone.stderr
    assert _files(memory) == before  # byte for byte


async def test_proposals_are_redacted_checked_and_can_be_discarded(project: Path) -> None:
    memory = ProjectPaths(Settings(), project).memory_dir
    before = _files(memory)
    async with agent(project, name="codex") as session:
        edit = await session.call_tool("propose_memory_change", {
            "action": "edit", "entry": "build-and-test.md:9",
            "new_text": f"- Use pnpm; the registry token is {TOKEN}",
            "reason": f"the token {TOKEN} is needed"})
        assert not edit.is_error, _text(edit)
        assert TOKEN not in _text(edit)
        refused = [
            ("propose_memory_change", {"action": "forget", "entry": "no such text here",
                                       "reason": "x"}),
            ("propose_memory_change", {"action": "forget", "entry": "pnpm", "reason": "x"}),
            ("propose_memory_change", {"action": "edit", "entry": "build-and-test.md:9",
                                       "new_text": "a\nb", "reason": "x"}),
            ("propose_memory_change", {"action": "move", "entry": "build-and-test.md:9",
                                       "to_file": "../../etc/passwd.md", "reason": "x"}),
            ("propose_memory_change", {"action": "forget", "entry": "runInBand",
                                       "reason": "   "}),
            ("propose_memory_change", {"action": "rewrite", "entry": "runInBand",
                                       "reason": "x"}),
            ("propose_memory_change", {"action": "pin", "entry": "MEMORY.md:99",
                                       "reason": "x"}),
        ]
        for name, arguments in refused:
            result = await session.call_tool(name, arguments)
            message = _text(result)
            assert result.is_error, (arguments, message)
            assert "\n" not in message and "Traceback" not in message, message
    staged = list(memory.joinpath(".reverie", "review").glob("*/memory/build-and-test.md"))
    assert len(staged) == 1
    staged_text = staged[0].read_text("utf-8")
    assert TOKEN not in staged_text and "[REDACTED" in staged_text
    review_id = staged[0].parent.parent.name
    reviews = json.loads(reverie("review", "--workspace", str(project), "--json").stdout)
    assert TOKEN not in json.dumps(reviews)
    assert reviews["reviews"][0]["proposed_by"] == "codex"

    # the person edits the file meanwhile: the proposal no longer applies, memory stays theirs
    (memory / "build-and-test.md").write_text(TOPIC + "- Node 22.\n", "utf-8")
    moved = reverie("apply", review_id, "--workspace", str(project))
    assert moved.returncode == 1 and "changed since" in moved.stderr
    dropped = reverie("discard", review_id, "--workspace", str(project), "--json")
    assert dropped.returncode == 0, dropped.stderr
    assert json.loads(dropped.stdout)["discarded"] == ["build-and-test.md"]
    assert (memory / "build-and-test.md").read_text("utf-8") == TOPIC + "- Node 22.\n"
    assert (memory / "MEMORY.md").read_bytes() == before["MEMORY.md"]
    assert not list(memory.joinpath(".reverie", "review").glob("*/review.json"))
    assert MemoryHistory(memory).runs() == []
