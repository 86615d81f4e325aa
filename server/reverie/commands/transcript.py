"""Parse one agent transcript and print it normalised (or just its stats).

``--json`` prints ``{"session": {...}, "messages": [...], "stats": {...}}``; ``--stats`` prints only
the stats object. Skipped lines are counted, not fatal (exit 0); a missing, unreadable or
directory path exits 1 with a one-line message on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from reverie.cli import CommandError, fail
from reverie.transcripts.access import TranscriptError, check_readable
from reverie.transcripts.claude_stats import claude_stats
from reverie.transcripts.detect import detect_agent


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, help="a transcript file (any supported agent)")
    parser.add_argument("--json", action="store_true", help="print session, messages and stats")
    parser.add_argument("--stats", action="store_true", help="print only the stats as JSON")
    parser.add_argument("--session", dest="session_id", default=None,
                        help="for files holding several sessions (Aider, Kilo Code's "
                             "database): which one (default: the latest)")


def _dump(value: object) -> None:
    try:
        data = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except TypeError as exc:  # a total past 64 bits: thousands of absurd counts added up
        raise CommandError(f"this transcript's figures cannot be printed: {exc}") from None
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.flush()


def stats_of(path: Path, session_id: str | None) -> dict[str, Any]:
    """One streaming pass, no message kept. A Claude Code transcript is counted straight from
    its records (``claude_stats``: no model object, no pydantic); the other agents' go
    through their readers and ``StatsFold``, which ``claude_stats`` is proven equal to."""
    check_readable(path)
    agent = detect_agent(path)
    if agent == "claude-code":
        return claude_stats(path)
    # imported here: the readers and models cost start-up time a Claude transcript never needs
    from reverie.transcripts.reader import TranscriptReader
    from reverie.transcripts.stats import StatsFold

    reader = TranscriptReader(path, agent=agent, session_id=session_id)
    return StatsFold().feed_all(reader).result(reader.session, reader.stats)


def run(args: argparse.Namespace) -> int:
    if args.stats:
        try:
            stats = stats_of(args.path.expanduser(), args.session_id)
        except TranscriptError as exc:
            return fail(str(exc))
        _dump(stats)
        return 0
    # imported here: see ``stats_of``
    from reverie.transcripts.reader import load_transcript
    from reverie.transcripts.stats import transcript_stats

    try:
        transcript = load_transcript(args.path.expanduser(), session_id=args.session_id)
    except TranscriptError as exc:
        return fail(str(exc))
    stats = transcript_stats(transcript)
    if args.json:
        _dump({
            "session": transcript.session.model_dump(mode="json"),
            "messages": [m.model_dump(mode="json") for m in transcript.messages],
            "stats": stats,
        })
        return 0
    session = transcript.session
    lines = [
        f"{session.agent} session {session.id}" + (f" — {session.title}" if session.title else ""),
        f"  cwd: {session.cwd or '?'}  branch: {session.git_branch or '?'}"
        + (f"  parent: {session.parent_session_id}" if session.parent_session_id else ""),
        f"  {stats['messages']} messages, {stats['tool_calls']} tool calls "
        f"({stats['tool_errors']} failed), ~{stats['tokens']} tokens, "
        f"{stats['lines']} lines ({stats['skipped']} skipped)",
    ]
    for message in transcript.messages:
        if message.is_meta:
            continue
        text = " ".join(message.text.split())[:160]
        tools = ", ".join(
            f"{c.name}({c.command or ', '.join(c.file_paths)})".replace("()", "")
            for c in message.tool_calls
        )
        errors = sum(r.is_error for r in message.tool_results)
        detail = text or tools or (f"{len(message.tool_results)} result(s)"
                                   + (f", {errors} error(s)" if errors else ""))
        if text and tools:
            detail += f"  [{tools}]"
        lines.append(f"[{message.role}] {detail}")
    print("\n".join(lines))
    return 0
