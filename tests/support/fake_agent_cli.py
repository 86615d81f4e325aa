"""Fake ``claude`` / ``codex`` / ``gemini`` executables that print the real CLIs' output shapes.

``install_fake_clis(bin_dir)`` writes three executables into ``bin_dir`` (put it first on
``PATH``) that run this module. Each reads the prompt from stdin, answers it like a model would
in the structured no-tools form (the whole notes, memory changes, a sleep summary or the
consolidated memory, recognised by the schema named in the prompt) and prints it the way that
CLI prints it: Claude Code's ``--output-format json`` result object, Codex's ``exec --json``
JSONL events, Gemini CLI's ``--output-format json`` object.

``FAKE_CLI_MODE`` picks a behaviour: ``ok`` (default), ``stream`` (Claude ``stream-json``
events), ``is_error``, ``malformed``, ``banner`` (ANSI banners around the JSON), ``prose``,
``outside`` (memory changes to a path outside the memory dir), ``hang``, ``exit`` (exit 2 with
an error on stderr), ``quota``, ``logged_out``. ``FAKE_CLI_LOG`` names a JSON-lines file that
gets ``{"cli", "argv", "cwd", "stdin"}`` per run, and ``FAKE_CLI_PID_FILE`` a file that gets the
process id (so a test can check a hung CLI was killed).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

from .paths import TESTS_DIR

TOPIC = ("---\nname: CLI provider\ndescription: learned through a coding-agent CLI\n"
         "type: project\n---\n\nThe build runs with `make test` (seen through the CLI).\n")


def install_fake_clis(bin_dir: Path, python: str = sys.executable) -> dict[str, Path]:
    """Write ``claude``, ``codex`` and ``gemini`` into ``bin_dir``; returns their paths."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    made = {}
    for name in ("claude", "codex", "gemini"):
        path = bin_dir / name
        # the server (or an editor) runs this with its own environment: the script itself puts
        # tests/ on PYTHONPATH, so `support` is found whoever starts it
        path.write_text("#!/bin/sh\n"
                        f"PYTHONPATH={shlex.quote(str(TESTS_DIR))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
                        "export PYTHONPATH\n"
                        f'exec {shlex.quote(python)} -m support.fake_agent_cli {name} "$@"\n')
        path.chmod(0o755)
        made[name] = path
    return made


def answer(prompt: str, mode: str) -> str:
    """What the 'model' replies to ``prompt`` (JSON text in the form the prompt asks for)."""
    if mode == "prose":
        return "I had a look and everything seems fine; nothing to add."
    if '"title":"NotesRewrite"' in prompt or "NotesRewrite" in prompt:
        match = re.search(r"(/\S+/session_memory\.md)", prompt)
        notes = Path(match.group(1)).read_text() if match else "# Notes\n"
        return json.dumps({"notes": notes.rstrip("\n") + "\n- updated through the CLI\n"})
    if "MemoryChanges" in prompt:
        path = "../../outside.md" if mode == "outside" else "cli-provider.md"
        return json.dumps({"summary": "Recorded how the build runs.", "changes": [
            {"path": path, "content": TOPIC},
            {"path": "MEMORY.md",
             "content": "# Memory\n\n- [CLI provider](cli-provider.md) - how the build runs\n"},
        ]})
    if "ConversationSummary" in prompt:
        return json.dumps({"summary": "Worked on the build through the CLI.",
                           "memory_candidates": [{"key": "build", "value": "run make test"}]})
    if "ConsolidatedMemory" in prompt:
        return json.dumps({"entries": [{
            "key": "build", "title": "Build", "description": "how to build",
            "type": "project", "content": "Run `make test`.",
            "recorded": date.today().isoformat()}]})
    return "OK"


def render(cli: str, text: str, mode: str) -> str:
    """``text`` printed as ``cli`` prints a headless answer."""
    usage = {"input_tokens": 1200, "output_tokens": max(1, len(text) // 4)}
    if cli == "claude":
        result: dict[str, Any] = {
            "type": "result", "subtype": "success", "is_error": mode == "is_error",
            "duration_ms": 900, "num_turns": 1,
            "result": "Credit balance too low" if mode == "quota" else
            ("API Error: overloaded" if mode == "is_error" else text),
            "session_id": "0d2c9a1e-fake", "total_cost_usd": 0.0123,
            "usage": {**usage, "cache_read_input_tokens": 300,
                      "cache_creation_input_tokens": 0},
            "modelUsage": {"claude-sonnet-fake": {}},
        }
        if mode == "quota":
            result["is_error"] = True
        if mode == "stream":
            stream = [
                {"type": "system", "subtype": "init", "session_id": "0d2c9a1e-fake",
                 "model": "claude-sonnet-fake", "tools": []},
                {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}},
                result,
            ]
            return "\n".join(json.dumps(e) for e in stream) + "\n"
        return json.dumps(result) + "\n"
    if cli == "codex":
        events: list[dict[str, Any]] = [
            {"type": "thread.started", "thread_id": "th_fake"}, {"type": "turn.started"}]
        if mode == "quota":
            events += [{"type": "error", "message": "You've hit your usage limit."},
                       {"type": "turn.failed", "error": {"message": "usage limit"}}]
        elif mode == "is_error":
            events += [{"type": "turn.failed", "error": {"message": "model overloaded"}}]
        else:
            events += [
                {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning",
                                                    "text": "thinking"}},
                {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message",
                                                    "text": text}},
                {"type": "turn.completed", "usage": {"input_tokens": 1200,
                                                     "cached_input_tokens": 200,
                                                     "output_tokens": usage["output_tokens"]}}]
        return "\n".join(json.dumps(e) for e in events) + "\n"
    body: dict[str, Any] = {"response": text, "stats": {"models": {"gemini-fake": {
        "api": {"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 800},
        "tokens": {"prompt": 1200, "candidates": usage["output_tokens"], "total": 1300,
                   "cached": 100, "thoughts": 0, "tool": 0}}}}}
    if mode in ("is_error", "quota"):
        body = {"error": {"type": "ApiError", "message": "Quota exceeded for requests"
                          if mode == "quota" else "internal error", "code": 1}}
    return json.dumps(body, indent=2) + "\n"


def _record_claude_session(home: Path, prompt: str) -> None:
    cwd = os.getcwd()
    slug = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    session = f"fake-{os.getpid()}-{int(time.time() * 1000)}"
    path = home / ".claude" / "projects" / slug / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"type": "user", "sessionId": session, "cwd": cwd, "uuid": session,
              "timestamp": "2026-12-01T10:00:00Z",
              "message": {"role": "user", "content": prompt[:200]}}
    path.write_text(json.dumps(record) + "\n")


def main(argv: list[str]) -> int:
    cli = argv[0]
    mode = os.environ.get("FAKE_CLI_MODE", "ok")
    prompt = sys.stdin.read()
    log = os.environ.get("FAKE_CLI_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"cli": cli, "argv": argv[1:], "cwd": os.getcwd(),
                                 "stdin": prompt}) + "\n")
    home = os.environ.get("FAKE_CLI_AGENT_HOME")
    if home and cli == "claude":  # the real CLI records its own session like any other
        _record_claude_session(Path(home), prompt)
    pid_file = os.environ.get("FAKE_CLI_PID_FILE")
    if pid_file:
        Path(pid_file).write_text(str(os.getpid()))
    if mode == "logged_out":  # what each real CLI prints with no login (Claude Code 2.1.197,
        # Gemini CLI 0.61.0 observed; Codex fails later, on its first connection)
        if cli == "claude":
            sys.stdout.write(json.dumps({
                "type": "result", "subtype": "success", "is_error": True, "num_turns": 1,
                "result": "Not logged in · Please run /login", "session_id": "x",
                "total_cost_usd": 0, "usage": {"input_tokens": 0, "output_tokens": 0}}) + "\n")
            return 1
        if cli == "gemini":
            sys.stdout.write(json.dumps({"session_id": "x", "error": {
                "type": "Error", "code": 41, "message": "Please set an Auth method in your "
                "~/.gemini/settings.json or specify one of the following environment variables "
                "before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI"}}, indent=2) + "\n")
            return 41
        sys.stderr.write("Error: not logged in. Please run codex login\n")
        return 1
    if mode == "hang":
        while True:
            time.sleep(1)
    if mode == "exit":
        sys.stderr.write("fatal: something broke inside the CLI\n")
        return 2
    if mode == "malformed":
        sys.stdout.write('{"type": "result", "result": "trunc')
        return 0
    out = render(cli, answer(prompt, mode), mode)
    if mode == "banner":
        out = f"\x1b[1;32m✔ {cli} ready\x1b[0m\n{out}\x1b[2mbye\x1b[0m\n"
    sys.stdout.write(out)
    if cli == "gemini" and mode in ("is_error", "quota"):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
