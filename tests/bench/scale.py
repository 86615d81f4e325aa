"""Scale benchmark: offline notes, dream and sleep on big sessions and long histories.

Generates Claude Code sessions with the record mix of ``tests/bench/ingest.py`` (a failing tool
result now and then) and variants a heavy user produces (many failed commands, one enormous tool
output, sessions with many sub-agent files), then runs the real CLI in subprocesses:

- ``reverie notes PATH --force`` (offline writer) on sessions of ``--notes-mb`` MB;
- ``reverie dream --manual`` and ``reverie sleep`` (offline) over histories of ``--histories``
  sessions (``--session-mb`` each on average: 1,000 x 1 MB = 1 GB);
- the reference on the same files: ``reverie transcript PATH --stats`` (a session) or the same
  parser over every file of a history in one process, and a bare ``orjson.loads``-per-line read.

For each run: the command's own time (each child imports what the commands need, then times the
CLI's ``main`` and reports it: interpreter start-up and imports, ~0.5 s that do not grow with
the input, are left out), its peak RSS (``VmHWM`` of the child, polled; it is per process image,
so unlike ``ru_maxrss`` it does not start at this process's peak), and "timed out" when it runs
past ``--timeout`` (the timeout then stands in for the time: a floor). Then the growth exponent
of each job: the least-squares slope of log(time) against log(size). Target: <= 1.2. The same
commands on a 20 KB session give the start-up wall time and the RSS of an idle interpreter.

Run: ``nice .venv/bin/python tests/bench/scale.py`` (``--notes-mb 10,50,150``,
``--histories 100,1000``, ``--variants``, ``--jobs``, ``--timeout``, ``--keep``, ``--json``;
data goes to ``tests/bench/.data/scale/``, which git ignores).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:
    # run by hand (tests/bench/scale.py): tests/ replaces this folder on sys.path, as
    # under pytest (pythonpath in pyproject.toml), so `support` and `bench` import alike
    sys.path[0] = str(Path(__file__).resolve().parents[1])

import orjson
import psutil

from bench import ingest

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data" / "scale"
#: how often a child's peak RSS is sampled
POLL_SECONDS = 0.05
#: the longest single line the transcript readers accept is 16 MB; the enormous output stays under
HUGE_OUTPUT_BYTES = 12 << 20
VARIANTS = ("mix", "failures", "huge-output", "subagents")

#: a child that runs one ``reverie`` command and reports how long the command itself took (after
#: the interpreter started and the modules it needs were imported), on its last stderr line
_CLI = """
import importlib, sys, time
for name in ("reverie.cli", "reverie.commands.notes", "reverie.commands.dream",
             "reverie.commands.sleep", "reverie.commands.transcript", "reverie.transcripts.reader",
             "reverie.session_memory.manager", "reverie.session_memory.rule_based_job",
             "reverie.dream.runner", "reverie.sleep.cycle", "reverie.llm.factory"):
    try:
        importlib.import_module(name)
    except ImportError:  # an older tree (the "before" figures)
        pass
from reverie.cli import main
began = time.perf_counter()
code = main(sys.argv[1:])
sys.stdout.flush()
print(f"@@bench {time.perf_counter() - began}", file=sys.stderr)
sys.exit(code)
"""

#: a child that reads files the way the parser does (``TranscriptReader``), or bare lines
_READER = """
import sys, time
from pathlib import Path
paths = [Path(p) for p in sys.argv[2:]]
began = time.perf_counter()
if sys.argv[1] == "parse":
    from reverie.transcripts.reader import TranscriptReader
    for path in paths:
        for _ in TranscriptReader(path):
            pass
else:
    import orjson
    for path in paths:
        with path.open("rb") as handle:
            for line in handle:
                if line.strip():
                    orjson.loads(line)
print(time.perf_counter() - began)
"""


# --- generating sessions ----------------------------------------------------------------------


def _failing(record: dict[str, Any], output: str) -> None:
    """Turn a tool-result record into a failed command's result."""
    content = f"Exit code 1\n{output}"
    record["message"]["content"][0].update(content=content, is_error=True)
    record["toolUseResult"] = f"Error: {content}"


def variant_records(variant: str, seed: int, cwd: str, size_bytes: int) -> Iterator[dict[str, Any]]:
    """The ingest record stream for ``variant``, every ``cwd`` set to ``cwd``.

    - ``mix``: as generated (8 % of tool results fail);
    - ``failures``: dense shell work: thinking and outputs cut to a few words, four tool calls in
      five are shell commands from a pool of thousands and more than half of those fail (about
      60,000 failed commands in 150 MB);
    - ``huge-output``: the mix, plus one tool result of ~12 MB (or a third of a smaller file)
      a third of the way in;
    - ``subagents``: the mix (the sub-agent files are written next to it by ``write_session``).
    """
    rng = random.Random(seed * 7919)
    huge_at = size_bytes // 3 if variant == "huge-output" else -1
    huge_size = min(HUGE_OUTPUT_BYTES, max(size_bytes // 3, 1 << 16))
    written = 0
    commands = [f"pytest -q tests/test_{n}.py::test_case_{n % 97}" for n in range(3000)] + [
        f"npm run build -- --filter pkg-{n}" for n in range(1000)
    ]
    for record in ingest.records(seed):
        if "cwd" in record:
            record["cwd"] = cwd
        kind = record.get("type")
        message = record.get("message")
        if variant == "failures" and kind in ("progress", "file-history-snapshot"):
            continue
        if variant == "failures" and isinstance(message, dict):
            content = message.get("content")
            if kind == "assistant" and isinstance(content, list) and content:
                block = content[0]
                if block.get("type") == "thinking" or (
                    block.get("type") == "text" and "stop_reason" in message
                ):
                    continue  # the lines of a tool round besides the call itself
                if block.get("type") == "text":
                    block["text"] = block["text"][:60]
                elif block.get("type") == "tool_use" and rng.random() < 0.8:
                    block["name"] = "Bash"
                    block["input"] = {"command": rng.choice(commands), "description": "check"}
            elif kind == "user" and "toolUseResult" in record and isinstance(content, list):
                block = content[0] if content else {}
                output = str(block.get("content", ""))[:60] or "FAILED"
                block["content"] = output
                record["toolUseResult"] = {"stdout": output, "stderr": "", "interrupted": False,
                                           "isImage": False}
                if rng.random() < 0.6:
                    _failing(record, output)
        if huge_at >= 0 and written >= huge_at and kind == "user" and "toolUseResult" in record:
            huge_at = -1
            text = ("ERROR build step emitted a very long log line " * (huge_size // 48 + 1))
            record["message"]["content"][0]["content"] = text[:huge_size]
            record["toolUseResult"] = {"stdout": text[:huge_size], "stderr": "",
                                       "interrupted": False, "isImage": False}
        line = orjson.dumps(record)
        written += len(line) + 1
        yield record


def write_session(path: Path, size_bytes: int, variant: str, seed: int, cwd: str,
                  subagents: int = 0) -> int:
    """Write a session of at least ``size_bytes`` (and ``subagents`` sub-agent files of a few KB
    in ``<stem>/subagents/``); returns the bytes written, sub-agent files included."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    session_id = path.stem
    with path.open("wb") as out:
        buffer: list[bytes] = []
        for record in variant_records(variant, seed, cwd, size_bytes):
            if "sessionId" in record:
                record["sessionId"] = session_id
            line = orjson.dumps(record) + b"\n"
            buffer.append(line)
            written += len(line)
            if len(buffer) >= 2000:
                out.write(b"".join(buffer))
                buffer.clear()
            if written >= size_bytes:
                break
        out.write(b"".join(buffer))
    if subagents:
        folder = path.with_suffix("") / "subagents"
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(subagents):
            agent = f"a{seed:05d}{n:05d}"
            sub = folder / f"agent-{agent}.jsonl"
            lines = []
            for i, record in enumerate(variant_records("mix", seed * 1000 + n, cwd, 4096)):
                if "sessionId" in record:
                    record["sessionId"] = session_id
                    record["isSidechain"] = True
                    record["agentId"] = agent
                lines.append(orjson.dumps(record) + b"\n")
                if i >= 12:
                    break
            data = b"".join(lines)
            sub.write_bytes(data)
            written += len(data)
    return written


def project_dir(home: Path, workspace: Path) -> Path:
    from reverie.config import claude_project_slug

    return home / ".claude" / "projects" / claude_project_slug(str(workspace))


@dataclass
class Corpus:
    """Generated inputs: an agent home with a workspace's sessions."""

    root: Path
    home: Path
    workspace: Path
    files: list[Path]
    bytes: int


def make_corpus(root: Path, sessions: int, mean_bytes: int, variant: str, seed: int = 1,
                subagents: int = 0) -> Corpus:
    """``sessions`` sessions of ``mean_bytes`` on average (0.5x to 1.5x), oldest first by mtime.

    Kept between runs: a corpus whose marker file matches is reused.
    """
    marker = root / "corpus.json"
    spec = {"sessions": sessions, "mean": mean_bytes, "variant": variant, "seed": seed,
            "subagents": subagents, "version": 3}
    home, workspace = root / "home", root / "workspace"
    if marker.is_file():
        saved = json.loads(marker.read_text())
        if saved["spec"] == spec:
            return Corpus(root, home, workspace, [Path(p) for p in saved["files"]],
                          saved["bytes"])
    shutil.rmtree(root, ignore_errors=True)
    workspace.mkdir(parents=True)
    folder = project_dir(home, workspace)
    rng = random.Random(seed)
    files: list[Path] = []
    total = 0
    now = time.time()
    for n in range(sessions):
        size = int(mean_bytes * rng.uniform(0.5, 1.5)) if sessions > 1 else mean_bytes
        path = folder / f"{uuid.UUID(int=rng.getrandbits(128))}.jsonl"
        total += write_session(path, size, variant, seed * 100_003 + n, str(workspace),
                               subagents)
        stamp = now - (sessions - n) * 60  # a minute apart, all within today
        os.utime(path, (stamp, stamp))
        files.append(path)
    marker.write_text(json.dumps({"spec": spec, "files": [str(p) for p in files],
                                  "bytes": total}))
    return Corpus(root, home, workspace, files, total)


# --- running a child --------------------------------------------------------------------------


@dataclass
class Run:
    """One timed child process."""

    seconds: float
    peak_rss_mb: float
    returncode: int | None
    timed_out: bool = False
    #: what the child printed on stderr when it failed (last lines)
    error: str = ""
    #: a number the child printed (the reader children time themselves)
    inner_seconds: float | None = None

    def figure(self) -> str:
        if self.timed_out:
            return f">{self.seconds:.0f} s (timed out)"
        if self.returncode:
            return f"failed ({self.returncode})"
        return f"{self.net:.2f} s"

    @property
    def net(self) -> float:
        """The command's own time (start-up and imports left out) when the child said it."""
        return self.inner_seconds if self.inner_seconds is not None else self.seconds


def _hwm_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    try:
        return psutil.Process(pid).memory_info().rss / (1 << 20)
    except psutil.Error:
        return 0.0


def timed(cmd: Sequence[str], env: dict[str, str], timeout: float, cwd: Path | None = None) -> Run:
    """Run ``cmd``; its wall time and the peak RSS of it and its children, killed at ``timeout``."""
    began = time.perf_counter()
    proc = subprocess.Popen(list(cmd), env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    peak = 0.0
    timed_out = False
    handle = psutil.Process(proc.pid)
    while proc.poll() is None:
        total = _hwm_mb(proc.pid)
        try:
            total += sum(_hwm_mb(c.pid) for c in handle.children(recursive=True))
        except psutil.Error:
            pass
        peak = max(peak, total)
        if time.perf_counter() - began > timeout:
            timed_out = True
            os.killpg(proc.pid, 9)
            break
        time.sleep(POLL_SECONDS)
    out, err = proc.communicate()
    seconds = time.perf_counter() - began
    inner = None
    marks = [line for line in err.decode(errors="replace").splitlines()
             if line.startswith("@@bench ")]
    try:
        if marks:
            inner = float(marks[-1].split()[1])
        elif proc.returncode == 0 and out.strip():
            inner = float(out.strip().splitlines()[-1])
    except ValueError:
        inner = None
    error = ""
    if proc.returncode:
        error = "\n".join(err.decode(errors="replace").splitlines()[-5:])
    return Run(round(seconds, 3), round(peak, 1), proc.returncode, timed_out, error, inner)


def bench_env(corpus: Corpus, data: Path) -> dict[str, str]:
    """The child's environment: offline engine (no provider), a fresh data dir."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("REVERIE_", "OPENAI_", "ANTHROPIC_"))}
    shutil.rmtree(data, ignore_errors=True)
    (data / "data").mkdir(parents=True)
    (data / "config").mkdir(parents=True)
    env.update(REVERIE_DATA_DIR=str(data / "data"), REVERIE_CONFIG_DIR=str(data / "config"),
               REVERIE_AGENT_HOME=str(corpus.home))
    return env


REVERIE = (sys.executable, "-c", _CLI)


def run_notes(corpus: Corpus, timeout: float) -> Run:
    env = bench_env(corpus, corpus.root / "run")
    return timed([*REVERIE, "notes", str(corpus.files[0]), "--force", "--json",
                  "--workspace", str(corpus.workspace)], env, timeout)


def run_stats(corpus: Corpus, timeout: float) -> Run:
    env = bench_env(corpus, corpus.root / "run")
    return timed([*REVERIE, "transcript", str(corpus.files[0]), "--stats"], env, timeout)


def run_read(corpus: Corpus, timeout: float, mode: str) -> Run:
    """``mode``: ``parse`` (the transcript parser over every file in one process) or ``bare``."""
    env = bench_env(corpus, corpus.root / "run")
    files = [str(p) for p in corpus.files]
    if corpus.files and corpus.files[0].with_suffix("").is_dir():
        files += [str(p) for f in corpus.files
                  for p in sorted((f.with_suffix("") / "subagents").glob("*.jsonl"))]
    return timed([sys.executable, "-c", _READER, mode, *files], env, timeout)


def run_dream(corpus: Corpus, timeout: float) -> Run:
    env = bench_env(corpus, corpus.root / "run")
    return timed([*REVERIE, "dream", "--manual", "--json", "--workspace", str(corpus.workspace)],
                 env, timeout)


def run_sleep(corpus: Corpus, timeout: float) -> Run:
    env = bench_env(corpus, corpus.root / "run")
    return timed([*REVERIE, "sleep", "--json", "--workspace", str(corpus.workspace)], env,
                 timeout)


JOBS: dict[str, Callable[[Corpus, float], Run]] = {
    "notes": run_notes, "dream": run_dream, "sleep": run_sleep,
}


# --- the figures ------------------------------------------------------------------------------


def exponent(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(seconds) against log(size); None with fewer than 2 points."""
    usable = [(math.log(s), math.log(t)) for s, t in points if s > 0 and t > 0]
    if len(usable) < 2:
        return None
    mx = sum(x for x, _ in usable) / len(usable)
    my = sum(y for _, y in usable) / len(usable)
    var = sum((x - mx) ** 2 for x, _ in usable)
    if var == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in usable) / var


def rss_slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of peak RSS (MB) against input size (MB): what each MB of input
    costs in memory. A streaming job stays near 0; one that holds the input grows with it."""
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    var = sum((x - mx) ** 2 for x, _ in points)
    if var == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / var


@dataclass
class Point:
    """One job on one input size, with the references on the same files."""

    job: str
    variant: str
    size_mb: float
    sessions: int
    run: Run
    #: ``transcript --stats`` (a session) or the parser over every file (a history)
    reference: Run
    bare: Run
    net_seconds: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.run.timed_out or self.run.returncode or not self.reference.net:
            return None
        return self.run.net / self.reference.net


@dataclass
class Report:
    points: list[Point] = field(default_factory=list)
    #: the same command on a tiny session: start-up wall time, the RSS of an idle interpreter
    baselines: dict[str, Run] = field(default_factory=dict)
    exponents: dict[str, float | None] = field(default_factory=dict)
    #: an exponent from a series with a timed-out run: the timeout stands in, so it is a floor
    floors: dict[str, bool] = field(default_factory=dict)
    #: MB of peak RSS per MB of input, per series (``rss_slope``)
    rss_slopes: dict[str, float | None] = field(default_factory=dict)


def tiny_corpus(root: Path) -> Corpus:
    return make_corpus(root / "tiny", 1, 20_000, "mix", seed=99)


def measure(
    root: Path,
    notes_mb: Sequence[float],
    histories: Sequence[int],
    session_mb: float,
    variants: Sequence[str],
    jobs: Sequence[str],
    timeout: float,
    repeats: int = 1,
    log: Callable[[str], None] = lambda _: None,
    references: bool = True,
) -> Report:
    """Every job on every size; the best of ``repeats`` runs (the machine is shared).
    ``references=False`` skips the reading references (the test needs only the jobs)."""
    report = Report()
    skipped = Run(0.0, 0.0, None)

    def best(make: Callable[[], Run]) -> Run:
        runs = [make() for _ in range(repeats)]
        done = [r for r in runs if not r.timed_out and not r.returncode]
        if not done:
            return runs[0]
        return min(done, key=lambda r: r.seconds)

    tiny = tiny_corpus(root)
    for job in jobs:
        report.baselines[job] = best(lambda job=job: JOBS[job](tiny, timeout))
    for variant in variants:
        if "notes" in jobs and variant != "subagents":
            for mb in notes_mb:
                corpus = make_corpus(root / f"notes-{variant}-{mb:g}", 1, int(mb * (1 << 20)),
                                     variant)
                log(f"notes {variant} {mb:g} MB ...")
                run = best(lambda c=corpus: run_notes(c, timeout))
                ref = best(lambda c=corpus: run_stats(c, timeout)) if references else skipped
                bare = best(lambda c=corpus: run_read(c, timeout, "bare")) if references \
                    else skipped
                report.points.append(Point("notes", variant, round(corpus.bytes / (1 << 20), 1),
                                           1, run, ref, bare))
                log(f"  notes {run.figure()} rss {run.peak_rss_mb} MB; stats {ref.figure()}")
        history_jobs = [j for j in jobs if j in ("dream", "sleep")]
        if history_jobs and variant in ("mix", "subagents", "failures"):
            for count in histories:
                corpus = make_corpus(root / f"history-{variant}-{count}", count,
                                     int(session_mb * (1 << 20)), variant,
                                     subagents=20 if variant == "subagents" else 0)
                ref = best(lambda c=corpus: run_read(c, timeout, "parse")) if references \
                    else skipped
                bare = best(lambda c=corpus: run_read(c, timeout, "bare")) if references \
                    else skipped
                for job in history_jobs:
                    log(f"{job} {variant} {count} sessions ...")
                    run = best(lambda c=corpus, j=job: JOBS[j](c, timeout))
                    report.points.append(Point(job, variant, round(corpus.bytes / (1 << 20), 1),
                                               count, run, ref, bare))
                    log(f"  {job} {run.figure()} rss {run.peak_rss_mb} MB; read {ref.figure()}")
    for point in report.points:
        if point.run.timed_out:
            point.net_seconds = point.run.seconds  # a floor: the real time is longer
        elif not point.run.returncode:
            point.net_seconds = max(point.run.net, 0.001)
    series: dict[str, list[Point]] = {}
    for point in report.points:
        series.setdefault(f"{point.job}/{point.variant}", []).append(point)
    for key, points in series.items():
        pairs = [(p.size_mb, p.net_seconds) for p in points if p.net_seconds is not None]
        report.exponents[key] = exponent(pairs)
        report.floors[key] = any(p.run.timed_out for p in points)
        report.rss_slopes[key] = rss_slope([(p.size_mb, p.run.peak_rss_mb) for p in points
                                            if not p.run.timed_out and not p.run.returncode])
    return report


def render(report: Report) -> str:
    lines = ["job    variant      size      sessions  time                 peak RSS   "
             "reference          bare read   ratio"]
    for p in report.points:
        ratio = f"{p.ratio:.1f}x" if p.ratio is not None else "-"
        lines.append(
            f"{p.job:<6} {p.variant:<12} {p.size_mb:>7.1f} MB {p.sessions:>6}  "
            f"{p.run.figure():<20} {p.run.peak_rss_mb:>6.0f} MB  {p.reference.figure():<18} "
            f"{p.bare.figure():<11} {ratio}"
        )
        if p.run.error:
            lines.append("       " + p.run.error.replace("\n", "\n       "))
    lines.append("a 20 KB session (wall time with start-up, command, RSS): " + ", ".join(
        f"{job} {run.seconds:.2f} s / {run.figure()} / {run.peak_rss_mb:.0f} MB"
        for job, run in report.baselines.items()))
    for key, value in report.exponents.items():
        if value is None:
            continue
        floor = " (at least: a run timed out)" if report.floors.get(key) else ""
        verdict = "ok" if value <= 1.2 and not report.floors.get(key) else "MISSED"
        slope = report.rss_slopes.get(key)
        memory = f"   RSS {slope:+.2f} MB per input MB" if slope is not None else ""
        lines.append(f"growth exponent {key}: {value:.2f}{floor}   target <= 1.2  [{verdict}]"
                     f"{memory}")
    return "\n".join(lines)


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes-mb", type=_floats, default=[10.0, 50.0, 150.0],
                        help="session sizes for the notes job, MB (default 10,50,150)")
    parser.add_argument("--histories", type=lambda s: [int(x) for x in _floats(s)],
                        default=[100, 1000], help="history lengths in sessions (default 100,1000)")
    parser.add_argument("--session-mb", type=float, default=1.0,
                        help="mean session size in a history, MB (default 1)")
    parser.add_argument("--variants", type=lambda s: s.split(","), default=["mix"],
                        help=f"comma-separated, of {', '.join(VARIANTS)} (default mix)")
    parser.add_argument("--jobs", type=lambda s: s.split(","), default=list(JOBS),
                        help="comma-separated, of notes, dream, sleep (default all)")
    parser.add_argument("--timeout", type=float, default=600.0, help="per run, seconds")
    parser.add_argument("--repeats", type=int, default=1, help="runs per figure, best kept")
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--keep", action="store_true", help="keep the generated sessions")
    parser.add_argument("--json", action="store_true", help="also print the report as JSON")
    args = parser.parse_args(argv)
    unknown = set(args.variants) - set(VARIANTS) or set(args.jobs) - set(JOBS)
    if unknown:
        parser.error(f"unknown: {', '.join(sorted(unknown))}")
    try:
        report = measure(args.data_dir, args.notes_mb, args.histories, args.session_mb,
                         args.variants, args.jobs, args.timeout, args.repeats,
                         log=lambda line: print(line, file=sys.stderr, flush=True))
    finally:
        if not args.keep:
            shutil.rmtree(args.data_dir, ignore_errors=True)
    print(render(report))
    if args.json:
        print(json.dumps(asdict(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
