"""Deep sleep over the providers' batch APIs and REM over structured output, against the fake
LLM server (real HTTP on 127.0.0.1) for both wire formats."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.memory.history import MemoryHistory
from reverie.memory.paths import LOCK_NAME
from reverie.sleep.cycle import SleepCycle
from reverie.sleep.entries import load_entries
from reverie.sleep.tracing import SleepTracer
from support.clock import FakeClock
from support.fake_llm import BatchBehaviour, FakeLLMServer, FakeRequest, Step

from .conftest import CLAUDE_ID

PROVIDERS = ["openai", "anthropic"]
#: the day a cycle run now reviews (yesterday): what new entries are dated
TODAY = date.today() - timedelta(days=1)


def digest(directory: Path) -> dict[str, str]:
    if not directory.exists():
        return {}
    return {p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*"))
            if p.is_file() and ".reverie" not in p.relative_to(directory).parts}


def is_rem(request: FakeRequest) -> bool:
    return "memory keeper" in request.system


def summary_for(request: FakeRequest) -> Step:
    text = request.last_user_text
    if "spotter-dov" in text:
        return Step.json_reply({
            "summary": "Extracted a shared transcript component for spotter-dov.",
            "memory_candidates": [{
                "key": "spotter-components",
                "value": "Shared transcript UI lives in transcript_components.ex.",
            }],
        })
    return Step.json_reply({
        "summary": "Set OpenCode compaction threshold to 0.9; npm test passes.",
        "memory_candidates": [{"key": "npm-build", "value": "Build with `npm run build`."}],
    })


REM_REPLY = {"entries": [
    {"key": "npm-build", "title": "Build command", "description": "How to build the project",
     "type": "project", "content": "Build with `npm run build`.", "recorded": "2001-01-01"},
    {"key": "keep-me", "title": "Keep me", "description": "An entry that stays as it was",
     "type": "project", "content": "Unchanged fact.", "recorded": "2001-01-01"},
]}


def settings_for(provider: str, server: FakeLLMServer, **kw: Any) -> Settings:
    return Settings(provider=provider, base_url=server.base_url, api_key="test-key",
                    max_retries=0, **kw)




def cycle(settings: Settings, fake_time: FakeClock | None = None, **kw: Any) -> SleepCycle:
    fake_time = fake_time or FakeClock()
    return SleepCycle(settings, tracer=SleepTracer(use_otel=False), sleep=fake_time.sleep,
                      monotonic=fake_time.monotonic, lock_wait_seconds=0, **kw)


def seed_memory(memory: Path) -> None:
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Keep me](keep-me.md) - An entry that "
                                      "stays as it was\n")
    (memory / "keep-me.md").write_text("---\nname: Keep me\ndescription: An entry that stays as "
                                       "it was\ntype: project\nupdated: '2025-03-04'\n---\n\n"
                                       "Unchanged fact.\n")


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_all_items_succeed(provider: str, workspace) -> None:
    def respond(request: FakeRequest) -> Step:
        return Step.json_reply(REM_REPLY) if is_rem(request) else summary_for(request)

    with FakeLLMServer(fallback=respond, batch=BatchBehaviour(polls_before_done=2)) as server:
        settings = settings_for(provider, server)
        memory = ProjectPaths(settings, workspace.root).memory_dir
        seed_memory(memory)
        fake_time = FakeClock()
        report = await cycle(settings, fake_time).run(workspace.root)
        paths = [r.path for r in server.requests]

    assert (report.summaries_ok, report.summaries_failed, report.candidates) == (2, 0, 2)
    assert fake_time.sleeps == [5.0, 10.0]  # backoff from 5 s, doubling
    batch_path = "/messages/batches" if provider == "anthropic" else "/batches"
    assert any(p.endswith(batch_path) for p in paths)
    journal = report.journal_path.read_text()
    assert "Extracted a shared transcript component for spotter-dov." in journal
    assert "**npm-build**: Build with `npm run build`." in journal
    entries = {e.key: e for e in load_entries(memory)}
    assert set(entries) == {"npm-build", "keep-me"}
    assert entries["keep-me"].recorded == date(2025, 3, 4)  # unchanged: keeps its date
    assert entries["npm-build"].recorded == TODAY  # new: the review day, whatever the model said
    assert (report.entries_before, report.entries_after) == (1, 2)
    (run,) = MemoryHistory(memory).runs()
    assert run.source == "sleep" and run.run_id == report.run_id
    assert run.added == ["npm-build.md"] and run.changed == ["MEMORY.md"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_some_items_fail_and_the_rest_are_kept(provider: str, workspace) -> None:
    def respond(request: FakeRequest) -> Step:
        return Step.json_reply(REM_REPLY) if is_rem(request) else summary_for(request)

    behaviour = BatchBehaviour(fail_custom_ids=["session-1"])
    with FakeLLMServer(fallback=respond, batch=behaviour) as server:
        report = await cycle(settings_for(provider, server)).run(workspace.root)
    assert (report.summaries_ok, report.summaries_failed) == (1, 1)
    journal = report.journal_path.read_text()
    assert "1 summarised, 1 failed" in journal
    assert "scripted failure of session-1" in journal
    assert "Set OpenCode compaction threshold" in journal  # session-0 (Codex, older) kept
    assert report.run_id is not None


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_malformed_items_are_counted_as_failures(provider: str, workspace) -> None:
    def respond(request: FakeRequest) -> Step:
        if is_rem(request):
            return Step.json_reply(REM_REPLY)
        if "spotter-dov" in request.last_user_text:
            return Step.json_reply({"summary": 42, "memory_candidates": "nope"})
        return summary_for(request)

    with FakeLLMServer(fallback=respond) as server:
        report = await cycle(settings_for(provider, server)).run(workspace.root)
    assert (report.summaries_ok, report.summaries_failed) == (1, 1)
    assert "did not match ConversationSummary" in report.journal_path.read_text()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_batch_that_never_ends_times_out_without_waiting(provider: str, workspace) -> None:
    def respond(request: FakeRequest) -> Step:
        return Step.json_reply(REM_REPLY) if is_rem(request) else summary_for(request)

    with FakeLLMServer(fallback=respond, batch=BatchBehaviour(never_end=True)) as server:
        settings = settings_for(provider, server)
        memory = ProjectPaths(settings, workspace.root).memory_dir
        seed_memory(memory)
        before = digest(memory)
        fake_time = FakeClock()
        report = await cycle(settings, fake_time).run(workspace.root)
        rem_calls = [r for r in server.model_requests() if "memory keeper" in r.body]

    assert fake_time.sleeps[:5] == [5.0, 10.0, 20.0, 40.0, 60.0]
    assert max(fake_time.sleeps) == 60.0
    assert sum(fake_time.sleeps) == pytest.approx(7200.0)
    assert (report.summaries_ok, report.summaries_failed) == (0, 2)
    assert "timed out" in report.journal_path.read_text()
    assert report.rem_error and rem_calls == []  # nothing summarised: memory left alone
    assert report.entries_before == report.entries_after == 1
    assert digest(memory) == before


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_rem_reply_breaking_the_schema_changes_nothing(provider: str, workspace) -> None:
    bad = {"entries": [{"key": "x", "title": "no content or date"}]}

    def respond(request: FakeRequest) -> Step:
        return Step.json_reply(bad) if is_rem(request) else summary_for(request)

    with FakeLLMServer(fallback=respond) as server:
        settings = settings_for(provider, server)
        memory = ProjectPaths(settings, workspace.root).memory_dir
        seed_memory(memory)
        lock = memory / LOCK_NAME
        before = digest(memory)
        report = await cycle(settings).run(workspace.root)
        rem_calls = [r for r in server.model_requests() if "memory keeper" in r.body]

    assert len(rem_calls) == 2  # the reply and its one repair attempt
    assert report.summaries_ok == 2 and report.journal_path.is_file()
    assert report.rem_error and "ConsolidatedMemory" in report.rem_error
    assert report.run_id is None and report.entries_after == report.entries_before == 1
    assert digest(memory) == before and not lock.exists()
    assert MemoryHistory(memory).runs() == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_rem_over_the_cap_is_rejected(provider: str, workspace) -> None:
    many = {"entries": [dict(REM_REPLY["entries"][0], key=f"k{i}") for i in range(4)]}

    def respond(request: FakeRequest) -> Step:
        return Step.json_reply(many) if is_rem(request) else summary_for(request)

    with FakeLLMServer(fallback=respond) as server:
        settings = settings_for(provider, server, sleep_max_entries=3)
        memory = ProjectPaths(settings, workspace.root).memory_dir
        seed_memory(memory)
        before = digest(memory)
        report = await cycle(settings).run(workspace.root)
        rem = next(r for r in server.model_requests() if "memory keeper" in r.body)
    assert '"maxItems": 3' in rem.body or '"maxItems":3' in rem.body
    assert report.rem_error and digest(memory) == before


async def test_secrets_never_reach_the_model_or_the_journal(workspace) -> None:
    secret = "sk-ant-api03-" + "Zq7" * 15
    leaky = {"summary": f"Used key {secret} to deploy.", "memory_candidates": [
        {"key": "deploy", "value": f"Deploy with token {secret}."}]}

    def respond(request: FakeRequest) -> Step:
        return Step.json_reply(REM_REPLY) if is_rem(request) else Step.json_reply(leaky)

    with FakeLLMServer(fallback=respond) as server:
        settings = settings_for("openai", server)
        notes = ProjectPaths(settings, workspace.root).notes_path(
            "4d5611e5-241a-462a-8d15-5122611a9569")
        notes.parent.mkdir(parents=True)
        notes.write_text(f"# Session Title\n_t_\n\nDeploy\n\n# Learnings\n_l_\n\n"
                         f"- export ANTHROPIC_API_KEY={secret}\n")
        report = await cycle(settings).run(workspace.root)
        bodies = [r.body for r in server.requests]
    assert any("Deploy" in b for b in bodies)  # the notes were sent ...
    assert not any(secret in b for b in bodies)  # ... without the key
    assert secret not in report.journal_path.read_text()
    assert "Used key" in report.journal_path.read_text()


async def test_sleep_prompts_can_be_overridden(workspace, tmp_path: Path) -> None:
    """``<config dir>/sleep/summary.md`` and ``rem.md`` replace the built-in instructions
    (the spec allows it); ``{{date}}`` / ``{{maxEntries}}`` are filled in the REM one."""
    config = tmp_path / "config"
    (config / "sleep").mkdir(parents=True)
    (config / "sleep" / "summary.md").write_text("OUR OWN REVIEW RULES: summarise tersely.\n")
    (config / "sleep" / "rem.md").write_text("OUR OWN REM RULES for {{date}}, at most "
                                             "{{maxEntries}} entries.\n")

    bodies: list[str] = []

    def respond(request: FakeRequest) -> Step:
        bodies.append(json.dumps(request.body))
        return Step.json_reply(REM_REPLY) if is_rem(request) else summary_for(request)

    with FakeLLMServer(fallback=respond) as server:
        settings = settings_for("openai", server, config_dir=config)
        report = await cycle(settings).run(workspace.root)
    assert report.summaries_ok == 2 and report.run_id
    assert any("OUR OWN REVIEW RULES" in b for b in bodies)
    rem = [b for b in bodies if "OUR OWN REM RULES" in b]
    assert rem and f"for {TODAY.isoformat()}, at most 50 entries" in rem[0]
    assert not any("Review the session below and answer" in b for b in bodies)


async def test_the_rem_request_carries_reverie_s_own_candidate_facts(workspace) -> None:
    """Beside the summaries' candidates, REM is told what the analysis read in the reviewed
    sessions (the dream brief's section), each fact with its session and day."""
    def respond(request: FakeRequest) -> Step:
        return Step.json_reply(REM_REPLY) if is_rem(request) else summary_for(request)

    with FakeLLMServer(fallback=respond, batch=BatchBehaviour(polls_before_done=0)) as server:
        settings = settings_for("openai", server)
        await cycle(settings).run(workspace.root)
        rem = next(r for r in server.model_requests() if "memory keeper" in r.body)
    text = json.loads(rem.body)["messages"][-1]["content"]
    section = text[text.index("## Candidate facts (Reverie's own reading"):]
    facts = [line for line in section.splitlines() if line.startswith("- (")]
    assert facts, section[:2000]
    reviewed = {CLAUDE_ID, "-".join(workspace.codex.stem.split("-")[-5:])}
    evidence = [re.search(r"\[session (\S+), (\d{4}-\d{2}-\d{2})\]$", line) for line in facts]
    assert all(evidence), facts
    assert {m.group(1) for m in evidence if m} <= reviewed
