"""Re-reading a rewritten editor session: a 5 MB Copilot Chat session, rewritten in place.

VS Code rewrites a chat session's ``.json`` document whole on every change (and compacts its
``.jsonl`` log into one line every 1024 entries). The session is grown from the fixture's
requests (new request ids, same content) to the target size; then, in the same run:

- ``fresh``: a whole read (``load_transcript``) of the file, the median of ``--repeats``;
- ``rewrite``: a ``TranscriptTail`` that has read the file reads it again after VS Code-style
  rewrites (the last response grows by a part, then a new request arrives), the median;
- ``compaction``: the same session as a ``.jsonl`` log whose tail has read it, replaced by one
  ``kind: 0`` line (VS Code's compaction): what it costs and that it reports nothing.

Each rewrite's report is checked against a whole read: every new or changed message reported,
nothing else (no duplicate, no loss). Target: ``rewrite / fresh <= 2``.

Run: ``.venv/bin/python tests/bench/editor_rewrite.py [--size-mb 5] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from reverie.transcripts.reader import load_transcript
from reverie.transcripts.tail import TranscriptTail

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "copilot-chat"
           / "source-types" / "chatSessions" / "3f8e2b7c-9a41-4d6e-b0c5-7e1d2a9f4b68.json")


@dataclass
class Report:
    size_mb: float
    requests: int
    messages: int
    fresh_ms: float
    rewrite_ms: float
    compaction_ms: float
    ratio: float
    compaction_ratio: float
    reported_per_rewrite: float
    duplicates: int
    lost: int


def grow(target_bytes: int) -> dict[str, Any]:
    """The fixture session's requests repeated (fresh ids) until the document is big enough."""
    base = json.loads(FIXTURE.read_text())
    requests: list[dict[str, Any]] = []
    size = 0
    n = 0
    while size < target_bytes:
        for request in base["requests"]:
            clone = copy.deepcopy(request)
            clone["requestId"] = f"{request['requestId']}-{n}"
            clone["responseId"] = f"{request.get('responseId', 'r')}-{n}"
            for part in clone["response"]:
                if isinstance(part, dict) and "toolCallId" in part:
                    part["toolCallId"] = f"{part['toolCallId']}-{n}"
            requests.append(clone)
            size += len(json.dumps(clone))
            n += 1
    return {**base, "requests": requests}


def _write_in_place(path: Path, data: bytes) -> None:
    with path.open("r+b") as handle:  # VS Code's writeFile: truncate and write, same inode
        handle.truncate(0)
        handle.write(data)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _check(tail_reports: list[Any], before: list[Any], after: list[Any]) -> tuple[int, int]:
    """(duplicates, lost) of one re-read against the two whole reads."""
    old = {m.id: m.model_dump_json() for m in before}
    expected = {m.id for m in after if old.get(m.id) != m.model_dump_json()}
    got = [m.id for m in tail_reports]
    return len(got) - len(set(got)) + len(set(got) - expected), len(expected - set(got))


def run(size_mb: float = 5.0, repeats: int = 5) -> Report:
    session = grow(int(size_mb * 1024 * 1024))
    with tempfile.TemporaryDirectory(prefix="reverie-bench-") as tmp:
        path = Path(tmp) / "chatSessions" / "s.json"
        path.parent.mkdir()
        data = json.dumps(session).encode()
        path.write_bytes(data)
        fresh: list[float] = []
        for _ in range(repeats):
            began = time.perf_counter()
            whole = load_transcript(path)
            fresh.append(time.perf_counter() - began)
        tail = TranscriptTail(path)
        tail.read_new()
        rewrites: list[float] = []
        reported = duplicates = lost = 0
        before = whole.messages
        extra = json.loads(FIXTURE.read_text())["requests"][1]
        for step in range(repeats):
            changed = copy.deepcopy(session)
            last = changed["requests"][-1]
            last["response"] = [*last["response"], {"value": f" (step {step})"}]
            addition = copy.deepcopy(extra)
            addition["requestId"] = f"new-{step}"
            changed["requests"].append(addition)
            _write_in_place(path, json.dumps(changed).encode())
            began = time.perf_counter()
            got = tail.read_new()
            rewrites.append(time.perf_counter() - began)
            after = load_transcript(path).messages
            dup, miss = _check(got, before, after)
            duplicates += dup
            lost += miss
            reported += len(got)
            session, before = changed, after
        log = Path(tmp) / "chatSessions" / "s.jsonl"
        compactions: list[float] = []
        line = json.dumps({"kind": 0, "v": session}).encode() + b"\n"
        for _ in range(repeats):
            log.write_bytes(line)
            log_tail = TranscriptTail(log)
            log_tail.read_new()
            _write_in_place(log, line)  # the same state, compacted again
            began = time.perf_counter()
            again = log_tail.read_new()
            compactions.append(time.perf_counter() - began)
            duplicates += len(again)
        fresh_ms = _median_ms(fresh)
        return Report(
            size_mb=round(len(data) / 1024 / 1024, 2), requests=len(session["requests"]),
            messages=len(whole.messages), fresh_ms=round(fresh_ms, 1),
            rewrite_ms=round(_median_ms(rewrites), 1),
            compaction_ms=round(_median_ms(compactions), 1),
            ratio=round(_median_ms(rewrites) / fresh_ms, 2),
            compaction_ratio=round(_median_ms(compactions) / fresh_ms, 2),
            reported_per_rewrite=reported / repeats, duplicates=duplicates, lost=lost,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(args.size_mb, args.repeats)
    ok = report.ratio <= 2 and not report.duplicates and not report.lost
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        for key, value in asdict(report).items():
            print(f"{key:>22}: {value}")
        print(f"rewrite / fresh = {report.ratio} (target <= 2): {'ok' if ok else 'MISS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
