"""A dream driven by a model (the fake LLM server over real HTTP): the model sees real memory
paths while writes land in staging; writes outside the memory dir are denied; failures leave
the memory untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.events import EventRecorder
from reverie.memory.history import MemoryHistory
from reverie.memory.lock import ConsolidationLock
from reverie.memory.store import check_index, read_topic
from support.fake_llm import FakeLLMServer, Step

DEPLOY = ("---\nname: Deploy\ndescription: how we deploy\ntype: project\n---\n\n"
          "Deployed yesterday with `fly deploy`; token "
          "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789\n")


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_PROVIDER", "openai")
    monkeypatch.setenv("REVERIE_API_KEY", "test-key")
    monkeypatch.setenv("REVERIE_MAX_RETRIES", "0")


async def test_model_writes_through_the_gate_into_staging(workspace: Path, tmp_path: Path,
                                                          model_env: None,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          ) -> None:
    outside = tmp_path / "outside.md"
    secret = tmp_path / "other-project-notes.md"
    secret.write_text("PRIVATE-OTHER-PROJECT")
    paths = ProjectPaths(Settings(), workspace)
    notes = paths.notes_path("d6e0bada-1959-4eec-a9d2-0bfade768d8f")
    notes.parent.mkdir(parents=True)
    notes.write_text("# Workflow\n- export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n")
    async with FakeLLMServer() as server:
        monkeypatch.setenv("REVERIE_BASE_URL", server.base_url)
        memory = paths.memory_dir
        server.enqueue(
            Step.tool("read_file", file_path=str(notes)),
            Step.tool("read_file", file_path=str(secret)),
            Step.tool("list_dir", path=str(memory)),
            Step.tool("write_file", file_path=str(memory / "deploy.md"), content=DEPLOY),
            Step.tool("write_file", file_path="MEMORY.md",
                      content="# Memory\n\n- [Deploy](deploy.md) - how we deploy\n"),
            Step.tool("write_file", file_path=str(outside), content="escape"),
            Step.reply("Added a deploy topic."),
        )
        events = EventRecorder()
        result = await DreamRunner(Settings(), events).run(
            DreamRequest(workspace=workspace, manual=True, extra="focus on deploys"))
        requests = [r.json for r in server.model_requests()]
    assert result.error is None and result.ran
    assert result.turns == 7 and result.tokens_in > 0 and result.tokens_out > 0
    assert not outside.exists()
    assert len(events.of_type("denied")) == 2  # the read and the write outside the job
    text = (memory / "deploy.md").read_text()
    assert "Deployed on 2026-" in text and "yesterday" not in text  # absolute date
    assert "sk-proj-abcdefghij" not in text  # redacted before it reached memory
    meta = read_topic(memory / "deploy.md").meta
    assert meta.updated and meta.sources  # filled in by Reverie
    assert check_index(memory) == []
    sent = str(requests)
    assert str(memory) in sent and ".reverie" not in sent  # staging is invisible
    assert "focus on deploys" in sent and "PRIVATE-OTHER-PROJECT" not in sent
    assert "export GITHUB_TOKEN=" in sent and "ghp_abcdefghij" not in sent  # read, redacted
    record = MemoryHistory(memory).runs()[0]
    assert record.tokens_in == result.tokens_in and "deploy.md" in record.added
    assert sorted(result.files_touched) == [str(memory / "MEMORY.md"), str(memory / "deploy.md")]


async def test_model_failure_leaves_memory_and_lock_as_they_were(workspace: Path,
                                                                 model_env: None,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 ) -> None:
    memory = ProjectPaths(Settings(), workspace).memory_dir
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n")
    async with FakeLLMServer() as server:
        monkeypatch.setenv("REVERIE_BASE_URL", server.base_url)
        server.enqueue(
            Step.tool("write_file", file_path=str(memory / "MEMORY.md"), content="garbage\n"),
            Step.error(400, "bad request"),
        )
        events = EventRecorder()
        result = await DreamRunner(Settings(), events).run(
            DreamRequest(workspace=workspace, manual=True))
    assert result.error and events.of_type("error")
    assert (memory / "MEMORY.md").read_text() == "# Memory\n"
    assert not ConsolidationLock(memory).path.exists()
    assert MemoryHistory(memory).runs() == []
