"""Run the real CLI entry points over the evaluation projects and score what they remember.

For each project (``tests/fixtures/eval/<name>/``) in a fresh temp directory:

- ``notes`` + ``dream``: the sessions arrive one at a time, in the order they happened, each
  copied into a fake agent home in its agent's layout (working directory rewritten to a temp
  workspace); after each one ``reverie notes <id> --force`` and ``reverie dream --manual`` run,
  as a user's editor would. The notes of every session and the memory dir after the last
  dream are scored.
- ``sleep``: a second data dir; all sessions installed with their real end times as mtimes,
  notes written, then ``reverie sleep --date D`` for each day that had sessions (a nightly run).

Commands run in-process through ``reverie.cli.main`` (the ``reverie`` console script's entry
point) with ``REVERIE_AGENT_HOME`` / ``REVERIE_DATA_DIR`` / ``REVERIE_CONFIG_DIR`` pointing at
the temp dirs, ``REVERIE_PROVIDER=offline`` and ``TZ=UTC``; ``subprocess=True`` runs
``python -m reverie`` instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import subprocess as sp
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .eval_score import Labels, Score, expected_facts, load_labels, score_files

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eval"
#: real public sessions, labelled by hand (``real_eval.py``)
REAL_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real"
PATHS = ("notes", "dream", "sleep")
_AIDER_HEADER = re.compile(r"^# aider chat started at (\S+ \S+)", re.MULTILINE)
_CLEARED_ENV = ("REVERIE_PROVIDER", "REVERIE_MODEL", "REVERIE_BASE_URL", "REVERIE_API_KEY",
                "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def project_names(root: Path = FIXTURES) -> list[str]:
    return sorted(p.name for p in root.iterdir() if (p / "labels.toml").is_file())


@dataclass
class SessionEntry:
    key: str
    agent: str
    session_id: str
    path: str
    start: datetime
    end: datetime


@dataclass
class Fixture:
    name: str
    root: Path
    workspace: str
    sessions: list[SessionEntry]
    labels: Labels

    @classmethod
    def load(cls, name: str, fixtures: Path = FIXTURES) -> Fixture:
        root = fixtures / name
        manifest = json.loads((root / "sessions.json").read_text("utf-8"))
        sessions = [SessionEntry(s["key"], s["agent"], s["session_id"], s["path"],
                                 _utc(s["start"]), _utc(s["end"]))
                    for s in manifest["sessions"]]
        return cls(name, root, manifest["workspace"], sessions,
                   load_labels(root / "labels.toml"))

    def content(self, entry: SessionEntry) -> str:
        text = (self.root / entry.path).read_text("utf-8")
        if entry.agent != "aider":
            return text
        runs = [s for s in self.sessions if s.agent == "aider" and s.path == entry.path]
        starts = [m.start() for m in _AIDER_HEADER.finditer(text)] + [len(text)]
        n = runs.index(entry)
        return text[starts[n]:starts[n + 1]]


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def _slug(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


class Sandbox:
    """A temp agent home, data dir, config dir and workspace for one engine path."""

    def __init__(self, base: Path, fixture: Fixture) -> None:
        self.fixture = fixture
        self.agent_home = base / "home"
        self.data_dir = base / "data"
        self.config_dir = base / "config"
        self.workspace = base / "work" / fixture.name
        for path in (self.agent_home, self.data_dir, self.config_dir, self.workspace):
            path.mkdir(parents=True, exist_ok=True)
        (self.workspace / ".git").mkdir(exist_ok=True)  # Aider looks for its history up to here

    def aliases(self) -> dict[str, str]:
        """Sandbox paths -> the placeholders the scorer sees."""
        return {str(self.workspace): "<workspace>", str(self.agent_home): "<agent-home>",
                str(self.data_dir): "<data-dir>"}

    def env(self) -> dict[str, str]:
        return {"REVERIE_AGENT_HOME": str(self.agent_home), "REVERIE_DATA_DIR": str(self.data_dir),
                "REVERIE_CONFIG_DIR": str(self.config_dir), "REVERIE_PROVIDER": "offline",
                "TZ": "UTC"}

    def target(self, entry: SessionEntry) -> Path:
        ws = str(self.workspace)
        rel = entry.path.removeprefix("home/")
        if entry.agent == "claude-code":
            return self.agent_home / ".claude" / "projects" / _slug(ws) / Path(rel).name
        if entry.agent == "gemini-cli":
            project = hashlib.sha256(ws.encode()).hexdigest()
            return self.agent_home / ".gemini" / "tmp" / project / "chats" / Path(rel).name
        if entry.agent == "aider":
            return self.workspace / ".aider.chat.history.md"
        return self.agent_home / rel

    def memory_dir(self) -> Path:
        from reverie.config import ProjectPaths, Settings

        with _environment(self.env()):
            return ProjectPaths(Settings(), self.workspace).memory_dir

    def seed_hand_written(self) -> None:
        """What the user wrote into memory by hand before the first session (labels ``[[hand]]``):
        a topic file and its index line, as a person would add them."""
        hand = self.fixture.labels.hand
        if not hand:
            return
        memory = self.memory_dir()
        memory.mkdir(parents=True, exist_ok=True)
        lines = "".join(f"- {text}\n" for _, text in hand)
        (memory / "team-notes.md").write_text(
            "---\nname: Team notes\ndescription: conventions the team wrote down\ntype: project"
            f"\n---\n\n# Team notes\n\n{lines}", "utf-8")
        (memory / "MEMORY.md").write_text(
            "# Memory\n\n- [Team notes](team-notes.md) - conventions the team wrote down\n",
            "utf-8")

    def install(self, entry: SessionEntry, mtime: float | None = None) -> tuple[Path, str]:
        """Copy one session in; returns its file and the session id discovery will give it."""
        text = self.fixture.content(entry).replace(self.fixture.workspace, str(self.workspace))
        target = self.target(entry)
        target.parent.mkdir(parents=True, exist_ok=True)
        session_id = entry.session_id
        if entry.agent == "aider":
            offset = target.stat().st_size if target.exists() else 0
            with target.open("a", encoding="utf-8") as handle:
                handle.write(text)
            session_id = f"aider-{entry.start:%Y%m%dT%H%M%S}-{offset}"
        else:
            target.write_text(text, "utf-8")
        if mtime is not None:
            os.utime(target, (mtime, mtime))
        return target, session_id


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in (*values, *_CLEARED_ENV)}
    for key in _CLEARED_ENV:
        os.environ.pop(key, None)
    os.environ.update(values)
    if hasattr(time, "tzset"):
        time.tzset()
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if hasattr(time, "tzset"):
            time.tzset()


def run_cli(argv: list[str], env: dict[str, str], *, subprocess: bool = False,
            extra_env: dict[str, str] | None = None) -> tuple[int, str, float]:
    """Run ``reverie ARGV``; returns (exit code, stdout, seconds)."""
    values = {**env, **(extra_env or {})}
    started = time.perf_counter()
    if subprocess:
        full = {k: v for k, v in os.environ.items() if k not in _CLEARED_ENV}
        full.update(values)
        proc = sp.run([sys.executable, "-m", "reverie", *argv], env=full, capture_output=True,
                      text=True, check=False)
        if proc.returncode:
            sys.stderr.write(proc.stderr)
        return proc.returncode, proc.stdout, time.perf_counter() - started
    from reverie.cli import main

    out = io.StringIO()
    with _environment(values), contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue(), time.perf_counter() - started


def memory_files(memory_dir: Path) -> dict[str, str]:
    if not memory_dir.is_dir():
        return {}
    return {p.relative_to(memory_dir).as_posix(): p.read_text("utf-8", errors="replace")
            for p in sorted(memory_dir.rglob("*.md"))
            if ".reverie" not in p.relative_to(memory_dir).parts}


@dataclass
class PathResult:
    path: str
    project: str
    score: Score
    seconds: float = 0.0
    engine_seconds: float = 0.0  # what the dream job itself reported (duration_ms)
    runs: int = 0
    sessions: int = 0
    entries: int = 0  # memory entries (topic-file lines) the path left
    files: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    per_session: dict[str, dict[str, Any]] = field(default_factory=dict)
    heldout: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "project": self.project, **self.score.as_json(),
                "seconds": round(self.seconds, 3),
                "engine_seconds": round(self.engine_seconds, 3), "runs": self.runs,
                "sessions": self.sessions,
                "seconds_per_session": round(self.seconds / self.sessions, 4)
                if self.sessions else None,
                "entries": self.entries, "errors": self.errors, "heldout": self.heldout,
                "per_session": self.per_session}


def _json(stdout: str) -> dict[str, Any]:
    try:
        value = json.loads(stdout)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _notes(sandbox: Sandbox, session_id: str, subprocess: bool,
           extra_env: dict[str, str] | None, timing: PathResult | None = None,
           ) -> tuple[str, str | None]:
    code, out, seconds = run_cli(["notes", session_id, "--workspace", str(sandbox.workspace),
                            "--force", "--json"], sandbox.env(), subprocess=subprocess,
                           extra_env=extra_env)
    if timing is not None:
        timing.seconds += seconds
        timing.runs += 1
    path = _json(out).get("notes_path")
    if code or not path or not Path(path).is_file():
        return "", f"notes for {session_id} failed (exit {code})"
    return Path(path).read_text("utf-8"), None


def _entry_count(files: dict[str, str]) -> int:
    from .eval_score import entries_of

    return sum(len(entries_of(text, name)) for name, text in files.items() if name != "MEMORY.md")


def run_project(name: str, *, paths: tuple[str, ...] = PATHS, subprocess: bool = False,
                keep: Path | None = None, extra_env: dict[str, str] | None = None,
                fixtures: Path = FIXTURES) -> list[PathResult]:
    fixture = Fixture.load(name, fixtures)
    labels = fixture.labels
    results: list[PathResult] = []
    with contextlib.ExitStack() as stack:
        base = keep / name if keep else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix=f"reverie-eval-{name}-")))
        if {"notes", "dream"} & set(paths):
            box = Sandbox(base / "dream", fixture)
            notes = PathResult("notes", name, Score())
            dream = PathResult("dream", name, Score())
            memory_dir: Path | None = None
            if "dream" in paths:
                box.seed_hand_written()
            for entry in fixture.sessions:
                _, session_id = box.install(entry)
                text, error = _notes(box, session_id, subprocess, extra_env, notes)
                if error:
                    notes.errors.append(error)
                session_score = score_files({f"{entry.key}.md": text} if text else {}, labels,
                                            "notes", expected_facts(labels, "notes", entry.key),
                                            aliases=box.aliases())
                # per-session ids, so a fact missed in one session's notes shows as missed
                session_score.expected = [f"{entry.key}:{f}" for f in session_score.expected]
                session_score.matched = [f"{entry.key}:{f}" for f in session_score.matched]
                notes.score.merge(session_score)
                notes.per_session[entry.key] = {
                    "recall": session_score.recall, "precision": session_score.precision,
                    "wrong": session_score.wrong, "missed": session_score.missed}
                notes.files[f"{entry.key}.md"] = text
                notes.sessions += 1
                if "dream" not in paths:
                    continue
                code, out, seconds = run_cli(
                    ["dream", "--manual", "--workspace", str(box.workspace), "--json"],
                    box.env(), subprocess=subprocess, extra_env=extra_env)
                result = _json(out)
                dream.seconds += seconds
                dream.engine_seconds += (result.get("duration_ms") or 0) / 1000
                dream.runs += 1
                dream.sessions += 1
                if code or not result.get("memory_dir"):
                    dream.errors.append(f"dream after {entry.key} failed (exit {code})")
                else:
                    memory_dir = Path(result["memory_dir"])
            if "notes" in paths:
                results.append(notes)
            if "dream" in paths:
                dream.files = memory_files(memory_dir) if memory_dir else {}
                dream.score = score_files(dream.files, labels, "memory",
                                          expected_facts(labels, "memory"),
                                          aliases=box.aliases())
                dream.entries = _entry_count(dream.files)
                results.append(dream)
        if "sleep" in paths:
            results.append(_sleep(fixture, Sandbox(base / "sleep", fixture), subprocess,
                                  extra_env))
    return results


def _sleep(fixture: Fixture, box: Sandbox, subprocess: bool,
           extra_env: dict[str, str] | None) -> PathResult:
    result = PathResult("sleep", fixture.name, Score())
    box.seed_hand_written()
    for entry in fixture.sessions:
        target, session_id = box.install(entry, mtime=entry.end.timestamp())
        _text, error = _notes(box, session_id, subprocess, extra_env)
        if error:
            result.errors.append(error)
        os.utime(target, (entry.end.timestamp(), entry.end.timestamp()))
    days = sorted({e.end.date() for e in fixture.sessions})
    for day in days:
        code, out, seconds = run_cli(["sleep", "--workspace", str(box.workspace), "--date",
                                      day.isoformat(), "--json"], box.env(),
                                     subprocess=subprocess, extra_env=extra_env)
        result.seconds += seconds
        result.runs += 1
        report = _json(out)
        if code or not report:
            result.errors.append(f"sleep {day} failed (exit {code})")
    result.sessions = len(fixture.sessions)
    result.files = memory_files(box.memory_dir())
    result.score = score_files(result.files, fixture.labels, "memory",
                               expected_facts(fixture.labels, "memory"), aliases=box.aliases())
    result.entries = _entry_count(result.files)
    return result


def run_all(names: list[str] | None = None, **kwargs: Any) -> list[PathResult]:
    out: list[PathResult] = []
    for name in names or project_names():
        results = run_project(name, **kwargs)
        heldout = Fixture.load(name).labels.heldout
        for result in results:
            result.heldout = heldout
        out += results
    return out


def pool(results: list[PathResult], *, heldout: bool = False) -> dict[str, PathResult]:
    """One result per engine path over the tuned projects (or over the held-out ones)."""
    out: dict[str, PathResult] = {}
    for result in results:
        if result.heldout != heldout:
            continue
        total = out.setdefault(result.path, PathResult(result.path,
                                                       "HELD-OUT" if heldout else "ALL",
                                                       Score(), heldout=heldout))
        total.score.merge(result.score)
        total.seconds += result.seconds
        total.engine_seconds += result.engine_seconds
        total.runs += result.runs
        total.sessions += result.sessions
        total.entries += result.entries
        total.errors += result.errors
    return out
