"""Redaction throughput and worst case.

Generates a transcript-like corpus (Claude Code JSONL: prompts, replies with code, tool calls
with commands and file edits, tool results with file contents, logs, JSON and diffs; text taken
from the real fixture transcripts and mixed with synthetic code, one planted secret every
~20 KB) and measures ``redact``:

- ``strings``: every string Reverie redacts, one call each (message text, each tool input value,
  each tool output), the way notes, dream and sleep call it;
- ``files``: each whole JSONL file in one call, the way a model's ``read_file`` of a transcript
  is redacted;
- ``pathological``: 1 MB lines built to make each rule work hardest (runs of its literal, near
  misses, unclosed blocks), as a ratio to 1 MB of the normal corpus measured in the same process.

Throughput is reported on CPU time (``time.process_time``) as well as wall time: on a shared
machine the wall figure mostly measures the neighbours.

Run: ``.venv/bin/python tests/bench/redact.py [--mb 20] [--check]`` (``--check`` exits 1 when a
target is missed: >= 50 MB/s of CPU on both workloads, every pathological ratio <= 20).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

if __name__ == "__main__" and not __package__:
    # run by hand (tests/bench/redact.py): tests/ replaces this folder on sys.path, as
    # under pytest (pythonpath in pyproject.toml), so `support` and `bench` import alike
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from reverie.redact import redact
from support.secrets import pathological_lines

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
TARGET_MB_S = 50.0
MAX_RATIO = 20.0

CODE = '''def load_settings(path: Path) -> Settings:
    """Read the settings file, falling back to defaults for missing keys."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    token_budget = raw.get("token_budget", 4096)
    api_key = os.environ.get("OPENAI_API_KEY")
    if not api_key:
        raise ConfigError("set OPENAI_API_KEY or pass --api-key")
    return Settings(model=raw["model"], api_key=api_key, max_tokens=token_budget)
'''
LOG = ("2026-05-11T11:27:03.114Z INFO  server listening on http://127.0.0.1:8080 (pid 4242)\n"
       "2026-05-11T11:27:04.008Z WARN  retrying request 2/5 after 429: rate limited\n"
       "2026-05-11T11:27:05.551Z ERROR Traceback (most recent call last):\n"
       '  File "/home/dev/app/server.py", line 88, in handle\n'
       "    response = await client.post(url, json=payload, timeout=30)\n"
       "httpx.ReadTimeout: timed out\n")
DIFF = ("diff --git a/src/auth.ts b/src/auth.ts\n@@ -12,7 +12,9 @@ export async function login(\n"
        "-  const token = await fetchToken(user)\n"
        "+  const token = await fetchToken(user, { retry: 3 })\n"
        "+  if (!token) throw new AuthError('no token for ' + user.name)\n   return token\n")
JSON_DOC = json.dumps({"name": "reverie-demo", "version": "0.4.1", "scripts": {
    "test": "pytest -q", "lint": "ruff check ."}, "dependencies": {"httpx": "^0.27",
    "pydantic": "^2.7"}, "password_min_length": 12, "tokenizer": "cl100k_base"}, indent=2)


def planted(rng: random.Random) -> str:
    """One realistic secret in context (built from pieces: nothing secret-shaped in the repo)."""
    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

    def tok(n: int) -> str:
        return "".join(rng.choice(alnum) for _ in range(n))

    return rng.choice([
        f"export OPENAI_API_KEY=sk-proj-{tok(40)}",
        f"DATABASE_URL=postgres://app:{tok(16)}@db.internal:5432/app",
        f'{{"api_key": "{tok(32)}"}}',
        f"curl -H 'Authorization: Bearer {tok(40)}' https://api.example.com",
        f"git remote add origin https://x-access-token:ghp_{tok(36)}@github.com/o/r.git",
        f"aws_secret_access_key = {tok(30)}/{tok(9)}",
    ])


def _fixture_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            texts.extend(_strings_in(record))
    return [t for t in texts if len(t) > 20]


def _strings_in(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings_in(item)


def generate_session(
    rng: random.Random, real: list[str], target_chars: int
) -> list[dict[str, object]]:
    """Claude Code records until about ``target_chars`` of content."""
    records: list[dict[str, object]] = []
    size = since_secret = 0
    n = 0
    while size < target_chars:
        n += 1
        secret = ""
        if since_secret > 20_000:
            secret, since_secret = planted(rng), 0
        prompt = rng.choice(real)[:400] + ("\n" + secret if secret and n % 2 else "")
        reply = rng.choice(real)[:1500] + "\n```python\n" + CODE + "```\n"
        command = rng.choice(["pytest -q tests/unit", "git status --short", "ruff check server",
                              "ls -la src", "npm run build"])
        body = "\n".join(rng.choice([CODE, LOG, DIFF, JSON_DOC, rng.choice(real)[:6000]])
                         for _ in range(rng.randint(2, 12)))
        if secret and not n % 2:
            body += "\n" + secret
        uid = f"u{n}"
        records += [
            {"type": "user", "message": {"role": "user", "content": prompt}},
            {"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": reply},
                {"type": "tool_use", "id": uid, "name": "Bash", "input": {"command": command}},
                {"type": "tool_use", "id": uid + "e", "name": "Edit", "input": {
                    "file_path": "src/settings.py", "old_string": CODE[:200],
                    "new_string": CODE[:200].replace("4096", "8192")}}]}},
            {"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": uid, "content": body}]}},
        ]
        chunk = len(prompt) + len(reply) + len(command) + len(body) + 400
        size += chunk
        since_secret += chunk
    return records


def _cpu_and_wall(func: Callable[[], None]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    func()
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=20.0, help="corpus size in MB")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    real = _fixture_texts()
    sessions = [generate_session(rng, real, 2_000_000) for _ in range(int(args.mb / 2) or 1)]
    files = ["\n".join(json.dumps(r) for r in records) + "\n" for records in sessions]
    strings = [s for records in sessions for r in records for s in _strings_in(r["message"])
               if s not in ("user", "assistant", "text", "tool_use", "tool_result")]
    ok = True

    def report(name: str, chars: int, cpu: float, wall: float) -> None:
        nonlocal ok
        mb = chars / 1e6
        print(f"{name:8s} {mb:7.1f} MB  {mb / cpu:6.1f} MB/s cpu  {mb / wall:6.1f} MB/s wall")
        ok = ok and mb / cpu >= TARGET_MB_S

    found = 0

    def run_strings() -> None:
        nonlocal found
        for s in strings:
            found += redact(s)[1]

    cpu, wall = _cpu_and_wall(run_strings)
    report("strings", sum(map(len, strings)), cpu, wall)
    print(f"         {len(strings)} strings, {found} secrets redacted")
    cpu, wall = _cpu_and_wall(lambda: [redact(f) for f in files])
    report("files", sum(map(len, files)), cpu, wall)
    parse, _ = _cpu_and_wall(lambda: [[json.loads(line) for line in f.splitlines()] for f in files])
    print(f"         {cpu / parse:.2f}x the CPU time of json.loads on every line of the same files "
          f"(machine-independent; the parse every transcript read costs anyway)")

    size = 1_000_000
    normal = "".join(files)[:size]
    base, _ = _cpu_and_wall(lambda: redact(normal))
    print(f"pathological 1 MB lines, CPU time relative to 1 MB of corpus ({base * 1000:.1f} ms):")
    worst = 0.0
    for name, line in pathological_lines(size).items():
        cpu, _ = _cpu_and_wall(lambda line=line: redact(line))  # type: ignore[misc]
        worst = max(worst, cpu / base)
        print(f"  {name:14s} {cpu / base:6.2f}x")
    print(f"worst ratio {worst:.2f}x (limit {MAX_RATIO:.0f}x)")
    ok = ok and worst <= MAX_RATIO
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
