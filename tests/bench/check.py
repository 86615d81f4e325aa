"""Staleness check cost: ``reverie check`` on a 10,000-file repository with 200 facts, and what
the validation adds to a dream.

The repository is generated (TypeScript, Python and Go modules with functions, a package.json
with scripts and dependencies, a pyproject, a Makefile), committed with dulwich, then changed
(files renamed, scripts and a dependency dropped) and committed again, so the check does real
history work for the stale facts. The memory has 200 facts in 10 topic files: paths, symbols,
scripts, make targets, dependencies, and rules with no anchor.

Timed, whole process (launch to exit, ``python -m reverie check --json``), medians of the rounds:
- ``check (anchors recorded)``: the memory as a dream leaves it (anchors in front matter), with
  no check cache (a data dir of its own each round) and with the cache an earlier check left;
- ``check (anchors extracted)``: a hand-written memory (anchors found at check time), no cache;
- baseline ``reverie --version`` (the CLI start) in the same loop, and the ratio to it.

Dream: a manual offline dream on the same workspace and memory, with the validation (no check
cache, and the cache an earlier check of the same tree left) and with it replaced by a no-op
(in-process, rounds interleaved); the difference over the time without it is what validation
adds (goal: <= 20%). Over the bundled sample sessions (4), and over ``--copies`` copies of the
three Claude Code samples under new session ids (a dream over 25 sessions).

Run: ``.venv/bin/python tests/bench/check.py`` (``--rounds N``, ``--files N``, ``--facts N``,
``--copies N``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from dulwich import porcelain

AUTHOR = b"Bench <bench@example.com>"


def generate_repo(root: Path, files: int) -> dict[str, list[str]]:
    """A repository of ``files`` files; returns what facts can name."""
    root.mkdir(parents=True)
    names: dict[str, list[str]] = {"paths": [], "symbols": [], "scripts": [], "targets": [],
                                   "deps": []}
    kinds = ("ts", "py", "go", "md")
    per_dir = 100
    for index in range(files - 4):
        folder = f"src/mod{index // per_dir:03d}"
        ext = kinds[index % len(kinds)]
        rel = f"{folder}/file{index:05d}.{ext}"
        fn = f"handle{index:05d}Request"
        if ext == "ts":
            text = (f"import {{ helper }} from '../util'\n\nexport function {fn}(input: string)"
                    f" {{\n  return helper(input) + {index}\n}}\n\nexport const LIMIT_{index} = "
                    f"{index}\n")
        elif ext == "py":
            fn = f"handle_{index:05d}_request"
            text = (f'"""Module {index}."""\n\n\ndef {fn}(value: int) -> int:\n'
                    f"    return value * {index}\n")
        elif ext == "go":
            text = f"package mod\n\nfunc {fn}(v int) int {{\n\treturn v + {index}\n}}\n"
        else:
            text = f"# Notes {index}\n\nSee `{fn}` in the code.\n"
            fn = ""
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        names["paths"].append(rel)
        if fn:
            names["symbols"].append(fn)
    scripts = {f"task{n}": f"node scripts/task{n}.js" for n in range(50)}
    deps = {f"lib-{n}": f"^{n}.0.0" for n in range(80)}
    (root / "package.json").write_text(json.dumps(
        {"name": "bench", "scripts": scripts, "dependencies": deps}, indent=2))
    (root / "pnpm-lock.yaml").write_text("lockfileVersion: '9.0'\n")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bench"\nversion = "1"\ndependencies = ["requests", "structlog"]\n')
    (root / "Makefile").write_text("".join(f"target{n}:\n\techo {n}\n\n" for n in range(30)))
    names["scripts"] = list(scripts)
    names["targets"] = [f"target{n}" for n in range(30)]
    names["deps"] = list(deps)
    repo = porcelain.init(str(root))
    porcelain.add(repo, paths=[str(p) for p in root.rglob("*")
                               if p.is_file() and ".git" not in p.parts])
    porcelain.commit(repo, message=b"initial", author=AUTHOR, committer=AUTHOR)
    return names


def change_repo(root: Path, names: dict[str, list[str]]) -> None:
    """Rename 10 files, drop 5 scripts and 2 dependencies, commit."""
    repo = porcelain.open_repo(str(root))
    for rel in names["paths"][:10]:
        porcelain.mv(repo, str(root / rel), str(root / rel.replace("file", "moved")))
    data = json.loads((root / "package.json").read_text())
    for script in names["scripts"][:5]:
        data["scripts"].pop(script)
    for dep in names["deps"][:2]:
        data["dependencies"].pop(dep)
    (root / "package.json").write_text(json.dumps(data, indent=2))
    porcelain.add(repo, paths=[str(root / "package.json")])
    porcelain.commit(repo, message=b"rename and drop", author=AUTHOR, committer=AUTHOR)


def write_memory(memory: Path, names: dict[str, list[str]], facts: int) -> None:
    memory.mkdir(parents=True)
    bullets: list[str] = []
    step = max(1, len(names["paths"]) // 60)
    for n, rel in enumerate(names["paths"][::step][:60]):
        bullets.append(f"- The handlers of area {n} live in {rel}. _(session abcd{n:04d}, "
                       "2026-11-20)_")
    for n, fn in enumerate(names["symbols"][::97][:50]):
        bullets.append(f"- `{fn}()` validates its input first. _(session bcde{n:04d}, "
                       "2026-11-21)_")
    for n, script in enumerate(names["scripts"][:25]):
        bullets.append(f"- **Run:** `pnpm {script}` _(session cdef{n:04d}, 2026-11-22)_")
    for n, target in enumerate(names["targets"][:15]):
        bullets.append(f"- **Build:** `make {target}` _(session defa{n:04d}, 2026-11-22)_")
    for n, dep in enumerate(names["deps"][:30]):
        bullets.append(f"- HTTP calls go through `{dep}` (see package.json). _(session "
                       f"efab{n:04d}, 2026-11-23)_")
    rules = 0
    while len(bullets) < facts:
        bullets.append(f"- Keep functions short, rule {rules}. _(session fabc{rules:04d}, "
                       "2026-11-24)_")
        rules += 1
    bullets = bullets[:facts]
    index = ["# Memory", ""]
    per_topic = (len(bullets) + 9) // 10
    for topic in range(10):
        chunk = bullets[topic * per_topic:(topic + 1) * per_topic]
        name = f"topic-{topic}.md"
        (memory / name).write_text(
            f"---\nname: Topic {topic}\ndescription: facts {topic}\ntype: project\n---\n\n"
            + "\n".join(chunk) + "\n")
        index.append(f"- [Topic {topic}]({name}) - facts {topic}")
    (memory / "MEMORY.md").write_text("\n".join(index) + "\n")


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds (launch to exit), CPU seconds (user + system) of the process, stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, done.stdout


def copy_sessions(home: Path, copies: int) -> int:
    """``copies`` more copies of each installed Claude Code sample under new session ids
    (oldest first, a minute apart); returns how many sessions the home holds."""
    import uuid

    projects = next((home / ".claude" / "projects").iterdir())
    originals = sorted(projects.glob("*.jsonl"))
    made: list[Path] = []
    for copy in range(copies):
        for source in originals:
            data = source.read_text("utf-8")
            ids = {json.loads(line).get("sessionId") for line in data.splitlines() if line}
            for old in ids - {None}:
                new = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{old}/{copy}"))
                data = data.replace(str(old), new)
            target = projects / f"{uuid.uuid5(uuid.NAMESPACE_URL, f'{source.stem}/{copy}')}.jsonl"
            target.write_text(data, "utf-8")
            made.append(target)
    now = time.time()
    for position, path in enumerate(made):
        stamp = now - 3600 - 60 * (len(made) - position)
        os.utime(path, (stamp, stamp))
    return len(list(home.rglob("*.jsonl")))


DREAM_CASES = ("without", "with, no cache", "with, cache warm")


def settle(workspace: Path, memory: Path, home: Path, target: Path) -> Path:
    """The memory a first dream over ``home``'s sessions leaves, copied to ``target``."""
    from reverie.config import Settings
    from reverie.dream.runner import DreamRequest, DreamRunner

    data = Path(tempfile.mkdtemp(prefix="bench-settle-"))
    shutil.copytree(memory, data / "memory")
    settings = Settings(data_dir=data, agent_home=home, memory_dir=data / "memory")
    result = asyncio.run(DreamRunner(settings).run(DreamRequest(workspace=workspace,
                                                                manual=True)))
    if result.error:
        raise SystemExit(f"dream failed: {result.error}")
    shutil.copytree(data / "memory", target,
                    ignore=shutil.ignore_patterns(".reverie", ".consolidate-lock"))
    shutil.rmtree(data, ignore_errors=True)
    return target


def dream_rounds(workspace: Path, memory: Path, home: Path, rounds: int, warm: Path,
                 cpu: dict[str, list[float]]) -> dict[str, list[float]]:
    """Dream durations without validation (a no-op in its place) and with it, with no check
    cache and with ``warm`` (the cache an earlier check of this tree left) in the data dir,
    interleaved; into ``cpu``, the process CPU time of each (the engine runs in a thread of
    this process, so it is counted; on a loaded machine CPU time says what wall time
    cannot), and under ``own: LABEL`` the CPU time of ``maintain_memory`` itself (its
    thread's): with and without it the dream applies different changes (a retired fact,
    anchors recorded), so the difference of the two dreams is not all validation."""
    import reverie.dream.runner as runner_module
    from reverie.anchors.retire import MaintainResult, maintain_memory
    from reverie.config import ProjectPaths, Settings
    from reverie.dream.runner import DreamRequest, DreamRunner

    def skip(*_args: object) -> MaintainResult:
        return MaintainResult()

    own: list[float] = []

    def measured(*args: Any) -> MaintainResult:
        started = time.thread_time()
        try:
            return maintain_memory(*args)
        finally:
            own.append(time.thread_time() - started)

    walls: dict[str, list[float]] = {label: [] for label in DREAM_CASES}
    for _ in range(rounds):
        for label in DREAM_CASES:
            data = Path(tempfile.mkdtemp(prefix="bench-dream-"))
            copy = data / "memory"
            shutil.copytree(memory, copy)
            settings = Settings(data_dir=data, agent_home=home, memory_dir=copy)
            if label == "with, cache warm":
                target = ProjectPaths(settings, workspace).check_cache
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(warm, target)
            func = skip if label == "without" else measured
            runner_module.maintain_memory = func  # type: ignore[assignment]
            own.clear()
            used = time.process_time()
            result = asyncio.run(DreamRunner(settings).run(
                DreamRequest(workspace=workspace, manual=True)))
            cpu.setdefault(label, []).append(time.process_time() - used)
            if own:
                cpu.setdefault(f"own: {label}", []).append(own[0])
            if result.error:
                raise SystemExit(f"dream failed: {result.error}")
            walls[label].append(result.duration_ms / 1000)
            shutil.rmtree(data, ignore_errors=True)
    runner_module.maintain_memory = maintain_memory  # type: ignore[assignment]
    return walls


def report_dream(title: str, walls: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    plain, plain_cpu = statistics.median(walls["without"]), statistics.median(cpu["without"])
    print(f"{title}: without validation {plain:.2f} s wall, {plain_cpu:.2f} s CPU")
    for label in DREAM_CASES[1:]:
        wall, used = statistics.median(walls[label]), statistics.median(cpu[label])
        print(f"  {label:<17} {wall:.2f} s wall (+{wall - plain:.2f} s, "
              f"{(wall - plain) / plain:+.0%}); {used:.2f} s CPU (+{used - plain_cpu:.2f} s, "
              f"{(used - plain_cpu) / plain_cpu:+.0%}); maintain_memory itself "
              f"{statistics.median(cpu['own: ' + label]):.3f} s CPU "
              f"({statistics.median(cpu['own: ' + label]) / plain_cpu:.0%})")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=200)
    parser.add_argument("--copies", type=int, default=8)
    args = parser.parse_args()
    from reverie.anchors.memory import check_memory
    from reverie.anchors.retire import maintain_memory
    from reverie.samples import install_samples

    base = Path(tempfile.mkdtemp(prefix="bench-check-"))
    try:
        workspace = base / "repo"
        started = time.monotonic()
        names = generate_repo(workspace, args.files)
        fresh = base / "memory-fresh"
        write_memory(fresh, names, args.facts)
        recorded = base / "memory-recorded"
        shutil.copytree(fresh, recorded)
        maintain_memory(recorded, workspace, date.today())  # as a dream left it, before...
        change_repo(workspace, names)  # ...the code moved on
        print(f"repository: {args.files} files, 2 commits, built in "
              f"{time.monotonic() - started:.1f} s")
        env = dict(os.environ, REVERIE_DATA_DIR=str(base / "data"))
        # name: (memory, data dir kept from round to round: the cache of the last check)
        cases = {"check (recorded, no cache)": (recorded, False),
                 "check (recorded, cache warm)": (recorded, True),
                 "check (extracted, no cache)": (fresh, False)}
        times: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        start_case = "baseline: reverie --version"
        times[start_case], cpu[start_case] = [], []
        report: dict[str, object] = {}
        warm_env = dict(env, REVERIE_MEMORY_DIR=str(recorded))
        timed([sys.executable, "-m", "reverie", "check", "--workspace", str(workspace)],
              warm_env)  # the earlier check
        for round_number in range(args.rounds):
            elapsed, used, _out = timed([sys.executable, "-m", "reverie", "--version"], env)
            times[start_case].append(elapsed)
            cpu[start_case].append(used)
            for name, (memory, keep) in cases.items():
                run_env = dict(env, REVERIE_MEMORY_DIR=str(memory))
                if not keep:
                    run_env["REVERIE_DATA_DIR"] = str(
                        base / f"data-{round_number}-{list(cases).index(name)}")
                elapsed, used, out = timed([sys.executable, "-m", "reverie", "check",
                                            "--workspace", str(workspace), "--json"], run_env)
                times[name].append(elapsed)
                cpu[name].append(used)
                report[name] = json.loads(out)
        baseline = statistics.median(times[start_case])
        print(f"{'case':<34} {'wall s':>7} {'max s':>6} {'cpu s':>6} {'x CLI start':>12}")
        for name, values in times.items():
            median = statistics.median(values)
            print(f"{name:<34} {median:>7.2f} {max(values):>6.2f} "
                  f"{statistics.median(cpu[name]):>6.2f} {median / baseline:>12.1f}")
        for name in cases:
            data = report[name]
            assert isinstance(data, dict)
            print(f"  {name}: {len(data['facts'])} facts, {data['valid']} valid, "
                  f"{data['stale']} stale, {data['unverifiable']} unverifiable")
        home = base / "home"
        home.mkdir()
        install_samples(home, workspace)
        # what the next dream starts from: the memory the first dream (8 facts retired, the
        # sessions' facts added, their anchors recorded) left
        settled = settle(workspace, recorded, home, base / "memory-settled")
        # the cache an earlier check of this tree left (the editor's diagnostics, a dream)
        warm = {memory: base / f"warm-{memory.name}.json" for memory in (recorded, settled)}
        for memory, cache in warm.items():
            check_memory(memory, workspace, date.today(), cache=cache)
        for memory, what in ((recorded, "8 facts to retire"),
                             (settled, "the next dream: nothing to retire")):
            dream_cpu: dict[str, list[float]] = {}
            walls = dream_rounds(workspace, memory, home, args.rounds, warm[memory], dream_cpu)
            report_dream(f"dream over the 4 sample sessions, {what}", walls, dream_cpu)
        if args.copies:
            sessions = copy_sessions(home, args.copies)
            dream_cpu = {}
            walls = dream_rounds(workspace, recorded, home, args.rounds, warm[recorded],
                                 dream_cpu)
            report_dream(f"dream over {sessions} sessions, 8 facts to retire", walls, dream_cpu)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
