"""Try Reverie in seconds, with no API key: sample sessions -> session notes -> dream -> history.

``reverie demo [--keep DIR] [--json]``. Copies the bundled real sample transcripts into a
temporary agent home (working directory rewritten to a temporary workspace), writes session notes
for each with the offline engine, runs a manual dream with the offline engine, and prints where
the notes and the memory are, the new ``MEMORY.md`` with the first facts of each topic it
lists, and the history entry. Nothing outside the
temporary directory (or ``--keep DIR``) is touched.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from reverie.cli import fail

logger = logging.getLogger(__name__)

#: the demo never talks to a hosted model, whatever the user's environment says
_OVERRIDES = {"REVERIE_PROVIDER": "offline", "REVERIE_DREAM_ENABLED": "1"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="build the demo in DIR (kept) instead of a temporary directory")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


async def _notes(settings: Any, workspace: Path) -> list[dict[str, Any]]:
    """Session notes for every sample session (offline engine); empty if that part is absent."""
    try:
        from reverie.session_memory.manager import SessionMemoryManager
    except ImportError:  # pragma: no cover - the session-memory part is not installed
        logger.warning("session notes are not available in this build")
        return []
    from reverie.events import discard_events
    from reverie.transcripts.discovery import discover_sessions
    from reverie.transcripts.reader import TranscriptError, load_transcript

    manager = SessionMemoryManager(settings, discard_events)
    written = []
    for ref in discover_sessions(workspace, settings.agent_home):
        if ref.is_subagent:
            continue
        try:
            transcript = load_transcript(ref.path, session_id=ref.session_id, agent=ref.agent)
        except TranscriptError as exc:
            logger.warning("skipping sample %s: %s", ref.path, exc)
            continue
        result = await manager.extract(transcript.session, transcript.messages, workspace,
                                       force=True)
        written.append({"session_id": ref.session_id, "agent": ref.agent,
                        "notes_path": result.notes_path, "edited": result.edited,
                        "error": result.error})
    await manager.drain(30)
    return written


#: facts shown per topic file: enough to see what the memory holds, short enough to read
TOPIC_LINES = 5


def _topic_heads(memory_dir: Path, index: Path) -> dict[str, list[str]]:
    """The first facts of each topic the index lists (what an agent would load first)."""
    from reverie.memory.store import parse_index, read_topic

    if not index.is_file():
        return {}
    heads: dict[str, list[str]] = {}
    for entry in parse_index(index.read_text("utf-8", errors="replace")).entries:
        path = memory_dir / entry.target_path
        if not entry.is_local or not path.is_file() or entry.target_path in heads:
            continue
        body = read_topic(path).body.splitlines()
        shown: list[str] = []
        bullets = 0
        for line in body:
            if line.startswith(("- ", "* ")):
                bullets += 1
                if bullets > TOPIC_LINES:
                    break
                shown.append(line)
            elif shown and line.startswith((" ", "\t")) and line.strip():
                shown.append(line)  # what a fact replaced ("formerly …") belongs with it
        heads[entry.target_path] = shown or [line for line in body if line.strip()][:TOPIC_LINES]
    return heads


def _build(base: Path) -> dict[str, Any]:
    from reverie.config import Settings
    from reverie.dream.models import DreamRequest
    from reverie.dream.runner import DreamRunner
    from reverie.memory.history import MemoryHistory
    from reverie.samples import install_samples
    from reverie.services.wiring import memory_writer

    agent_home, data_dir, workspace = base / "agent-home", base / "data", base / "workspace"
    for path in (agent_home, data_dir, workspace):
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    settings = Settings(data_dir=data_dir, config_dir=base / "config", agent_home=agent_home,
                        provider="offline")
    installed = install_samples(agent_home, workspace, demo_project=True)
    notes = asyncio.run(_notes(settings, workspace))
    runner = DreamRunner(settings, writer=memory_writer())
    result = asyncio.run(runner.run(DreamRequest(
        workspace=workspace, manual=True,
        extra="Demo run over the bundled sample sessions.",
    )))
    memory_dir = Path(result.memory_dir)
    index = memory_dir / "MEMORY.md"
    runs = MemoryHistory(memory_dir).runs()
    topics = _topic_heads(memory_dir, index)
    return {
        "workspace": str(workspace),
        "agent_home": str(agent_home),
        "transcripts": [str(p) for p in installed],
        "notes": notes,
        "dream": result.as_json(),
        "error": result.error,
        "memory_dir": str(memory_dir),
        "memory_index": index.read_text("utf-8") if index.is_file() else "",
        "memory_topics": topics,
        "history": runs[0] if runs else None,
    }


def run(args: argparse.Namespace) -> int:
    saved = {k: os.environ.get(k) for k in _OVERRIDES}
    os.environ.update(_OVERRIDES)
    try:
        if args.keep is not None:
            base = args.keep.expanduser().resolve()
            base.mkdir(mode=0o700, parents=True, exist_ok=True)
            report = _build(base)
        else:
            base = Path(tempfile.mkdtemp(prefix="reverie-demo-"))
            report = _build(base)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    if report["error"]:
        return fail(f"demo dream failed: {report['error']}")
    history = report["history"]
    if args.json:
        from reverie.commands.history import run_json

        report["history"] = run_json(history) if history else None
        print(json.dumps(report, indent=2))
        return 0
    from reverie.commands.history import format_run

    print(f"Reverie demo in {base}\n")
    print(f"Sample sessions ({len(report['transcripts'])}) copied into {report['agent_home']}")
    print(f"Workspace: {report['workspace']}\n")
    print("Session notes:")
    for item in report["notes"]:
        state = "written" if item["edited"] else (item["error"] or "unchanged")
        print(f"  {item['agent']:<12} {item['notes_path']}  ({state})")
    if not report["notes"]:
        print("  (session notes are not available in this build)")
    print(f"\nMemory dir: {report['memory_dir']}")
    print("\n--- MEMORY.md " + "-" * 50)
    print(report["memory_index"].rstrip() or "(empty: the samples held nothing durable)")
    for name, lines in report["memory_topics"].items():
        print(f"\n--- {name} " + "-" * max(4, 59 - len(name)))
        print("\n".join(lines))
    print("-" * 64)
    print("\nHistory entry:")
    print(format_run(history) if history else "  (no changes recorded)")
    print(f"\nNext: reverie history --workspace {report['workspace']}  |  "
          f"reverie undo --workspace {report['workspace']}")
    print("(the demo set REVERIE_DATA_DIR / REVERIE_AGENT_HOME to the demo directory: "
          f"prefix those commands with REVERIE_DATA_DIR={base / 'data'})")
    return 0
