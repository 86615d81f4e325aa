"""No planted secret reaches a file, the history, a log or a model request.

80 secrets of 45 kinds (``support.secrets``, the security review's structure forms included) are
planted in every position of every agent format: Claude Code (``summary`` title, user text,
assistant text, thinking, ``tool_use`` input incl. nested edits, ``tool_result``), Codex
rollouts (user / assistant messages, reasoning summaries, function call arguments and output,
event messages), Gemini CLI JSON (user / model text, thoughts, tool call args and results) and
Aider markdown (prompts, replies, tool output). Then the real CLI runs notes for every session,
a manual dream and the sleep cycle, on the offline engine and on the OpenAI and Anthropic
clients against the fake provider, whose model echoes what it read and adds a raw secret of its
own to everything it writes (a confused or hostile model). Codex and Claude Code are connected
first, so the agents' files get the memory copy. Afterwards nothing under the data directory,
the agents' files, no decompressed object of the history repository, no line of the DEBUG log
and no request body the fake provider received may hold any secret (whole, or its first or
middle twelve characters).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo

from reverie.config import claude_project_slug
from support.fake_llm import FakeLLMServer, FakeRequest, Step, ToolCallSpec
from support.secrets import Planted, planted_secrets

PLANTED = planted_secrets(17)
NOW = datetime.now(UTC).replace(microsecond=0)


def _probes(secret: str) -> list[str]:
    """What must not be found: each line of the secret, and the start and the middle of a long
    one (a line shortened before redaction can keep part of a secret)."""
    probes = []
    for line in secret.split("\n"):
        probes.append(line)
        if len(line) >= 16:
            middle = len(line) // 2
            probes += [line[:12], line[middle - 6:middle + 6]]
    return probes


PROBES = {probe: planted.kind for planted in PLANTED for probe in _probes(planted.secret)}


def _leaks(text: str) -> list[str]:
    return sorted({f"{kind}:{probe}" for probe, kind in PROBES.items() if probe in text})


# --- the corpus ---------------------------------------------------------------------------


def _ts(minutes: int) -> str:
    return (NOW - timedelta(minutes=90 - minutes)).isoformat().replace("+00:00", "Z")


def _spread(positions: int) -> Iterator[list[Planted]]:
    """The planted secrets dealt round-robin over ``positions`` positions (every position
    gets some, every secret lands somewhere)."""
    hands: list[list[Planted]] = [[] for _ in range(positions)]
    for index, planted in enumerate(PLANTED):
        hands[index % positions].append(planted)
    yield from hands


def _text(hand: list[Planted], lead: str) -> str:
    return lead + "\n" + "\n".join(p.text for p in hand)


def write_claude(home: Path, workspace: Path) -> list[Path]:
    folder = home / ".claude" / "projects" / claude_project_slug(str(workspace))
    folder.mkdir(parents=True)
    paths = []
    titles = [p for p in PLANTED if "\n" not in p.text and len(p.text) < 70][:3]
    for n, title in enumerate(titles):
        sid = f"0000000{n}-aaaa-4bbb-8ccc-dddddddddddd"
        user, reply, command, edit, write, result, thinking = _spread(7)
        base = {"sessionId": sid, "cwd": str(workspace), "version": "2.0.64",
                "gitBranch": "main", "isSidechain": False, "userType": "external"}
        records: list[dict[str, Any]] = [
            {"type": "summary", "summary": f"Deploy fix {title.text}", "leafUuid": f"u{n}-6"},
            {**base, "type": "user", "uuid": f"u{n}-1", "parentUuid": None,
             "timestamp": _ts(1),
             "message": {"role": "user", "content": _text(user, "Please fix the deploy")}},
            {**base, "type": "assistant", "uuid": f"u{n}-2", "parentUuid": f"u{n}-1",
             "timestamp": _ts(2), "message": {
                 "id": f"msg{n}", "role": "assistant", "model": "claude-sonnet-4-5",
                 "content": [
                     {"type": "thinking", "thinking": _text(thinking, "Config first."),
                      "signature": "c2ln"},
                     {"type": "text", "text": _text(reply, "I'll check the config.")},
                     {"type": "tool_use", "id": f"t{n}a", "name": "Bash",
                      "input": {"command": " && ".join(p.text.replace("\n", " ")
                                                       for p in command),
                                "description": "deploy"}},
                     {"type": "tool_use", "id": f"t{n}b", "name": "MultiEdit",
                      "input": {"file_path": str(workspace / "settings.py"), "edits": [
                          {"old_string": "x = 1", "new_string": p.text} for p in edit]}},
                     {"type": "tool_use", "id": f"t{n}c", "name": "Write",
                      "input": {"file_path": str(workspace / ".env"),
                                "content": _text(write, "# env")}},
                 ],
                 "usage": {"input_tokens": 12000, "output_tokens": 400}}},
            {**base, "type": "user", "uuid": f"u{n}-3", "parentUuid": f"u{n}-2",
             "timestamp": _ts(3), "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": f"t{n}a",
                  "content": _text(result, "deployed:")},
                 {"type": "tool_result", "tool_use_id": f"t{n}b", "content": "edited"},
                 {"type": "tool_result", "tool_use_id": f"t{n}c", "content": "written"}]}},
            {**base, "type": "assistant", "uuid": f"u{n}-4", "parentUuid": f"u{n}-3",
             "timestamp": _ts(4), "message": {
                 "id": f"msg{n}b", "role": "assistant", "model": "claude-sonnet-4-5",
                 "content": [{"type": "text", "text": "Done: the deploy works now."}],
                 "usage": {"input_tokens": 13000, "output_tokens": 50}}},
        ]
        path = folder / f"{sid}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def write_codex(home: Path, workspace: Path) -> Path:
    day = home / ".codex" / "sessions" / f"{NOW:%Y}" / f"{NOW:%m}" / f"{NOW:%d}"
    day.mkdir(parents=True)
    sid = "019b7f94-51b4-7593-922e-ba12b5b73b52"
    user, reply, args, output, event, reasoning = _spread(6)
    call = {"command": ["bash", "-lc", " ; ".join(p.text.replace("\n", " ") for p in args)],
            "workdir": str(workspace)}
    records = [
        {"timestamp": _ts(0), "type": "session_meta", "payload": {
            "id": sid, "timestamp": _ts(0), "cwd": str(workspace), "originator": "codex_cli",
            "cli_version": "0.77.0"}},
        {"timestamp": _ts(1), "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": _text(user, "set up the database")}]}},
        {"timestamp": _ts(1), "type": "event_msg", "payload": {
            "type": "user_message", "message": _text(event, "set up the database"),
            "images": []}},
        {"timestamp": _ts(2), "type": "response_item", "payload": {
            "type": "reasoning", "content": None,
            "summary": [{"type": "summary_text", "text": _text(reasoning, "**Plan**")}]}},
        {"timestamp": _ts(2), "type": "response_item", "payload": {
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": _text(reply, "Configuring.")}]}},
        {"timestamp": _ts(3), "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "arguments": json.dumps(call),
            "call_id": "call_1"}},
        {"timestamp": _ts(4), "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "call_1",
            "output": json.dumps({"output": _text(output, "ok"),
                                  "metadata": {"exit_code": 0}})}},
    ]
    path = day / f"rollout-{NOW:%Y-%m-%dT%H-%M-%S}-{sid}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def write_gemini(home: Path, workspace: Path) -> Path:
    digest = hashlib.sha256(str(workspace).encode()).hexdigest()
    chats = home / ".gemini" / "tmp" / digest / "chats"
    chats.mkdir(parents=True)
    user, reply, args, result, thoughts = _spread(5)
    session = {
        "sessionId": "5b959dae-8655-4cd1-b10f-720b8c336ea2", "projectHash": digest,
        "startTime": _ts(0), "lastUpdated": _ts(5),
        "messages": [
            {"id": "m1", "timestamp": _ts(1), "type": "user",
             "content": _text(user, "rotate the keys")},
            {"id": "m2", "timestamp": _ts(2), "type": "gemini",
             "content": _text(reply, "Rotating."), "model": "gemini-2.5-pro",
             "thoughts": [{"subject": "Rotating keys", "timestamp": _ts(2),
                           "description": _text(thoughts, "Which keys?")}],
             "toolCalls": [{
                 "id": "run_shell_command-1", "name": "run_shell_command",
                 "args": {"command": " ; ".join(p.text.replace("\n", " ") for p in args),
                          "description": "rotate"},
                 "result": [{"functionResponse": {
                     "id": "run_shell_command-1", "name": "run_shell_command",
                     "response": {"output": _text(result, "rotated")}}}],
                 "status": "success", "timestamp": _ts(3)}]},
        ],
    }
    path = chats / f"session-{NOW:%Y-%m-%dT%H-%M}-5b959dae.json"
    path.write_text(json.dumps(session, indent=2), encoding="utf-8")
    return path


def write_aider(workspace: Path) -> Path:
    prompt, reply, output = _spread(3)
    started = (NOW - timedelta(minutes=30)).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    lines = [f"# aider chat started at {started}", "",
             f"> aider --model sonnet {workspace}", "> Aider v0.86.1", ""]
    for planted in prompt:
        lines += [f"#### {planted.text.replace(chr(10), ' ')}  ", ""]
    lines += [_text(reply, "Here is the change."), ""]
    lines += [f"> {line}  " for p in output for line in p.text.split("\n")] + [""]
    path = workspace / ".aider.chat.history.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- the fake model ---------------------------------------------------------------------------


class EchoModel:
    """A model that repeats what it read into everything it writes, plus a raw secret (one it
    could only have made up or remembered: the write path must catch it too)."""

    def __init__(self) -> None:
        self.n = 0

    def raw_secret(self) -> str:
        self.n += 1
        return PLANTED[self.n % len(PLANTED)].text

    def __call__(self, request: FakeRequest) -> Step:
        body = request.body
        schema = json.dumps(body.get("response_format") or body.get("tools") or "")
        # what it read, minus markdown headers (a notes edit must keep the sections unique)
        heard = "\n".join(line for line in request.all_text[-4000:].splitlines()
                          if not line.lstrip().startswith("#"))
        if "memory_candidates" in schema:
            return Step.json_reply({
                "summary": heard[:1500] + "\n" + self.raw_secret(),
                "memory_candidates": [
                    {"key": "deploy-notes", "value": heard[:800] + "\n" + self.raw_secret()},
                    {"key": "db", "value": self.raw_secret()}]})
        if '"entries"' in schema:
            return Step.json_reply({"entries": [{
                "key": "deploy", "title": "Deploy " + self.raw_secret()[:60],
                "description": "How deploys work " + self.raw_secret()[:80],
                "type": "project", "content": heard[:2000] + "\n" + self.raw_secret(),
                "recorded": NOW.date().isoformat()}]})
        tools = set(request.tool_names)
        if not tools or request.turn > 3:
            return Step.reply("done " + heard[:500] + " " + self.raw_secret())
        if request.turn == 1 and "read_file" in tools:
            paths = re.findall(r"(/[^\s\"'`]+\.(?:jsonl|json|md))", request.all_text)
            if paths:
                return Step.tool("read_file", file_path=paths[-1])
        if request.turn <= 2 and "grep" in tools:
            return Step.tool("grep", pattern="PASSWORD|api_key|token", path=".")
        italic = re.findall(r"^_[^\n]{10,200}_$", request.all_text, re.MULTILINE)
        if "edit_file" in tools and italic and request.turn == 1:
            return Step.tool_calls(ToolCallSpec(name="edit_file", arguments={
                "file_path": "session_memory.md", "old_string": italic[0],
                "new_string": italic[0] + "\n" + heard[:1200] + "\n" + self.raw_secret()}))
        if "write_file" in tools and request.turn <= 3:
            return Step.tool("write_file", file_path="deploy.md",
                             content="# Deploy\n\n" + heard[:1500] + "\n" + self.raw_secret())
        return Step.reply("done " + self.raw_secret())


# --- running the jobs -------------------------------------------------------------------------


def _run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "reverie", "--log-level", "debug", *args],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode in (0, 1, 2), (args, done.returncode, done.stderr[-3000:])
    return done.stdout + done.stderr


def _history_objects(root: Path) -> Iterator[tuple[str, bytes]]:
    for git_dir in {p.parent for p in root.rglob("objects") if (p.parent / "HEAD").exists()}:
        repo = Repo(str(git_dir))
        try:
            for sha in repo.object_store:
                yield f"{git_dir}:{sha.decode()}", repo.object_store[sha].as_raw_string()
        finally:
            repo.close()


@pytest.fixture
def corpus(reverie_env: dict[str, Path], tmp_path: Path) -> dict[str, Any]:
    workspace = tmp_path / "shop"
    workspace.mkdir()
    home = reverie_env["agent_home"]
    sessions = [*write_claude(home, workspace), write_codex(home, workspace),
                write_gemini(home, workspace), write_aider(workspace)]
    quiet = (NOW - timedelta(minutes=20)).timestamp()  # finished sessions, not live ones
    for session in sessions:
        os.utime(session, (quiet, quiet))
    return {"workspace": workspace, "home": home, "sessions": sessions, **reverie_env}


ENGINES = ["offline", "openai", "anthropic"]


@pytest.mark.parametrize("engine", ENGINES)
def test_no_secret_leaves_redaction(corpus: dict[str, Any], engine: str) -> None:
    assert len(PLANTED) >= 60 and len({p.kind for p in PLANTED}) >= 25
    workspace: Path = corpus["workspace"]
    env = {**os.environ, "REVERIE_SESSION_MEMORY_INIT_TOKENS": "10",
           "REVERIE_DREAM_MIN_SESSIONS": "1", "REVERIE_DREAM_MIN_HOURS": "0"}
    logs: list[str] = []
    server = None
    if engine != "offline":
        server = FakeLLMServer(fallback=EchoModel()).start()
        env.update(REVERIE_PROVIDER=engine, REVERIE_BASE_URL=server.base_url,
                   REVERIE_API_KEY="test-key-not-a-secret", REVERIE_MODEL="fake-model")
    # agents connected first: the memory refresh writes their files after every apply
    logs.append(_run(["connect", "codex", "--scope", "personal", "--workspace", str(workspace)],
                     env, workspace))
    logs.append(_run(["connect", "claude-code", "--scope", "project", "--workspace",
                      str(workspace)], env, workspace))
    try:
        for session in corpus["sessions"]:
            logs.append(_run(["notes", str(session), "--force", "--workspace", str(workspace),
                              "--json"], env, workspace))
        logs.append(_run(["dream", "--manual", "--workspace", str(workspace), "--json"],
                         env, workspace))
        logs.append(_run(["sleep", "--workspace", str(workspace), "--json"], env, workspace))
        logs.append(_run(["history", "--workspace", str(workspace), "--json"], env, workspace))
    finally:
        if server is not None:
            server.stop()

    found: dict[str, list[str]] = {}
    written = [p for p in corpus["data"].rglob("*") if p.is_file()]
    written += [p for p in workspace.rglob("*") if p.is_file() and p not in corpus["sessions"]]
    agents_md = corpus["home"] / ".codex" / "AGENTS.md"
    assert agents_md.is_file() and (workspace / "CLAUDE.md").is_file()
    written.append(agents_md)  # the agents' files: loaded by every session
    assert any(p.name.endswith(".md") for p in written), "the jobs wrote nothing"
    for path in written:
        leaks = _leaks(path.read_bytes().decode("utf-8", "replace"))
        if leaks:
            found[str(path)] = leaks
    objects = 0
    for name, raw in _history_objects(corpus["data"]):
        objects += 1
        leaks = _leaks(raw.decode("utf-8", "replace"))
        if leaks:
            found[name] = leaks
    for n, log in enumerate(logs):
        leaks = _leaks(log)
        if leaks:
            found[f"log of command {n}"] = leaks
    if server is not None:
        for n, request in enumerate(server.requests):
            leaks = _leaks(request.body)
            if leaks:
                found[f"request {n} {request.path}"] = leaks
    assert not found, json.dumps(found, indent=1)[:6000]

    # and the run was real: every session got notes, the secrets flowed through them (markers
    # show where), the dream and sleep recorded history, sleep wrote its journal, the model
    # was asked and the logs are at DEBUG
    assert objects > 0, "no history was recorded"
    notes = [p for p in written if p.name == "session_memory.md"]
    assert len(notes) == len(corpus["sessions"]), notes
    assert "[REDACTED:" in "".join(p.read_text(encoding="utf-8") for p in notes)
    assert any("journal" in str(p) for p in written), "sleep wrote no journal"
    assert " DEBUG " in "".join(logs)
    if server is not None:
        paths = [r.path for r in server.model_requests()]
        assert len(paths) >= 10, paths
