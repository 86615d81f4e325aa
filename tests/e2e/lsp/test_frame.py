"""The server frame over stdio: start-up, settings, logging, command arguments, errors."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

pytestmark = pytest.mark.e2e


async def test_initialize_and_status(start_server, workspace):
    s = await start_server()
    assert s.initialize_seconds < 5  # the real figure is measured by tests/bench/lsp.py
    status = await s.command("reverie.server.status")
    assert status["workspaceFolders"] == [str(workspace.resolve())]
    assert status["provider"] == "offline"
    assert status["offline"] is True
    assert status["runningJobs"] == []
    assert status["tokensToday"]["inputTokens"] == 0
    assert status["sessionsTracked"] == 0
    assert status["currentSession"] is None
    # the same command with one empty object argument (VS Code's shape)
    again = await s.command("reverie.server.status", {})
    assert again["pid"] == status["pid"]


async def test_invalid_setting_falls_back_with_one_message(start_server):
    s = await start_server(
        init_options={"reverie": {"sleepTime": "25:99", "dreamMinHours": 2}},
    )
    await s.wait_for(lambda: s.client.messages, what="showMessage")
    messages = [m.message for m in s.client.messages]
    assert len(messages) == 1, messages
    assert "reverie.sleepTime" in messages[0]
    assert '"25:99"' in messages[0] and '"03:00"' in messages[0]
    await s.wait_for(
        lambda: any("reverie.sleepTime" in m.message for m in s.client.log_messages),
        what="the same text in window/logMessage",
    )


async def test_configuration_pull_overrides_initialization_options(start_server):
    s = await start_server(
        init_options={"showNotifications": "always", "provider": "offline"},
        configuration={"provider": "bogus", "model": "m-1"},
    )
    status = await s.command("reverie.server.status")
    # the pulled value is invalid: the layer below (initializationOptions) applies
    assert status["provider"] == "offline"
    assert status["model"] == "m-1"
    await s.wait_for(
        lambda: any("reverie.provider" in m.message for m in s.client.messages),
        what="invalid provider message",
    )
    # a change notification makes the server pull again
    s.client.set_configuration({"model": "m-2"}, section="reverie")
    s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    async def model() -> str:
        return (await s.command("reverie.server.status"))["model"]

    for _ in range(100):
        if await model() == "m-2":
            break
    assert await model() == "m-2"
    assert {"methods": ["workspace/didChangeConfiguration"]} in s.events(
        "client/registerCapability"
    )


async def test_logs_reach_the_client_not_stdout(start_server):
    s = await start_server(init_options={"logLevel": "debug"})
    await s.command("reverie.server.status")
    # start-up records are buffered and flushed to window/logMessage once initialised
    await s.wait_for(
        lambda: any(m.message.startswith("reverie.") for m in s.client.log_messages),
        what="a reverie log record",
    )
    assert s.client.error is None  # anything non-JSON-RPC on stdout would have broken the client


async def test_bad_arguments_are_invalid_params(start_server):
    s = await start_server()
    with pytest.raises(JsonRpcException) as info:
        await s.command("reverie.server.cancelJob", {"jobId": "x", "bogus": 1})
    assert "bogus" in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await s.command("reverie.server.cancelJob")
    assert "jobId" in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await s.command("reverie.server.status", 1, 2)
    assert "single JSON object" in str(info.value)
    # the server keeps serving
    result = await s.command("reverie.server.cancelJob", {"jobId": "dream-99"})
    assert result == {"jobId": "dream-99", "cancelled": False, "message": "no running job dream-99"}
