"""``reverie.server.testModel`` over stdio against the fake provider: latency, streaming, tool
calling and the reported model name; a model without tools and an unreachable endpoint."""

from __future__ import annotations

import pytest

from support.fake_llm import FakeLLMServer, FakeRequest, Step

pytestmark = pytest.mark.e2e


def settings(fake: FakeLLMServer, **extra: object) -> dict[str, object]:
    return {"provider": "openai", "model": "fake-model", "baseUrl": fake.base_url,
            "apiKey": "sk-test-not-a-real-key", "maxRetries": 0, "sessionMemoryEnabled": False,
            "dreamEnabled": False, "sleepEnabled": False, **extra}


def ping(request: FakeRequest) -> Step:
    return Step.tool("ping", text="ok") if request.tool_names else Step.reply("OK")


async def test_model_that_streams_and_calls_tools(start_server) -> None:
    async with FakeLLMServer(fallback=ping) as fake:
        s = await start_server(init_options=settings(fake))
        result = await s.command("reverie.server.testModel")
        assert result["ok"] is True and result["error"] is None
        assert result["streaming"] is True and result["tools"] is True
        assert result["modelReported"] == "fake-model" and result["latencyMs"] >= 0
        assert "streaming: yes; tool calls: yes" in result["message"]
        [request] = fake.model_requests()
        assert request.json["stream"] is True and request.json["tools"]
        await s.close()


async def test_model_without_tools_and_without_streaming(start_server) -> None:
    async with FakeLLMServer(fallback=ping) as fake:
        fake.scenario.no_tools = True
        fake.scenario.streaming = "refuse"
        s = await start_server(init_options=settings(fake))
        result = await s.command("reverie.server.testModel")
        assert result["ok"] is True
        assert result["tools"] is False and result["streaming"] is False
        assert "no-tools form" in result["message"]
        await s.close()


async def test_unreachable_endpoint_is_reported_not_raised(start_server) -> None:
    s = await start_server(init_options={"provider": "openai", "baseUrl": "http://127.0.0.1:9/v1",
                                         "maxRetries": 0, "sessionMemoryEnabled": False,
                                         "dreamEnabled": False, "sleepEnabled": False})
    result = await s.command("reverie.server.testModel")
    assert result["ok"] is False and "Could not reach" in result["error"]
    await s.close()


async def test_provider_picker_lists_the_clis_found_here(start_server, tmp_path) -> None:
    import os

    from support.fake_agent_cli import install_fake_clis

    bin_dir = tmp_path / "bin"
    install_fake_clis(bin_dir)
    (bin_dir / "gemini").unlink()  # only two of the three are installed
    s = await start_server(env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                                "FAKE_CLI_MODE": "ok"},
                           init_options={"sessionMemoryEnabled": False, "dreamEnabled": False,
                                         "sleepEnabled": False})
    result = await s.command("reverie.server.providers")
    assert result["current"] == "offline"
    by_id = {p["id"]: p for p in result["providers"]}
    assert list(by_id) == ["offline", "openai", "anthropic", "claude-code-cli", "codex-cli",
                           "gemini-cli"]
    assert by_id["claude-code-cli"]["available"] and by_id["codex-cli"]["available"]
    assert by_id["claude-code-cli"]["path"] == str(bin_dir / "claude")
    assert "counts against your Claude plan" in by_id["claude-code-cli"]["detail"]
    if not by_id["gemini-cli"]["available"]:  # unless a real gemini is installed here
        assert "Not found on PATH" in by_id["gemini-cli"]["detail"]
    await s.close()


async def test_connection_test_through_a_cli_provider(start_server, tmp_path) -> None:
    import os

    from support.fake_agent_cli import install_fake_clis

    bin_dir = tmp_path / "bin"
    install_fake_clis(bin_dir)
    s = await start_server(env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
                           init_options={"provider": "claude-code-cli",
                                         "sessionMemoryEnabled": False, "dreamEnabled": False,
                                         "sleepEnabled": False})
    result = await s.command("reverie.server.testModel")
    assert result["ok"] is True, result
    assert result["tools"] is False and result["streaming"] is False
    assert result["modelReported"] == "claude-sonnet-fake"
    await s.close()


@pytest.mark.parametrize("step", [Step.garbage_stream(), Step.cut_stream("x" * 200),
                                  Step.endless_stream(chunk_delay=0.02)])
async def test_a_misbehaving_stream_ends_the_dream_with_a_reason_and_memory_untouched(
    start_server, step
) -> None:
    async with FakeLLMServer() as fake:
        fake.set_default(step)
        s = await start_server(init_options=settings(fake, dreamBudgetSeconds=3,
                                                     dreamMaxOutputTokens=1_000_000))
        memory = s.write_memory("MEMORY.md", "# Memory\n")
        before = memory.read_bytes()
        job_id = (await s.command("reverie.server.dream", {}))["jobId"]
        failed = await s.wait_for_event(
            "reverie/jobEvent", lambda e: e["jobId"] == job_id and e["type"] == "error",
            timeout=60)
        reason = str(failed["payload"])
        assert any(words in reason for words in (
            "garbage in the stream", "before the reply was complete", "REVERIE_DREAM_BUDGET"))
        assert memory.read_bytes() == before
        assert not (s.memory_dir / ".consolidate-lock").exists() or \
            (await s.command("reverie.server.lockStatus"))["held"] is False
        await s.close()
