"""Run the transcript layer over every transcript under a folder and say how it went.

    .venv/bin/python tests/bench/corpus.py DIR [--json] [--no-tail]

For each file that looks like a transcript (``*.jsonl``, ``*.json``, ``*.messages``,
``.aider.chat.history.md``) it detects the agent, parses it (every run of an Aider history),
folds the ``--stats`` figures, and re-reads it through ``TranscriptTail`` in small appends to
check that live reading says what a whole read says. It prints one row per agent (files,
sessions, messages, tool calls, lines, skipped, ignored, tail mismatches, crashes, seconds) and
the first problems. A crash is any exception out of the transcript layer: 0 is the bar, and the
exit status is 1 when there is one. CI runs it over ``tests/fixtures/transcripts``; point it at
your own ``~/.claude/projects`` or ``~/.codex/sessions`` to check the parsers on real data (it
only reads).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from reverie.transcripts.reader import (
    TranscriptError,
    TranscriptReader,
    detect_agent,
    load_sessions,
)
from reverie.transcripts.stats import StatsFold
from reverie.transcripts.tail import TranscriptTail

SUFFIXES = (".jsonl", ".json", ".messages")
#: appends per file when checking live reading (each a slice of the file)
TAIL_STEPS = 7


@dataclass
class AgentRow:
    files: int = 0
    sessions: int = 0
    messages: int = 0
    tool_calls: int = 0
    lines: int = 0
    skipped: int = 0
    ignored: int = 0
    tail_mismatches: int = 0
    crashes: int = 0
    seconds: float = 0.0


@dataclass
class CorpusReport:
    agents: dict[str, AgentRow] = field(default_factory=dict)
    unknown: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def crashes(self) -> int:
        return sum(row.crashes for row in self.agents.values())


def transcript_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()
                  and (p.suffix in SUFFIXES or p.name.endswith(".aider.chat.history.md")))


def _tail_messages(path: Path, agent: str, scratch: Path) -> list[str]:
    """Message ids as a live reader sees them when the file grows in ``TAIL_STEPS`` appends."""
    data = path.read_bytes()
    scratch.write_bytes(b"")
    tail = TranscriptTail(scratch, agent=agent)  # type: ignore[arg-type]
    ids: list[str] = []
    step = max(1, len(data) // TAIL_STEPS)
    for end in [*range(step, len(data), step), len(data)]:
        scratch.write_bytes(data[:end])
        for message in tail.read_new():
            if message.id in ids:  # a revising format re-reports a changed message
                ids.remove(message.id)
            ids.append(message.id)
    return ids


def run(root: Path, check_tail: bool = True, scratch_dir: Path | None = None) -> CorpusReport:
    report = CorpusReport()
    rows: dict[str, AgentRow] = defaultdict(AgentRow)
    scratch_root = scratch_dir or Path(__file__).resolve().parent / ".data"
    scratch_root.mkdir(parents=True, exist_ok=True)
    for path in transcript_files(root):
        agent = detect_agent(path)
        if agent is None:
            report.unknown += 1
            continue
        row = rows[agent]
        row.files += 1
        started = time.perf_counter()
        try:
            if agent == "aider":
                runs = load_sessions(path)
                row.sessions += len(runs)
                for transcript in runs:
                    row.messages += len(transcript.messages)
                    row.tool_calls += sum(len(m.tool_calls) for m in transcript.messages)
                if runs:
                    row.lines += runs[0].stats.lines
                    row.skipped += runs[0].stats.skipped
                    row.ignored += runs[0].stats.ignored
            else:
                reader = TranscriptReader(path, agent=agent)
                fold = StatsFold()
                ids: list[str] = []
                for message in reader:
                    fold.feed(message)
                    ids.append(message.id)
                row.sessions += 1
                row.messages += fold.messages
                row.tool_calls += fold.tool_calls
                row.lines += reader.stats.lines
                row.skipped += reader.stats.skipped
                row.ignored += reader.stats.ignored
                if check_tail and path.suffix != ".json":
                    # the same last folders as the file: some formats are told apart by them
                    # (the Copilot extension's event log is a log in ``transcripts/``)
                    scratch = scratch_root / "corpus-tail" / Path(*path.parts[-3:])
                    scratch.parent.mkdir(parents=True, exist_ok=True)
                    try:
                        live = _tail_messages(path, agent, scratch)
                    finally:
                        scratch.unlink(missing_ok=True)
                    if live != ids:
                        row.tail_mismatches += 1
                        report.problems.append(f"{path}: live reading gave {len(live)} messages,"
                                               f" a whole read {len(ids)}")
        except TranscriptError as exc:  # a clear, expected refusal (unreadable, a directory)
            report.problems.append(f"{path}: {exc}")
        except Exception as exc:  # the point is to count them
            row.crashes += 1
            where = traceback.extract_tb(exc.__traceback__)[-1]
            report.problems.append(f"{path}: CRASH {type(exc).__name__}: {exc} "
                                   f"({Path(where.filename).name}:{where.lineno})")
        row.seconds += time.perf_counter() - started
    report.agents = dict(sorted(rows.items()))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a folder of transcripts (searched recursively)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-tail", action="store_true", help="skip the live-reading check")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        print(f"corpus: {args.root} is not a folder", file=sys.stderr)
        return 2
    report = run(args.root, check_tail=not args.no_tail)
    if args.json:
        print(json.dumps({"agents": {k: asdict(v) for k, v in report.agents.items()},
                          "unknown": report.unknown, "crashes": report.crashes,
                          "problems": report.problems}, indent=2))
    else:
        header = ("agent", "files", "sessions", "messages", "tool calls", "lines", "skipped",
                  "ignored", "tail diff", "crashes", "seconds")
        print("  ".join(f"{h:>11}" for h in header))
        for agent, row in report.agents.items():
            cells = (agent, row.files, row.sessions, row.messages, row.tool_calls, row.lines,
                     row.skipped, row.ignored, row.tail_mismatches, row.crashes,
                     f"{row.seconds:.2f}")
            print("  ".join(f"{c:>11}" for c in cells))
        print(f"not transcripts: {report.unknown}; crashes: {report.crashes}")
        for problem in report.problems[:20]:
            print(f"  {problem}")
    return 1 if report.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
