"""Small server pieces: command arguments, the popup filter, the log handler, pushed chats, the
conversation cache and diagnostic ranges."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from reverie.lsp.digests import ConversationDigests
from reverie.lsp.features.diagnostics import line_range, notes_diagnostics
from reverie.lsp.features.pushed import append_pushed
from reverie.lsp.handlers import parse_args
from reverie.lsp.log import ClientLogHandler
from reverie.lsp.popups import Popups
from reverie.lsp.protocol import AppendMessagesParams, CancelJobArgs, DreamArgs, SleepArgs
from reverie.transcripts.digest import pushed_session_digests as read_pushed


def test_command_arguments_one_object_or_none():
    assert parse_args(DreamArgs, ()) == DreamArgs()
    assert parse_args(DreamArgs, (None,)) == DreamArgs()
    args = parse_args(DreamArgs, ({"extraContext": "focus", "logsMode": True},))
    assert args.extra_context == "focus" and args.logs_mode is True
    assert str(parse_args(SleepArgs, ({"date": "2026-11-28"},)).date) == "2026-11-28"
    with pytest.raises(JsonRpcInvalidParams, match="single JSON object"):
        parse_args(DreamArgs, ("a", "b"))
    with pytest.raises(JsonRpcInvalidParams, match="extraContxt"):
        parse_args(DreamArgs, ({"extraContxt": "typo"},))
    with pytest.raises(JsonRpcInvalidParams, match="jobId"):
        parse_args(CancelJobArgs, ({},))
    with pytest.raises(JsonRpcInvalidParams, match="date"):
        parse_args(SleepArgs, ({"date": "yesterday"},))


async def test_log_handler_buffers_then_forwards_from_any_thread():
    handler = ClientLogHandler(logging.INFO)
    log = logging.getLogger("reverie.test.loghandler")
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        log.info("before the client is ready")
        log.debug("below the level")
        sent: list[types.LogMessageParams] = []
        handler.connect(sent.append, asyncio.get_running_loop())
        assert [p.message for p in sent] == ["reverie.test.loghandler: before the client is ready"]
        thread = threading.Thread(target=log.warning, args=("from a worker",))
        thread.start()
        thread.join()
        await asyncio.sleep(0.01)  # handed to the loop
        assert sent[-1].type == types.MessageType.Warning
        assert sent[-1].message.endswith("from a worker")
    finally:
        log.removeHandler(handler)


def test_popups_follow_the_policy_and_do_not_repeat():
    popups = Popups(repeat_seconds=600.0)
    assert not popups.admit("info", "hello", "onError", now=0.0)
    assert popups.admit("error", "boom", "onError", now=0.0)
    assert not popups.admit("error", "boom", "onError", now=599.0)  # same text: once per 600 s
    assert popups.admit("error", "other", "onError", now=1.0)
    assert popups.admit("error", "boom", "onError", now=600.0)
    assert popups.admit("warning", "w", "onWarning", now=0.0)
    assert not popups.admit("info", "i", "onWarning", now=0.0)
    assert popups.admit("info", "i", "always", now=0.0)
    # a configuration problem gets through any policy but "off"
    assert popups.admit("warning", "bad setting", "onError", force=True, now=0.0)
    assert not popups.admit("error", "x", "off", force=True, now=0.0)
    # an unknown policy behaves as the default (onError)
    assert popups.admit("error", "y", "bogus", now=0.0)
    assert not popups.admit("warning", "z", "bogus", now=0.0)


def test_pushed_chat_becomes_a_private_redacted_transcript(tmp_path: Path):
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    secret = "ghp_" + "0123456789abcdefABCDEF0123456789abcd"
    pushed = AppendMessagesParams.model_validate(
        {
            "sessionId": "chat/1",
            "cwd": str(workspace),
            "messages": [
                {"role": "user", "text": f"use {secret}", "id": "m1"},
                {
                    "role": "assistant",
                    "content": "ok",
                    "id": "m2",
                    "usage": {"inputTokens": 50, "outputTokens": 2},
                },
            ],
        }
    )
    path = append_pushed(home, pushed)
    assert path.name == "chat_1.jsonl" and path.stat().st_mode & 0o777 == 0o600
    assert secret not in path.read_text()
    ref, _session, messages = read_pushed(path)
    assert ref.session_id == "chat/1" and ref.cwd == str(workspace)
    assert [m.id for m in messages] == ["m1", "m2"] and messages[1].usage_tokens == 52
    append_pushed(home, pushed.model_copy(update={"messages": pushed.messages[:1]}))
    assert len(read_pushed(path)[2]) == 3  # appended, not replaced


def test_pushed_title_and_tool_arguments_are_redacted(tmp_path: Path):
    """The sidecar's title and the tool arguments (nested values, kept valid JSON) too."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    password = "Hx7" + "-qLm2-vB9t"
    pushed = AppendMessagesParams.model_validate({
        "sessionId": "chat-2", "cwd": str(workspace),
        "title": f"connect to postgres://app:{password}@db/app",
        "messages": [{"role": "assistant", "text": "running", "id": "m1", "toolCalls": [{
            "name": "shell", "id": "c1",
            "input": {"env": {"DB_PASSWORD": password}, "argv": [f"--password={password}"],
                      "note": 'say "hi"'}}]}]})
    path = append_pushed(home, pushed)
    sidecar = path.with_suffix(".json")
    assert password not in sidecar.read_text() and password not in path.read_text()
    assert "[REDACTED:url_password]" in sidecar.read_text()
    record = json.loads(path.read_text().splitlines()[0])
    arguments = json.loads(record["tool_calls"][0]["function"]["arguments"])
    assert arguments == {"env": {"DB_PASSWORD": "[REDACTED:env]"},
                         "argv": ["--password=[REDACTED:password]"], "note": 'say "hi"'}


async def test_conversation_cache_reports_only_new_messages(tmp_path: Path):
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    pushed = AppendMessagesParams.model_validate(
        {
            "sessionId": "c",
            "cwd": str(workspace),
            "messages": [{"role": "user", "text": "one", "id": "1"}],
        }
    )
    path = append_pushed(home, pushed)
    ref, session, digests = read_pushed(path)
    cache = ConversationDigests(asyncio.to_thread, size=1)
    conversation, fresh = await cache.extend(ref, session, digests)
    assert fresh and [d.id for d in conversation.digests()] == ["1"]
    conversation, fresh = await cache.extend(ref, session, digests)  # the same report again
    assert not fresh and len(conversation.digests()) == 1
    # the messages themselves are read from the transcript only when asked for
    assert [m.text for m in await conversation.messages()] == ["one"]
    append_pushed(home, AppendMessagesParams.model_validate({
        "sessionId": "c", "cwd": str(workspace),
        "messages": [{"role": "assistant", "text": "two", "id": "2"}]}))
    _ref, _session, more = read_pushed(path)
    conversation, fresh = await cache.extend(ref, session, more)
    assert fresh and [d.id for d in conversation.digests()] == ["1", "2"]


def test_line_range_and_notes_diagnostics():
    lines = ["# Memory", "", "- [a](a.md) - x"]
    whole = line_range(lines, 2)
    assert (whole.start.character, whole.end.character) == (0, len(lines[2]))
    part = line_range(lines, 2, 4, 8)
    assert (part.start.line, part.start.character, part.end.character) == (2, 4, 8)
    assert line_range(lines, 99).start.line == 2  # clamped to the document
    found = notes_diagnostics("# Session Title\nnot italic\n", None)
    assert found and all(d.source == "reverie" for d in found)
