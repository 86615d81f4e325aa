"""The coding-agent CLI providers against fake ``claude`` / ``codex`` / ``gemini`` executables
(real processes printing the documented shapes): parsing, usage and cost, and every failure."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from reverie.config import Settings
from reverie.llm.cli_agent import SPECS, CliAgentClient, find_binary
from reverie.llm.errors import (
    LLMAuthError,
    LLMBadResponseError,
    LLMConfigError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
)
from reverie.llm.factory import make_client
from reverie.llm.types import ChatMessage
from reverie.session_memory.llm_writer import NotesRewrite
from support.fake_agent_cli import install_fake_clis

CLIS = {"claude-code-cli": "claude", "codex-cli": "codex", "gemini-cli": "gemini"}
SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    install_fake_clis(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CLI_LOG", str(tmp_path / "cli.log"))
    return bin_dir


@pytest.fixture(params=list(CLIS))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def client_for(provider: str, tmp_path: Path, timeout: float = 30.0) -> CliAgentClient:
    spec = SPECS[provider]
    return CliAgentClient(spec, binary=find_binary(spec, None), workdir=tmp_path / "work",
                          timeout=timeout)


def runs(tmp_path: Path) -> list[dict[str, object]]:
    log = tmp_path / "cli.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def test_answer_usage_and_prompt_on_stdin_only(
    fake_bin: Path, tmp_path: Path, provider: str
) -> None:
    client = client_for(provider, tmp_path)
    reply = await client.complete([ChatMessage(role="user", content=f"hello, key {SECRET}")],
                                  system="be brief")
    assert reply.text == "OK"
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    [run] = runs(tmp_path)
    assert run["cwd"] == str(tmp_path / "work")
    assert "hello" in str(run["stdin"]) and "be brief" in str(run["stdin"])
    assert SECRET not in str(run["stdin"])  # redacted before it left
    assert not any("hello" in a for a in run["argv"])  # type: ignore[union-attr]
    if provider == "claude-code-cli":
        assert reply.cost_usd == pytest.approx(0.0123)
        assert reply.usage.cache_read_tokens == 300
        assert run["argv"][:8] == ["-p", "--output-format", "json", "--tools", "",  # type: ignore[index]
                                   "--max-turns", "1", "--no-session-persistence"]
    if provider == "codex-cli":
        assert run["argv"][-1] == "-" and "read-only" in run["argv"]  # type: ignore[index,operator]
    assert (tmp_path / "work").stat().st_mode & 0o777 == 0o700


async def test_structured_output_through_the_prompt(
    fake_bin: Path, tmp_path: Path, provider: str
) -> None:
    notes = tmp_path / "session_memory.md"
    notes.write_text("# Title\n_desc_\n")
    client = client_for(provider, tmp_path)
    reply = await client.complete([ChatMessage(role="user", content=f"update {notes}")],
                                  output_schema=NotesRewrite)
    assert isinstance(reply.parsed, NotesRewrite)
    assert reply.parsed.notes.endswith("- updated through the CLI\n")


@pytest.mark.parametrize("mode", ["stream", "banner"])
async def test_stream_events_and_banners_are_read(
    fake_bin: Path, tmp_path: Path, provider: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    reply = await client_for(provider, tmp_path).complete([ChatMessage(role="user",
                                                                       content="hi")])
    assert reply.text == "OK"


@pytest.mark.parametrize(("mode", "error", "words"), [
    ("is_error", LLMServerError, "reported an error"),
    ("quota", LLMRateLimitError, "usage limit or rate limit"),
    ("logged_out", LLMAuthError, "not logged in"),
    ("exit", LLMServerError, "something broke"),
    ("malformed", LLMBadResponseError, "cannot read"),
])
async def test_failures_are_clear_errors(
    fake_bin: Path, tmp_path: Path, provider: str, mode: str, error: type[Exception],
    words: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if mode == "malformed" and provider == "codex-cli":
        words = "cannot read"
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    with pytest.raises(error, match=words):
        await client_for(provider, tmp_path).complete([ChatMessage(role="user", content="hi")])


async def test_a_hung_cli_is_killed_with_its_process_group(
    fake_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    monkeypatch.setenv("FAKE_CLI_PID_FILE", str(tmp_path / "pid"))
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match="did not answer within 1 s"):
        await client_for("claude-code-cli", tmp_path, timeout=1.0).complete(
            [ChatMessage(role="user", content="hi")])
    assert time.monotonic() - started < 15
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_cancelling_kills_the_cli(
    fake_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    monkeypatch.setenv("FAKE_CLI_PID_FILE", str(tmp_path / "pid"))
    task = asyncio.ensure_future(client_for("codex-cli", tmp_path).complete(
        [ChatMessage(role="user", content="hi")]))
    for _ in range(200):
        if (tmp_path / "pid").exists():
            break
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_missing_cli_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       provider: str) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(LLMConfigError, match="not found on PATH: install it"):
        make_client(Settings(provider=provider), "session_memory")  # type: ignore[arg-type]
    with pytest.raises(LLMConfigError, match="REVERIE_CLI_PATH"):
        make_client(Settings(provider=provider, cli_path=str(tmp_path / "nope")),  # type: ignore[arg-type]
                    "dream")


def test_configured_binary_is_used(fake_bin: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    client = make_client(Settings(provider="gemini-cli", cli_path=str(fake_bin / "gemini")),
                         "sleep")
    assert isinstance(client, CliAgentClient) and client.binary == str(fake_bin / "gemini")
    assert client.supports_tools is False
