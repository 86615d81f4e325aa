"""Re-reading a Kilo Code session in its database after Kilo wrote one more part.

A ``kilo.db`` built by Kilo's own schema (``tests/support/kilo.py``) holds one session of
``--turns`` requests, each answered by eight tool calls with 2 KB outputs (the default: about
20 MB, 5,000 messages). In the same run:

- ``fresh``: a whole read of the session (``kilo_tail.load``), the median of ``--repeats``;
- ``change``: a ``KiloDbTail`` that has read it reads it again after Kilo adds a text part to
  the last reply (what the watcher does on a WAL change), the median.

Each change's report is checked: exactly the new message, nothing else (no duplicate, no
loss). Target: ``change / fresh <= 2``.

Run: ``.venv/bin/python tests/bench/kilo_reread.py [--turns 300] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reverie.transcripts.kilo_tail import KiloDbTail, load
from support.kilo import KiloDb


@dataclass
class Report:
    megabytes: float
    messages: int
    fresh_ms: float
    change_ms: float
    ratio: float
    wrong_reports: int


def build(folder: Path, turns: int) -> tuple[KiloDb, str, str]:
    db = KiloDb(folder / "kilo.db")
    sid = db.session("/w", title="A long session")
    last = ""
    db.conn.execute("BEGIN")
    for turn in range(turns):
        now = db.tick()
        user, reply = f"msg_{turn:05d}a", f"msg_{turn:05d}b"
        rows = [(user, {"role": "user", "time": {"created": now}, "agent": "code",
                        "model": {"providerID": "kilo", "modelID": "m"}}),
                (reply, {"role": "assistant", "time": {"created": now}, "parentID": user,
                         "modelID": "m", "providerID": "kilo", "mode": "code", "agent": "code",
                         "path": {"cwd": "/w", "root": "/w"}, "cost": 0,
                         "tokens": {"input": 0, "output": 0, "reasoning": 0,
                                    "cache": {"read": 0, "write": 0}}})]
        for mid, info in rows:
            db.conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                            (mid, sid, now, now, json.dumps(info)))
        parts = [(user, {"type": "text", "text": f"Please look at module {turn} " * 5})]
        parts += [(reply, {"type": "tool", "callID": f"c{turn}_{n}", "tool": "read",
                           "state": {"status": "completed", "input": {"filePath": f"/w/m{n}.py"},
                                     "output": "x" * 2000, "title": "", "metadata": {},
                                     "time": {"start": now, "end": now + 5}}})
                  for n in range(8)]
        for n, (mid, data) in enumerate(parts):
            db.conn.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                            (f"prt_{turn:05d}_{n}", mid, sid, now, now, json.dumps(data)))
        last = reply
    db.conn.execute("COMMIT")
    return db, sid, last


def run(turns: int = 300, repeats: int = 5) -> Report:
    with tempfile.TemporaryDirectory() as tmp:
        db, sid, last = build(Path(tmp), turns)
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
        fresh: list[float] = []
        messages = 0
        for _ in range(repeats):
            began = time.perf_counter()
            _session, read, _stats = load(db.path, sid)
            fresh.append(time.perf_counter() - began)
            messages = len(read)
        tail = KiloDbTail(db.path)
        tail.read_changed(lambda row: True)
        change: list[float] = []
        wrong = 0
        for n in range(repeats):
            part = db.part(sid, last, {"type": "text", "text": f"and one more thing ({n})"})
            began = time.perf_counter()
            changes = tail.read_changed(lambda row: True)
            change.append(time.perf_counter() - began)
            got = [m.id for c in changes for m in c.messages]
            wrong += 0 if got == [part] else 1
        db.close()
    fresh_ms = statistics.median(fresh) * 1000
    change_ms = statistics.median(change) * 1000
    return Report(round(size / 1e6, 1), messages, round(fresh_ms, 1), round(change_ms, 1),
                  round(change_ms / fresh_ms, 2), wrong)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    report = run(args.turns, args.repeats)
    print(json.dumps(asdict(report), indent=2))
    return 0 if report.wrong_reports == 0 and report.ratio <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
