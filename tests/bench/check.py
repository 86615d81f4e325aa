"""Staleness check cost: ``reverie check`` on a 10,000-file repository with 200 facts, and what
the validation adds to a dream.

The repository is generated (TypeScript, Python and Go modules with functions, a package.json
with scripts and dependencies, a pyproject, a Makefile), committed with dulwich, then changed
(files renamed, scripts and a dependency dropped) and committed again, so the check does real
history work for the stale facts. The memory has 200 facts in 10 topic files: paths, symbols,
scripts, make targets, dependencies, and rules with no anchor.

Timed, whole process (launch to exit, ``python -m reverie check --json``), medians of the rounds:
- ``check (anchors recorded)``: the memory as a dream leaves it (anchors in front matter);
- ``check (anchors extracted)``: a hand-written memory (anchors found at check time);
- baseline ``reverie --version`` (the CLI start) in the same loop, and the ratio to it.

Dream: a manual offline dream over the bundled sample sessions on the same workspace and memory,
with the validation and with it replaced by a no-op (in-process, same rounds interleaved); the
difference over the time without it is what validation adds (goal: <= 20%).

Run: ``.venv/bin/python tests/bench/check.py`` (``--rounds N``, ``--files N``, ``--facts N``).
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


def dream_rounds(workspace: Path, memory: Path, home: Path, rounds: int,
                 cpu: dict[str, list[float]] | None = None) -> tuple[list[float], list[float]]:
    """Dream durations with validation and with a no-op in its place, interleaved (and, into
    ``cpu``, the process CPU time of each: the engine runs in a thread of this process, so it
    is counted; on a loaded machine CPU time says what wall time cannot)."""
    import reverie.dream.runner as runner_module
    from reverie.anchors.retire import MaintainResult, maintain_memory
    from reverie.config import Settings
    from reverie.dream.runner import DreamRequest, DreamRunner

    def skip(*_args: object) -> MaintainResult:
        return MaintainResult()

    with_check: list[float] = []
    without: list[float] = []
    for _ in range(rounds):
        for label, func in (("with", maintain_memory), ("without", skip)):
            data = Path(tempfile.mkdtemp(prefix="bench-dream-"))
            copy = data / "memory"
            shutil.copytree(memory, copy)
            settings = Settings(data_dir=data, agent_home=home, memory_dir=copy)
            runner_module.maintain_memory = func  # type: ignore[assignment]
            used = time.process_time()
            result = asyncio.run(DreamRunner(settings).run(
                DreamRequest(workspace=workspace, manual=True)))
            if cpu is not None:
                cpu.setdefault(label, []).append(time.process_time() - used)
            if result.error:
                raise SystemExit(f"dream failed: {result.error}")
            (with_check if label == "with" else without).append(result.duration_ms / 1000)
            shutil.rmtree(data, ignore_errors=True)
    runner_module.maintain_memory = maintain_memory  # type: ignore[assignment]
    return with_check, without


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=200)
    args = parser.parse_args()
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
        cases = {"check (anchors recorded)": recorded, "check (anchors extracted)": fresh}
        times: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        start_case = "baseline: reverie --version"
        times[start_case], cpu[start_case] = [], []
        report: dict[str, object] = {}
        for _ in range(args.rounds):
            elapsed, used, _out = timed([sys.executable, "-m", "reverie", "--version"], env)
            times[start_case].append(elapsed)
            cpu[start_case].append(used)
            for name, memory in cases.items():
                run_env = dict(env, REVERIE_MEMORY_DIR=str(memory))
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
        dream_cpu: dict[str, list[float]] = {}
        with_check, without = dream_rounds(workspace, recorded, home, args.rounds, dream_cpu)
        plain = statistics.median(without)
        added = statistics.median(with_check) - plain
        print(f"dream without validation: {plain:.2f} s; with: "
              f"{statistics.median(with_check):.2f} s; validation adds {added:.2f} s "
              f"({added / plain:.0%})")
        plain_cpu = statistics.median(dream_cpu["without"])
        added_cpu = statistics.median(dream_cpu["with"]) - plain_cpu
        print(f"dream CPU without validation: {plain_cpu:.2f} s; with: "
              f"{statistics.median(dream_cpu['with']):.2f} s; validation adds "
              f"{added_cpu:.2f} s CPU ({added_cpu / plain_cpu:.0%})")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
