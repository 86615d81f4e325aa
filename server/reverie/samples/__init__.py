"""Bundled real sample transcripts (see SOURCES.md) and a helper that installs them.

``install_samples`` copies them into an agent home in each agent's usual layout, with their
working directory rewritten to ``workspace`` so that session discovery attributes them to it.
Used by ``reverie demo`` and by tests that need a realistic project.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson

from reverie.config import claude_project_slug
from reverie.fsutil import atomic_write_bytes

SAMPLES_DIR = Path(__file__).resolve().parent


def _records(data: bytes) -> list[dict[str, object]]:
    out = []
    for line in data.splitlines():
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def _old_cwds(records: list[dict[str, object]]) -> set[str]:
    found: set[str] = set()
    for record in records:
        cwd = record.get("cwd")
        payload = record.get("payload")
        if isinstance(payload, dict) and isinstance(payload.get("cwd"), str):
            found.add(payload["cwd"])
        if isinstance(cwd, str):
            found.add(cwd)
    return {c for c in found if c and c != "/"}


def _rewrite(data: bytes, old: set[str], new: str) -> bytes:
    text = data.decode("utf-8")
    for cwd in sorted(old, key=len, reverse=True):
        text = text.replace(cwd, new)
    return text.encode("utf-8")


def install_samples(agent_home: Path, workspace: Path, *, spacing_seconds: float = 60.0,
                    demo_project: bool = False) -> list[Path]:
    """Copy the samples under ``agent_home``; returns the installed transcript paths.

    Files get distinct mtimes (oldest first, ``spacing_seconds`` apart, the last one now) so
    "most recent session" is well defined. ``demo_project`` adds the sessions of one small
    project (``demo-project/``: rules, commands, a fix, a reversed decision) that ``reverie
    demo`` consolidates, so a first run shows what memory keeps.
    """
    workspace = workspace.resolve()
    installed: list[Path] = []
    sources = sorted((SAMPLES_DIR / "claude-code").glob("*.jsonl")) + sorted(
        (SAMPLES_DIR / "codex").glob("*.jsonl")
    )
    if demo_project:
        sources += sorted((SAMPLES_DIR / "demo-project").glob("*/*.jsonl"))
    for source in sources:
        data = source.read_bytes()
        records = _records(data)
        rewritten = _rewrite(data, _old_cwds(records), str(workspace))
        if source.parent.name == "claude-code":
            session_id = next(
                (str(r["sessionId"]) for r in records if isinstance(r.get("sessionId"), str)),
                source.stem,
            )
            target = (agent_home / ".claude" / "projects" / claude_project_slug(str(workspace))
                      / f"{session_id}.jsonl")
        else:
            parts = source.stem.split("T", 1)[0].removeprefix("rollout-").split("-")
            target = agent_home / ".codex" / "sessions" / parts[0] / parts[1] / parts[2] / (
                source.name)
        atomic_write_bytes(target, rewritten)
        installed.append(target)
    now = time.time()
    for position, path in enumerate(installed):
        stamp = now - spacing_seconds * (len(installed) - 1 - position)
        os.utime(path, (stamp, stamp))
    return installed
