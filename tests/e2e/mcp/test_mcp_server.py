"""``reverie mcp`` as an agent runs it: a real subprocess driven by the MCP SDK's own stdio
client. initialize, list tools, every tool, bad arguments, refusals, bounds."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from reverie.config import ProjectPaths, Settings, claude_project_slug
from reverie.memory.history import MemoryHistory

SESSION = "5e55104a-0000-4000-8000-000000000001"
TOKEN = "ghp_R7kQ2mV9xL4pW8nT3bY6cF1hJ5sD0gA2zE7u"


def _transcript(cwd: Path) -> str:
    turns = [
        ("The coupon checkout test crashes with a TypeError on an empty cart, can you fix it?",
         "Fixed: `applyCoupon` read `cart.items[0]` before checking the cart was empty. It now "
         "returns the total unchanged for an empty cart, and `pnpm test` passes (88 tests)."),
        ("Also make the staging deploy use the blue-green script",
         "The staging deploy now runs scripts/deploy-blue-green.sh; the old rsync step is gone."),
    ]
    lines, parent = [], None
    for n, (ask, reply) in enumerate(turns):
        user, assistant = f"u{n}", f"a{n}"
        lines.append({"type": "user", "uuid": user, "parentUuid": parent, "sessionId": SESSION,
                      "cwd": str(cwd), "timestamp": f"2026-11-20T10:0{n}:00Z",
                      "isSidechain": False, "userType": "external",
                      "message": {"role": "user", "content": ask}})
        lines.append({"type": "assistant", "uuid": assistant, "parentUuid": user,
                      "sessionId": SESSION, "cwd": str(cwd),
                      "timestamp": f"2026-11-20T10:0{n}:30Z", "isSidechain": False,
                      "message": {"id": f"m{n}", "role": "assistant", "model": "claude",
                                  "content": [{"type": "text", "text": reply}]}})
        parent = assistant
    return "".join(json.dumps(line) + "\n" for line in lines)


@pytest.fixture
def project(reverie_env: dict[str, Path], tmp_path: Path) -> Path:
    workspace = (tmp_path / "shop").resolve()
    workspace.mkdir()
    sessions = reverie_env["agent_home"] / ".claude" / "projects" / \
        claude_project_slug(str(workspace))
    sessions.mkdir(parents=True)
    (sessions / f"{SESSION}.jsonl").write_text(_transcript(workspace), "utf-8")
    paths = ProjectPaths(Settings(), workspace)
    memory = paths.memory_dir
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(
        "# Memory\n\n- [Build and test](build-and-test.md) - pnpm only; how to run tests\n",
        "utf-8")
    (memory / "build-and-test.md").write_text(
        "---\nname: Build and test\ndescription: pnpm only; how to run tests\ntype: project\n"
        "---\n\n# Build and test\n\n- **Package manager:** use pnpm, never npm or yarn. "
        "_(session 5e55104a, 2026-11-20)_\n", "utf-8")
    notes = paths.notes_path(SESSION)
    notes.parent.mkdir(parents=True)
    notes.write_text(
        "# Session Title\n_A short title_\nCoupon crash on an empty cart\n\n"
        "# Errors & Corrections\n_Errors and how they were fixed_\n"
        "- applyCoupon crashed on an empty cart; guarded the first item read\n\n"
        "# Worklog\n_Step by step_\n" + "".join(f"- step {n}: looked at module {n}\n"
                                               for n in range(2_000)), "utf-8")
    return workspace


@asynccontextmanager
async def client(workspace: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "reverie", "mcp", "--workspace", str(workspace)],
        env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _text(result: object) -> str:
    content = result.content  # type: ignore[attr-defined]
    assert len(content) == 1
    return str(content[0].text)


async def test_initialize_and_list_tools(project: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "reverie", "mcp", "--workspace", str(project)],
        env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "reverie"
        assert init.instructions and "search" in init.instructions
        listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {"search", "get_session", "read_memory", "remember",
                          "propose_memory_change"}
    for tool in tools.values():
        assert tool.description and len(tool.description) > 80  # says when to use it
    assert tools["search"].input_schema["required"] == ["query"]
    assert set(tools["search"].input_schema["properties"]) == {"query", "limit", "agent",
                                                               "since"}
    assert tools["remember"].input_schema["required"] == ["text"]


async def test_search_then_open_the_hits(project: Path) -> None:
    async with client(project) as session:
        result = await session.call_tool("search", {"query": "coupon test crash empty cart"})
        assert not result.is_error
        payload = json.loads(_text(result))
        hits = payload["results"]
        assert hits and payload["index"]["sessions"] == 1
        kinds = {h["kind"] for h in hits}
        assert {"session", "notes"} <= kinds
        for hit in hits:
            assert hit["id"] and hit["tokens"] > 0 and hit["open"]["tool"] in (
                "get_session", "read_memory")
            assert len(hit["text"]) <= 320
        session_hit = next(h for h in hits if h["kind"] == "session")
        assert session_hit["session_id"] == SESSION
        assert "applyCoupon" in session_hit["text"] or "coupon" in session_hit["text"].lower()

        memory = await session.call_tool("search", {"query": "which package manager, npm?"})
        memory_hits = json.loads(_text(memory))["results"]
        assert memory_hits[0]["kind"] == "memory"
        assert memory_hits[0]["open"] == {"tool": "read_memory", "topic": "build-and-test.md"}

        opened = await session.call_tool("read_memory", {"topic": "build-and-test"})
        assert not opened.is_error and "never npm or yarn" in _text(opened)
        index = await session.call_tool("read_memory", {"topic": "MEMORY"})
        assert "[Build and test](build-and-test.md)" in _text(index)

        notes = await session.call_tool("get_session", {"session_id": SESSION})
        text = _text(notes)
        assert not notes.is_error and "# Errors & Corrections" in text
        assert len(text) <= 2_000 * 4 + 200 and "cut at ~2000 tokens" in text
        section = await session.call_tool("get_session", {"session_id": SESSION[:8],
                                                          "section": "Errors & Corrections"})
        assert "guarded the first item read" in _text(section)
        assert "step 5" not in _text(section)

        filtered = await session.call_tool("search", {"query": "coupon", "agent": "codex"})
        assert json.loads(_text(filtered))["results"] == []
        later = await session.call_tool("search", {"query": "coupon", "since": "2027-01-01"})
        assert [h for h in json.loads(_text(later))["results"] if h["kind"] == "session"] == []


async def test_remember_writes_through_the_memory_transaction(project: Path) -> None:
    async with client(project) as session:
        result = await session.call_tool("remember", {
            "text": f"The staging database is reset every Monday; its token is {TOKEN}",
            "topic": "Environments"})
        assert not result.is_error, _text(result)
        written = json.loads(_text(result))
        assert written["file"] == "environments.md"
        assert "asked by the user in session 5e55104a" in written["remembered"]
        found = await session.call_tool("search", {"query": "staging database reset"})
        hits = json.loads(_text(found))["results"]
        assert hits[0]["kind"] == "memory" and hits[0]["open"]["topic"] == "environments.md"
    memory = ProjectPaths(Settings(), project).memory_dir
    topic = (memory / "environments.md").read_text("utf-8")
    assert "reset every Monday" in topic and TOKEN not in topic
    assert "[Environments](environments.md)" in (memory / "MEMORY.md").read_text("utf-8")
    runs = MemoryHistory(memory).runs()
    assert runs and runs[0].run_id == written["run_id"] and runs[0].sessions == [SESSION]


async def test_errors_are_one_line_tool_errors(project: Path) -> None:
    async with client(project) as session:
        calls = [
            ("search", {"query": 3}),
            ("search", {}),
            ("search", {"query": "x", "limit": 500}),
            ("search", {"query": "x", "since": "last tuesday"}),
            ("get_session", {"session_id": "no-such-session"}),
            ("get_session", {"session_id": "../../etc/passwd"}),
            ("get_session", {"session_id": SESSION, "section": "Nope"}),
            ("read_memory", {"topic": "../../../etc/passwd"}),
            ("read_memory", {"topic": "missing-topic"}),
            ("remember", {"text": "   "}),
            ("remember", {"text": "File has not been read yet. Read it first."}),
            ("remember", {"text": f"{TOKEN}"}),
            ("remember", {"text": "x" * 5_000}),
            ("remember", {"text": "fine", "topic": "MEMORY"}),
            ("no_such_tool", {}),
        ]
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            text = _text(result)
            assert result.is_error, (name, arguments, text)
            assert "\n" not in text and "Traceback" not in text, (name, text)
            assert len(text) < 300
        # the server still answers after all that
        ok = await session.call_tool("search", {"query": "coupon"})
        assert not ok.is_error
    memory = ProjectPaths(Settings(), project).memory_dir
    assert sorted(p.name for p in memory.iterdir() if p.suffix == ".md") == [
        "MEMORY.md", "build-and-test.md"]


async def test_hostile_queries_answer(project: Path) -> None:
    async with client(project) as session:
        for query in ['"', "NEAR(", "a:b*", "!!!", "x" * 1_000_000]:
            result = await session.call_tool("search", {"query": query})
            assert not result.is_error, _text(result)
            assert len(_text(result)) <= 2_000 * 4


def test_never_serves_the_home_folder_by_accident(reverie_env: dict[str, Path]) -> None:
    import subprocess

    home = Path.home()
    done = subprocess.run([sys.executable, "-m", "reverie", "mcp"], cwd=home, input=b"",
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 1 and done.stdout == b""
    assert b"not a project folder" in done.stderr and b"Traceback" not in done.stderr
