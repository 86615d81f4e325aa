"""Finding sessions among many: the pre-compact hook and ``reverie sessions`` at 100,000 sessions.

Builds an agent home with N Codex rollouts of other projects (one ``session_meta`` line each,
spread over day folders as Codex lays them out) plus the real fixture rollout rewritten to
belong to the workspace, in the newest day. Then times, as fresh processes:

- ``pre-compact (codex, no transcript_path)``: ``python -m reverie hook pre-compact`` with the
  Codex-shaped input (``transcript_path: null``), which must find the session by its id;
- ``reverie sessions``: the workspace's session list (reads every rollout's head: Codex keeps
  no per-project folders).

The home is kept in ``tests/bench/.data/discovery-N`` and reused.

Run: ``nice .venv/bin/python tests/bench/discovery.py [--sessions 100000] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = next((ROOT / "tests" / "fixtures" / "transcripts" / "codex" / "codemie-code")
               .rglob("*11-26-55*.jsonl"))
SESSION = "019e1625-789d-76c0-80ab-3724b5ddb799"


def build(home: Path, count: int, workspace: Path) -> None:
    sessions = home / ".codex" / "sessions"
    marker = home / ".built"
    if marker.exists():
        return
    for i in range(count):
        day = sessions / "2025" / f"{1 + i % 12:02d}" / f"{1 + (i // 12) % 28:02d}"
        if i % 5000 == 0:
            print(f"  building {i}/{count}", file=sys.stderr)
        day.mkdir(parents=True, exist_ok=True)
        sid = f"00000000-0000-4000-8000-{i:012d}"
        record = {"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta",
                  "payload": {"id": sid, "cwd": f"/elsewhere/project-{i % 500}"}}
        (day / f"rollout-2025-01-01T00-00-00-{sid}.jsonl").write_text(json.dumps(record) + "\n")
    newest = sessions / "2026" / "05" / "11"
    newest.mkdir(parents=True, exist_ok=True)
    text = FIXTURE.read_text().replace("/Users/Sample_User/repos/codemie-ai/codemie-code",
                                       str(workspace))
    (newest / FIXTURE.name).write_text(text)
    marker.touch()


def timed(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    return time.perf_counter() - started, done.stderr.decode()[-300:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base = ROOT / "tests" / "bench" / ".data" / f"discovery-{args.sessions}"
    home, workspace = base / "home", base / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    build(home, args.sessions, workspace)
    with tempfile.TemporaryDirectory() as data:
        env = {**os.environ, "REVERIE_AGENT_HOME": str(home), "REVERIE_DATA_DIR": data,
               "REVERIE_PROVIDER": "offline"}
        hook = json.dumps({"session_id": SESSION, "transcript_path": None,
                           "cwd": str(workspace), "hook_event_name": "PreCompact",
                           "trigger": "manual"}).encode()
        cases = {
            "python -c pass": ([sys.executable, "-c", "pass"], b""),
            "pre-compact (codex, no transcript_path)":
                ([sys.executable, "-m", "reverie", "hook", "pre-compact"], hook),
            "reverie sessions":
                ([sys.executable, "-m", "reverie", "sessions", "--workspace", str(workspace),
                  "--json"], b""),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, (argv, stdin) in cases.items():
                seconds, err = timed(argv, env, stdin)
                times[name].append(seconds)
                if "pre-compact" in name and "notes " not in err:
                    print(f"  pre-compact did not update the notes: {err}", file=sys.stderr)
    try:
        from reverie.transcripts.lookup import find_session_file
    except ImportError:  # the code before the lookup (PYTHONPATH=an older tree)
        def find_session_file(home: Path, session_id: str, workspace: Path) -> Path | None:
            return None
    lookup = time.perf_counter()
    found = find_session_file(home, SESSION, workspace)
    lookup = time.perf_counter() - lookup
    scan = time.perf_counter()
    from reverie.transcripts.discovery import discover_sessions

    refs = discover_sessions(workspace, home)
    scan = time.perf_counter() - scan
    assert found is None or any(ref.path == found for ref in refs)
    print(f"in one process: the session by its file name {lookup:.3f} s; "
          f"by discovery (every head read) {scan:.3f} s")
    print(f"{args.sessions} Codex rollouts of other projects + 1 of the workspace")
    print(f"{'case':42s} {'median s':>9s} {'max s':>7s}")
    for name, values in times.items():
        print(f"{name:42s} {statistics.median(values):9.3f} {max(values):7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
