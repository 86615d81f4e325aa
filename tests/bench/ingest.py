"""Transcript ingest benchmark: parse throughput, append cost, streaming memory.

Generates a synthetic Claude Code transcript with the record mix of the real fixtures (user
prompts, assistant responses split over several lines sharing ``message.id``, tool uses and
results with ``toolUseResult``, hook progress, file-history snapshots, system records) and
measures, in the same run:

- full parse + normalise throughput (``TranscriptReader``) as a ratio to a bare
  ``json.loads``-per-line loop over the same file (target >= 0.5);
- the median cost of ``TranscriptTail.read_new`` after a ~1 KB append to a 1 MB and to the big
  file (target <= 1 ms for both, i.e. independent of file size);
- peak RSS of a subprocess that streams the big file (target <= 150 MB).

Run: ``.venv/bin/python tests/bench/ingest.py`` (``--size-mb``, ``--data-dir``; data goes to
``tests/bench/.data/``, which git ignores, and is removed unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

from reverie.transcripts.reader import TranscriptReader
from reverie.transcripts.tail import TranscriptTail

DATA_DIR = Path(__file__).resolve().parent / ".data"
CWD = "/home/dev/projects/shop"
WORDS = ("the build fails because the fixture path is resolved twice so we normalise it once "
         "and add a regression test for the session cache before touching the parser").split()
TOOLS = ("Read", "Edit", "Bash", "Grep", "Write", "Glob", "Task", "WebFetch")


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _base(rng: random.Random, session: str, parent: str | None, ts: float) -> dict[str, object]:
    return {
        "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": CWD,
        "sessionId": session, "version": "2.1.39", "gitBranch": "main",
        "slug": "bright-quiet-lake", "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(ts)),
    }


def _tool_input(rng: random.Random, name: str) -> dict[str, object]:
    path = f"{CWD}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
    if name == "Bash":
        return {"command": f"pytest -q tests/{rng.choice(WORDS)}", "description": "run tests"}
    if name == "Edit":
        return {"file_path": path, "old_string": _text(rng, 30), "new_string": _text(rng, 35)}
    if name == "Write":
        return {"file_path": path, "content": _text(rng, 200)}
    if name in ("Grep", "Glob"):
        return {"pattern": rng.choice(WORDS), "path": CWD}
    if name == "Task":
        return {"subagent_type": "Explore", "description": "look around", "prompt": _text(rng, 40)}
    if name == "WebFetch":
        return {"url": "https://example.invalid/docs", "prompt": _text(rng, 10)}
    return {"file_path": path}


def _split_response(rng: random.Random, session: str, parent: str | None, ts: float,
                    msg_id: str, blocks: list[dict[str, object]],
                    usage: dict[str, object]) -> Iterator[dict[str, object]]:
    """One API response written over several lines sharing ``message.id``, one block each
    (each line's parent is the line before it)."""
    for block in blocks:
        rec = _base(rng, session, parent, ts) | {
            "type": "assistant", "requestId": f"req_{msg_id}",
            "message": {"model": "claude-opus-4-6", "id": msg_id, "type": "message",
                        "role": "assistant", "content": [block], "stop_reason": None,
                        "usage": usage},
        }
        parent = str(rec["uuid"])
        yield rec


def _tool_result(rng: random.Random, session: str, parent: str, ts: float, call_id: str,
                 output: str, failed: bool, structured: object) -> dict[str, object]:
    """The user record carrying one tool's result, as Claude Code writes it."""
    return _base(rng, session, parent, ts) | {
        "type": "user",
        "message": {"role": "user", "content": [
            {"tool_use_id": call_id, "type": "tool_result",
             "content": f"Exit code 1\n{output}" if failed else output,
             "is_error": failed}]},
        "toolUseResult": f"Error: Exit code 1\n{output}" if failed else structured,
        "sourceToolAssistantUUID": parent,
    }


def _reply(rng: random.Random, session: str, parent: str | None, ts: float,
           words: int) -> dict[str, object]:
    """The assistant's closing text reply of a turn."""
    return _base(rng, session, parent, ts) | {
        "type": "assistant",
        "message": {"model": "claude-opus-4-6", "id": f"msg_{rng.getrandbits(64):016x}",
                    "type": "message", "role": "assistant",
                    "content": [{"type": "text", "text": _text(rng, words)}],
                    "usage": {"input_tokens": 3, "output_tokens": 200}},
    }


def records(seed: int = 1) -> Iterator[dict[str, object]]:
    """An endless, realistic turn sequence (one user prompt, then 2-8 tool rounds, a reply)."""
    rng = random.Random(seed)
    session = str(uuid.UUID(int=rng.getrandbits(128)))
    ts = 1_770_000_000.0
    parent: str | None = None
    yield {"type": "summary", "summary": "Synthetic benchmark session", "leafUuid": "x"}
    while True:
        ts += 30
        prompt = _base(rng, session, parent, ts) | {
            "type": "user", "message": {"role": "user", "content": _text(rng, rng.randint(5, 60))},
        }
        parent = str(prompt["uuid"])
        yield {"type": "file-history-snapshot", "messageId": parent, "isSnapshotUpdate": False,
               "snapshot": {"messageId": parent, "trackedFileBackups": {}, "timestamp": "x"}}
        yield prompt
        for _ in range(rng.randint(2, 8)):
            ts += 5
            msg_id = f"msg_{rng.getrandbits(64):016x}"
            usage = {"input_tokens": rng.randint(1, 50), "output_tokens": rng.randint(20, 900),
                     "cache_creation_input_tokens": rng.randint(0, 3000),
                     "cache_read_input_tokens": rng.randint(10_000, 120_000),
                     "service_tier": "standard"}
            blocks: list[dict[str, object]] = [
                {"type": "thinking", "thinking": _text(rng, rng.randint(20, 150)),
                 "signature": "sig" * 40},
                {"type": "text", "text": _text(rng, rng.randint(5, 80))},
            ]
            name = rng.choice(TOOLS)
            call_id = f"toolu_{rng.getrandbits(64):016x}"
            blocks.append({"type": "tool_use", "id": call_id, "name": name,
                           "input": _tool_input(rng, name)})
            for rec in _split_response(rng, session, parent, ts, msg_id, blocks, usage):
                parent = str(rec["uuid"])
                yield rec
            for _ in range(rng.randint(0, 3)):
                yield _base(rng, session, parent, ts) | {
                    "type": "progress", "toolUseID": call_id, "parentToolUseID": call_id,
                    "data": {"type": "hook_progress", "hookEvent": "PostToolUse",
                             "hookName": "PostToolUse:" + name, "command": "lint.sh"},
                }
            failed = rng.random() < 0.08
            output = _text(rng, rng.randint(10, 600))
            result = _tool_result(rng, session, parent, ts + 1, call_id, output, failed,
                                  {"stdout": output, "stderr": "", "interrupted": False,
                                   "isImage": False})
            parent = str(result["uuid"])
            yield result
        ts += 5
        reply = _reply(rng, session, parent, ts, rng.randint(20, 200))
        parent = str(reply["uuid"])
        yield reply
        yield _base(rng, session, parent, ts) | {"type": "system", "subtype": "turn_duration",
                                                 "durationMs": 12000, "isMeta": False}


CODE = ("def normalise(path, cache):", "    if path in cache:", "        return cache[path]",
        "    resolved = os.path.realpath(path)", "    cache[path] = resolved",
        "    return resolved",
        "class SessionCache:", "    def __init__(self, limit=128):", "        self.items = {}",
        "import os", "from pathlib import Path", "# keep the fixture path stable across runs")


def _numbered(rng: random.Random, lines: int) -> str:
    """A ``Read`` result: numbered source lines, as Claude Code shows a file."""
    start = rng.randint(1, 400)
    return "\n".join(f"{start + i:>6}\u2192{rng.choice(CODE)}" for i in range(lines))


def tool_heavy_records(seed: int = 1) -> Iterator[dict[str, object]]:
    """A tool-heavy session (issue 15): per prompt 10-25 tool rounds, most responses a bare
    tool call, multi-line results (numbered file reads, test output, grep hits) with Claude
    Code's structured ``toolUseResult`` beside them (file content, edit patches)."""
    rng = random.Random(seed)
    session = str(uuid.UUID(int=rng.getrandbits(128)))
    ts = 1_770_000_000.0
    parent: str | None = None
    while True:
        ts += 30
        prompt = _base(rng, session, parent, ts) | {
            "type": "user", "message": {"role": "user", "content": _text(rng, rng.randint(5, 40))},
        }
        parent = str(prompt["uuid"])
        yield prompt
        for _ in range(rng.randint(10, 25)):
            ts += 3
            msg_id = f"msg_{rng.getrandbits(64):016x}"
            usage = {"input_tokens": rng.randint(1, 9), "output_tokens": rng.randint(20, 300),
                     "cache_read_input_tokens": rng.randint(20_000, 150_000)}
            name = rng.choice(("Read", "Read", "Bash", "Edit", "Grep", "Read", "Bash"))
            call_id = f"toolu_{rng.getrandbits(64):016x}"
            blocks: list[dict[str, object]] = []
            if rng.random() < 0.3:
                blocks.append({"type": "text", "text": _text(rng, rng.randint(5, 30))})
            blocks.append({"type": "tool_use", "id": call_id, "name": name,
                           "input": _tool_input(rng, name)})
            for rec in _split_response(rng, session, parent, ts, msg_id, blocks, usage):
                parent = str(rec["uuid"])
                yield rec
            failed = name == "Bash" and rng.random() < 0.15
            structured: object
            if name == "Read":
                lines = rng.randint(20, 140)
                output = _numbered(rng, lines)
                structured = {"type": "text", "file": {
                    "filePath": f"{CWD}/src/{rng.choice(WORDS)}.py",
                    "content": "\n".join(rng.choice(CODE) for _ in range(lines)),
                    "numLines": lines, "startLine": 1, "totalLines": lines + 40}}
            elif name == "Bash":
                output = "\n".join(
                    f"tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)} "
                    + ("FAILED" if failed and i == 3 else "PASSED") for i in range(30))
                structured = {"stdout": output, "stderr": "", "interrupted": False,
                              "isImage": False}
            elif name == "Edit":
                old, new = _text(rng, 30), _text(rng, 35)
                output = f"The file {CWD}/src/x.py has been updated. Here's the result:\n" + \
                    _numbered(rng, 12)
                structured = {"filePath": f"{CWD}/src/x.py", "oldString": old, "newString": new,
                              "originalFile": "\n".join(rng.choice(CODE) for _ in range(80)),
                              "structuredPatch": [{"oldStart": 10, "oldLines": 3, "newStart": 10,
                                                   "newLines": 4,
                                                   "lines": [f"-{old}", f"+{new}", " x"]}],
                              "userModified": False, "replaceAll": False}
            else:
                output = "\n".join(f"{CWD}/src/{rng.choice(WORDS)}.py:{rng.randint(1, 900)}:"
                                   f"{rng.choice(CODE)}" for _ in range(rng.randint(5, 40)))
                structured = {"mode": "content", "numFiles": 7, "filenames": [],
                              "content": output, "numLines": 20}
            result = _tool_result(rng, session, parent, ts + 1, call_id, output, failed,
                                  structured)
            parent = str(result["uuid"])
            yield result
        ts += 5
        reply = _reply(rng, session, parent, ts, rng.randint(20, 120))
        parent = str(reply["uuid"])
        yield reply


MIXES = {"standard": records, "tool-heavy": tool_heavy_records}


def generate(path: Path, size_bytes: int, seed: int = 1, mix: str = "standard") -> int:
    """Write at least ``size_bytes`` of transcript to ``path`` in one record ``mix``; returns
    the line count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = 0
    written = 0
    with path.open("wb") as handle:
        buffer: list[bytes] = []
        for record in MIXES[mix](seed):
            line = orjson.dumps(record) + b"\n"
            buffer.append(line)
            written += len(line)
            lines += 1
            if len(buffer) >= 2000:
                handle.write(b"".join(buffer))
                buffer.clear()
            if written >= size_bytes:
                break
        handle.write(b"".join(buffer))
    return lines


def bare_json_loop(path: Path) -> float:
    """Seconds for the reference: ``json.loads`` on every line, nothing else."""
    started = time.perf_counter()
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                json.loads(line)
    return time.perf_counter() - started


def full_parse(path: Path) -> tuple[float, int]:
    """Seconds to stream-parse and normalise the whole file, and the messages produced."""
    started = time.perf_counter()
    count = sum(1 for _ in TranscriptReader(path, agent="claude-code"))
    return time.perf_counter() - started, count


def stats_cli(path: Path) -> float:
    """Seconds for ``reverie transcript --stats PATH`` in a fresh process (start-up included)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "reverie", "transcript", "--stats", str(path)],
                   capture_output=True, check=True, timeout=3600)
    return time.perf_counter() - started


def append_cost(path: Path, rounds: int, seed: int = 2) -> list[float]:
    """Seconds per ``read_new`` after appending one ~1 KB record, ``rounds`` times."""
    tail = TranscriptTail(path, agent="claude-code")
    tail.read_new()  # prime: read the existing file once
    rng = random.Random(seed)
    costs: list[float] = []
    with path.open("ab") as handle:
        for _ in range(rounds):
            record = _base(rng, "bench", None, 1_770_000_000.0) | {
                "type": "user", "message": {"role": "user", "content": _text(rng, 110)[:700]},
            }
            handle.write(orjson.dumps(record) + b"\n")
            handle.flush()
            started = time.perf_counter()
            got = tail.read_new()
            costs.append(time.perf_counter() - started)
            # (plus, once, the held usage of a response the generated file was cut inside)
            assert len([m for m in got if not m.is_meta]) == 1, got
    return costs


def peak_rss_mb(path: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """(peak RSS streaming ``path``, peak RSS of the same interpreter doing nothing) in MB.

    Each is measured in a fresh subprocess with ``resource.getrusage``. Call it before this
    process grows: on Linux a child's ``ru_maxrss`` starts at its parent's peak at fork time.
    """
    def run(mode: str) -> tuple[float, float]:
        out = subprocess.run([sys.executable, __file__, f"--rss-child={mode}", str(path)],
                             capture_output=True, check=True, timeout=3600)
        maxrss, hwm = out.stdout.decode().split()
        return float(maxrss), float(hwm)
    return run("stream"), run("idle")


def _rss_child(mode: str, path: Path) -> None:
    if mode == "stream":
        reader = TranscriptReader(path, agent="claude-code")
        count = sum(1 for _ in reader)
        assert count > 0
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux
    hwm_kb = 0.0
    try:  # Linux: the peak of this process image alone (ru_maxrss may include the parent's)
        status = Path("/proc/self/status").read_text()
        hwm_kb = float(next(ln.split()[1] for ln in status.splitlines()
                            if ln.startswith("VmHWM:")))
    except (OSError, StopIteration):
        hwm_kb = kb
    sys.stdout.write(f"{kb / 1024:.1f} {hwm_kb / 1024:.1f}\n")


@dataclass
class IngestReport:
    size_mb: float
    lines: int
    messages: int
    json_loop_s: float
    parse_s: float
    parse_ratio: float
    parse_mb_s: float
    append_small_median_ms: float
    append_big_median_ms: float
    small_file_mb: float
    peak_rss_mb: float
    idle_rss_mb: float
    peak_hwm_mb: float
    idle_hwm_mb: float
    #: the tool-heavy mix (issue 15): streaming parse, and ``reverie transcript --stats``
    tool_heavy_json_s: float = 0.0
    tool_heavy_parse_s: float = 0.0
    tool_heavy_parse_ratio: float = 0.0
    tool_heavy_stats_cli_s: float = 0.0
    tool_heavy_stats_cli_ratio: float = 0.0


def run(size_mb: float, data_dir: Path, rounds: int = 200, small_mb: float = 1.0,
        measure_rss: bool = True, repeats: int = 3) -> IngestReport:
    data_dir.mkdir(parents=True, exist_ok=True)
    big = data_dir / "big-session.jsonl"
    small = data_dir / "small-session.jsonl"
    lines = generate(big, int(size_mb * 1024 * 1024))
    generate(small, int(small_mb * 1024 * 1024), seed=3)
    size = big.stat().st_size
    # first, while this process is still small: Linux children inherit the parent's peak RSS
    rss, idle = peak_rss_mb(big) if measure_rss else ((0.0, 0.0), (0.0, 0.0))
    bare_json_loop(big)  # warm the page cache so both loops read from memory
    # best of `repeats`, interleaved, so a busy neighbour on a shared machine skews neither side
    json_runs: list[float] = []
    parse_runs: list[float] = []
    messages = 0
    for _ in range(repeats):
        json_runs.append(bare_json_loop(big))
        seconds, messages = full_parse(big)
        parse_runs.append(seconds)
    json_s, parse_s = min(json_runs), min(parse_runs)
    heavy = data_dir / "tool-heavy-session.jsonl"
    generate(heavy, int(size_mb * 1024 * 1024), mix="tool-heavy")
    bare_json_loop(heavy)
    heavy_json: list[float] = []
    heavy_parse: list[float] = []
    heavy_cli: list[float] = []
    for _ in range(repeats):
        heavy_json.append(bare_json_loop(heavy))
        heavy_parse.append(full_parse(heavy)[0])
        heavy_cli.append(stats_cli(heavy))
    heavy.unlink()
    small_costs = append_cost(small, rounds)
    big_costs = append_cost(big, rounds)
    return IngestReport(
        size_mb=round(size / 1024 / 1024, 1), lines=lines, messages=messages,
        json_loop_s=round(json_s, 2), parse_s=round(parse_s, 2),
        parse_ratio=round(json_s / parse_s, 2), parse_mb_s=round(size / 1024 / 1024 / parse_s, 1),
        append_small_median_ms=round(statistics.median(small_costs) * 1000, 3),
        append_big_median_ms=round(statistics.median(big_costs) * 1000, 3),
        small_file_mb=round(small.stat().st_size / 1024 / 1024, 1),
        peak_rss_mb=rss[0], idle_rss_mb=idle[0], peak_hwm_mb=rss[1], idle_hwm_mb=idle[1],
        tool_heavy_json_s=round(min(heavy_json), 2), tool_heavy_parse_s=round(min(heavy_parse), 2),
        tool_heavy_parse_ratio=round(min(heavy_json) / min(heavy_parse), 2),
        tool_heavy_stats_cli_s=round(min(heavy_cli), 2),
        tool_heavy_stats_cli_ratio=round(min(heavy_json) / min(heavy_cli), 2),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=200.0)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--rss-child", help=argparse.SUPPRESS)
    parser.add_argument("path", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child:
        _rss_child(args.rss_child, args.path)
        return 0
    try:
        report = run(args.size_mb, args.data_dir, args.rounds)
    finally:
        if not args.keep:
            for name in ("big-session.jsonl", "small-session.jsonl",
                         "tool-heavy-session.jsonl"):
                (args.data_dir / name).unlink(missing_ok=True)
    r = report
    print(f"file: {r.size_mb} MB, {r.lines} lines, {r.messages} messages")
    print(f"json.loads per line: {r.json_loop_s:.2f} s   reverie parse+normalise: {r.parse_s:.2f} s"
          f"   ({r.parse_mb_s} MB/s; best of 3 each)")
    print(f"throughput ratio (reverie / json.loads loop): {r.parse_ratio:.2f}   target >= 0.6")
    print(f"tool-heavy mix: json.loads {r.tool_heavy_json_s:.2f} s,"
          f" parse {r.tool_heavy_parse_s:.2f} s (ratio {r.tool_heavy_parse_ratio:.2f}),"
          " `reverie transcript --stats`"
          f" {r.tool_heavy_stats_cli_s:.2f} s (ratio {r.tool_heavy_stats_cli_ratio:.2f})"
          "   target >= 0.8 (--stats)")
    print(f"1 KB append: {r.small_file_mb} MB file {r.append_small_median_ms:.3f} ms median,"
          f" {r.size_mb} MB file {r.append_big_median_ms:.3f} ms median   target <= 1 ms both")
    print(f"peak RSS streaming {r.size_mb} MB: getrusage {r.peak_rss_mb:.1f} MB,"
          f" VmHWM {r.peak_hwm_mb:.1f} MB (interpreter + imports alone: {r.idle_rss_mb:.1f} /"
          f" {r.idle_hwm_mb:.1f} MB)   target <= 150 MB")
    print(json.dumps(asdict(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
