"""A model's reply is input (issue 27): one that deletes the memory is refused, a name the apply
would refuse is refused per call (the rest of the run survives), and per-run limits hold in
both modes (tool calls and the JSON no-tools form). The model is the fake LLM over real HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.events import EventRecorder
from reverie.memory.history import MemoryHistory
from support.fake_llm import FakeLLMServer, Step, ToolCallSpec


def _topic(name: str) -> str:
    return (f"---\nname: {name}\ndescription: about {name}\ntype: project\n---\n\n"
            f"What we know about {name}.\n")


TOPICS = ["build", "deploy", "testing", "style", "release"]
INDEX = "# Memory\n\n" + "".join(f"- [{t.title()}]({t}.md) - about {t}\n" for t in TOPICS)


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_PROVIDER", "openai")
    monkeypatch.setenv("REVERIE_API_KEY", "test-key")
    monkeypatch.setenv("REVERIE_MAX_RETRIES", "0")


@pytest.fixture
def memory(workspace: Path) -> Path:
    directory = ProjectPaths(Settings(), workspace).memory_dir
    directory.mkdir(parents=True)
    (directory / "MEMORY.md").write_text(INDEX)
    for topic in TOPICS:
        (directory / f"{topic}.md").write_text(_topic(topic))
    return directory


def _snapshot(memory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(memory)): p.read_bytes() for p in memory.rglob("*")
            if p.is_file() and ".reverie" not in p.parts and not p.name.startswith(".")}


async def _dream(workspace: Path, monkeypatch: pytest.MonkeyPatch, *steps: Step,
                 no_tools: bool = False) -> tuple[object, EventRecorder]:
    async with FakeLLMServer() as server:
        server.scenario.no_tools = no_tools
        monkeypatch.setenv("REVERIE_BASE_URL", server.base_url)
        server.enqueue(*steps)
        events = EventRecorder()
        result = await DreamRunner(Settings(), events).run(
            DreamRequest(workspace=workspace, manual=True))
    return result, events


@pytest.mark.parametrize("deletes", [
    ["MEMORY.md", *(f"{t}.md" for t in TOPICS)],  # the reported reply: everything
    [f"{t}.md" for t in TOPICS[:4]],  # most of the topics
])
async def test_a_reply_that_deletes_the_memory_is_refused(
    deletes: list[str], workspace: Path, memory: Path, model_env: None,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _snapshot(memory)
    reply = Step.json_reply({"summary": "Cleaned up.", "changes": [
        {"path": name, "delete": True} for name in deletes]})
    result, _ = await _dream(workspace, monkeypatch, reply, no_tools=True)
    assert result.error and "refused" in result.error, result  # type: ignore[attr-defined]
    assert _snapshot(memory) == before
    assert MemoryHistory(memory).runs() == []


@pytest.mark.parametrize("tools", [True, False])
async def test_a_deleted_or_emptied_index_is_rebuilt_never_lost(
    tools: bool, workspace: Path, memory: Path, model_env: None,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index alone deleted or emptied: the post-run repair indexes every topic again (had
    it not, the run would be refused), so no entry is lost."""
    if tools:
        steps = [Step.tool("write_file", file_path=str(memory / "MEMORY.md"),
                           content="# Memory\n"), Step.reply("Emptied the index.")]
    else:
        steps = [Step.json_reply({"summary": "Dropped the index.", "changes": [
            {"path": "MEMORY.md", "delete": True}]})]
    result, _ = await _dream(workspace, monkeypatch, *steps, no_tools=not tools)
    assert result.error is None, result  # type: ignore[attr-defined]
    index = (memory / "MEMORY.md").read_text()
    assert all(f"({topic}.md)" in index for topic in TOPICS), index


def test_the_guard_refuses_an_index_deleted_or_emptied_after_repair(tmp_path: Path) -> None:
    from reverie.memory.guards import DestructiveRun, refuse_destruction

    live, staged = tmp_path / "live", tmp_path / "staged"
    for directory in (live, staged):
        directory.mkdir()
        (directory / "MEMORY.md").write_text(INDEX)
    (staged / "MEMORY.md").write_text("# Memory\n")
    with pytest.raises(DestructiveRun, match="every entry"):
        refuse_destruction(live, staged)
    (staged / "MEMORY.md").unlink()
    with pytest.raises(DestructiveRun, match=r"delete MEMORY\.md"):
        refuse_destruction(live, staged)


async def test_merging_two_topics_is_still_allowed(
    workspace: Path, memory: Path, model_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = INDEX.replace("- [Style](style.md) - about style\n", "")
    reply = Step.json_reply({"summary": "Merged style into build.", "changes": [
        {"path": "style.md", "delete": True},
        {"path": "build.md", "content": _topic("build") + "And the style rules.\n"},
        {"path": "MEMORY.md", "content": index}]})
    result, _ = await _dream(workspace, monkeypatch, reply, no_tools=True)
    assert result.error is None, result  # type: ignore[attr-defined]
    assert not (memory / "style.md").exists() and "style rules" in (memory / "build.md").read_text()


@pytest.mark.parametrize("name", [
    "back\\slash.md",  # accepted by the gate, refused by the apply: failed the whole run
    "CON.md", "nul.md", "com1.md", "aux.txt.md",  # Windows device names
    "evil\u202egpj.md", "zero\u200bwidth.md", "bell\x07.md",  # bidi override, invisible, control
    "memory.md",  # a case twin of MEMORY.md
    "Build.md",  # a case twin of build.md
    "trailing.md.", "space.md ",
    "a/b/c/d/e/f/deep.md",  # nesting
])
async def test_a_name_the_apply_would_refuse_is_refused_per_call_and_the_run_survives(
    name: str, workspace: Path, memory: Path, model_env: None,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    index = INDEX + "- [Ci](ci.md) - about ci\n"
    result, events = await _dream(
        workspace, monkeypatch,
        Step.tool("write_file", file_path=str(memory / name), content=_topic("odd")),
        Step.tool("write_file", file_path=str(memory / "ci.md"), content=_topic("ci")),
        Step.tool("write_file", file_path=str(memory / "MEMORY.md"), content=index),
        Step.reply("Added ci."))
    assert result.error is None, result  # type: ignore[attr-defined]
    assert [d.payload["path"] for d in events.of_type("denied")] == [str(memory / name)]
    assert (memory / "ci.md").is_file()
    assert sorted(_snapshot(memory)) == sorted([*(f"{t}.md" for t in TOPICS), "MEMORY.md",
                                                 "ci.md"])


async def test_files_per_run_are_limited_in_tools_mode(
    workspace: Path, memory: Path, model_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's model wrote 3,000 files in one turn."""
    from reverie.tools.gate import MAX_NEW_FILES

    calls = Step.tool_calls(*(
        ToolCallSpec(name="write_file", arguments={"file_path": str(memory / f"n{i}.md"),
                                                   "content": _topic(f"n{i}")})
        for i in range(MAX_NEW_FILES + 5)))
    result, events = await _dream(workspace, monkeypatch, calls, Step.reply("Lots."))
    assert len(events.of_type("denied")) == 5
    new = [name for name in _snapshot(memory) if name.startswith("n")]
    assert len(new) <= MAX_NEW_FILES
    del result


async def test_files_per_run_are_limited_in_no_tools_mode(
    workspace: Path, memory: Path, model_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reverie.tools.gate import MAX_NEW_FILES

    before = _snapshot(memory)
    reply = Step.json_reply({"summary": "Lots.", "changes": [
        {"path": f"n{i}.md", "content": _topic(f"n{i}")} for i in range(MAX_NEW_FILES + 5)]})
    result, _ = await _dream(workspace, monkeypatch, reply, no_tools=True)
    assert result.error  # type: ignore[attr-defined]
    assert _snapshot(memory) == before
