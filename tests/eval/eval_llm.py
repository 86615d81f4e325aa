"""The model-backed writers on the evaluation set, against the fake LLM server (issue 12.4).

Same projects, same CLI runs as ``eval_harness`` (``reverie notes``, ``reverie dream --manual``
after each session, ``reverie sleep --date D`` per day), but with ``REVERIE_PROVIDER=openai``
pointed at ``support.fake_llm.FakeLLMServer`` (real HTTP on 127.0.0.1). Two questions:

1. Do the prompts carry what a model needs? For each dream / REM request, from the request
   bodies the server recorded:
   - ``facts``: share of the labelled durable facts of the sessions under review whose pattern
     matches the first request of the run (the brief), i.e. the candidate facts are *in* the
     prompt rather than left for the model to dig out of transcript files;
   - ``evidence``: the brief names a reviewed session together with a date (same line or the
     two lines after it), so a fact can be traced and ordered in time;
   - ``memory``: from the second run on, the brief contains what memory held before the run
     (a marker line the fake model wrote in the previous run);
   - ``newer_wins``: the brief says a newer statement about the same subject replaces (corrects)
     the older one; ``formerly``: and that the older survives only as history ("formerly X,
     replaced by Y on DATE"), never as a current fact;
   - ``noise_rule``: the brief says what never to keep (exploration commands, tool slips, one-off
     requests);
   - ``secrets_sent``: planted secrets found in any request body (must be 0).
2. Does model output go through the same validation? The fake model answers every dream with
   a topic file and an index holding a marker, a 200-character index line, an exploration
   command, a tool slip and two invented secrets (a GitHub token, an AWS key); every night's
   summaries propose the same kinds of candidates and REM returns them as entries, one with a
   190-character description. Afterwards: ``long_index`` (MEMORY.md lines > 150), ``secrets_kept``
   (the invented secrets still in memory) and ``noise_kept`` (exploration / slip lines kept).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from reverie.config import ProjectPaths, Settings
from support.fake_llm import BatchBehaviour, FakeLLMServer, FakeRequest, Step, ToolCallSpec

from .eval_harness import Fixture, Sandbox, _environment, memory_files, run_cli
from .eval_score import GLOBAL_NOISE, Entry, entries_of, expected_facts

INVENTED_GITHUB = "ghp_Z9yX8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8c"
INVENTED_AWS = "AKIAZ7QW3ERT5YUI9OPL"
INVENTED = (INVENTED_GITHUB, INVENTED_AWS)
EXPLORE = "`ls -la` lists the project root"
SLIP = "Edit failed: File has not been read yet. Read it first before writing to it."
LONG_HOOK = "how the project is built, tested, linted and deployed, " * 4

_NEWER_WINS = re.compile(r"supersed|contradict|newer .{0,60}(wins|replaces|overrides|takes)|"
                         r"replaces? the (old|earlier)|correct the old", re.I)
_FORMERLY = re.compile(r"formerly|replaced (by|on)|previously|no longer current|as history", re.I)
_NOISE_RULE = re.compile(r"exploration|tool[- ](protocol )?(error|slip|mistake)s?|protocol "
                         r"(error|slip)s?|one-off (task|request|change)s?", re.I)
_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
_DATA_START = re.compile(r"^#+ *(current memory|today.s journal|new candidates|session\b|daily "
                         r"log entries|context from the user)|<conversation>", re.I | re.M)


@dataclass
class RunCheck:
    """What one dream (or one night's REM) was asked."""

    kind: str
    facts_expected: int = 0
    facts_in_prompt: int = 0
    evidence: bool = False
    memory: bool | None = None  # None: nothing was in memory before this run
    newer_wins: bool = False
    formerly: bool = False
    noise_rule: bool = False


@dataclass
class LlmResult:
    path: str
    project: str
    runs: list[RunCheck] = field(default_factory=list)
    secrets_sent: int = 0
    wrappers_sent: int = 0  # notes-writer requests that carry raw agent wrappers
    long_index: int = 0
    secrets_kept: int = 0
    noise_kept: int = 0
    errors: list[str] = field(default_factory=list)
    requests: int = 0

    def summary(self) -> dict[str, Any]:
        runs = self.runs
        expected = sum(r.facts_expected for r in runs)
        with_memory = [r for r in runs if r.memory is not None]
        return {
            "path": self.path, "project": self.project, "runs": len(runs),
            "requests": self.requests,
            "facts_in_prompt": (sum(r.facts_in_prompt for r in runs) / expected
                                if expected else None),
            "evidence": _share([r.evidence for r in runs]),
            "memory": _share([bool(r.memory) for r in with_memory]),
            "newer_wins": _share([r.newer_wins for r in runs]),
            "formerly": _share([r.formerly for r in runs]),
            "noise_rule": _share([r.noise_rule for r in runs]),
            "secrets_sent": self.secrets_sent, "wrappers_sent": self.wrappers_sent,
            "long_index": self.long_index,
            "secrets_kept": self.secrets_kept, "noise_kept": self.noise_kept,
            "errors": self.errors,
        }


def _share(flags: list[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


class FakeModel:
    """A model that does what the prompts ask badly on purpose (see the module docstring)."""

    def __init__(self) -> None:
        self.run = 0  # dream runs / REM nights answered so far
        self.today = date(2026, 11, 1)

    def marker(self, run: int | None = None) -> str:
        return f"eval-marker-{self.run if run is None else run}"

    def __call__(self, request: FakeRequest) -> Step | None:
        tools = set(request.tool_names)
        schema = json.dumps(request.body.get("response_format") or {})
        if "write_file" in tools:
            return self._dream(request)
        if tools == {"edit_file"}:
            return Step.reply("The notes already cover this session.")
        if "memory_candidates" in schema:
            return self._summary()
        if "entries" in schema:
            return self._rem()
        return None

    def _dream(self, request: FakeRequest) -> Step:
        if request.turn > 1:
            return Step.reply("Updated the project facts topic.")
        self.run += 1
        topic = ("---\nname: Project facts\ndescription: what the project runs on\ntype: project"
                 f"\n---\n\n- {self.marker()}: written by dream run {self.run}\n- {EXPLORE}\n"
                 f"- {SLIP}\n- CI token {INVENTED_GITHUB}\n- Deploy key {INVENTED_AWS}\n")
        index = f"# Memory\n\n- [Project facts](project-facts.md) - {LONG_HOOK.strip()}\n"
        return Step.tool_calls(
            ToolCallSpec(name="write_file", arguments={"file_path": "project-facts.md",
                                                       "content": topic}),
            ToolCallSpec(name="write_file", arguments={"file_path": "MEMORY.md",
                                                       "content": index}),
        )

    def _summary(self) -> Step:
        return Step.json_reply({"summary": "Worked on the project.", "memory_candidates": [
            {"key": "explore", "value": EXPLORE},
            {"key": "slip", "value": SLIP},
            {"key": "ci-token", "value": f"The CI token is {INVENTED_GITHUB}."},
        ]})

    def _rem(self) -> Step:
        self.run += 1
        day = self.today.isoformat()
        entries = [
            {"key": self.marker(), "title": "Marker", "description": "eval marker",
             "type": "project", "content": f"{self.marker()}: written by night {self.run}",
             "recorded": day},
            {"key": "build-and-release", "title": "Build, test, lint and release " * 3,
             "description": LONG_HOOK[:190], "type": "project",
             "content": "See the scripts.", "recorded": day},
            {"key": "explore", "title": "Exploring", "description": "listing files",
             "type": "project", "content": EXPLORE, "recorded": day},
            {"key": "slip", "title": "Edit slip", "description": "a tool slip", "type": "project",
             "content": SLIP, "recorded": day},
            {"key": "ci-token", "title": "CI token", "description": "credentials",
             "type": "reference", "content": f"CI token {INVENTED_GITHUB}, deploy key "
                                             f"{INVENTED_AWS}", "recorded": day},
        ]
        return Step.json_reply({"entries": entries})


_WRAPPERS = re.compile(r"<ide_opened_file>|<task-notification>|<command-name>/clear|"
                       r"<local-command-stdout>|Please analy[sz]e this codebase")


def _is_notes(body: dict[str, Any]) -> bool:
    tools = {(t.get("function") or {}).get("name") or t.get("name")
             for t in body.get("tools") or []}
    return tools == {"edit_file"}


def _request_text(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False)


def _first_requests(bodies: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The first request of every dream run (no assistant turn yet) / every REM request."""
    out = []
    for body in bodies:
        tools = {(t.get("function") or {}).get("name") or t.get("name")
                 for t in body.get("tools") or []}
        schema = json.dumps(body.get("response_format") or {})
        roles = [m.get("role") for m in body.get("messages", [])]
        if kind == "dream" and "write_file" in tools and "assistant" not in roles:
            out.append(body)
        elif kind == "sleep" and '"entries"' in schema:
            out.append(body)
    return out


def _check(body: dict[str, Any], kind: str, fixture: Fixture, keys: list[str],
           previous_marker: str | None) -> RunCheck:
    text = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    entry = Entry("prompt", text)
    # the rules are judged on the instructions: the system message plus the user message
    # without its data (lines naming a session or a sandbox path, and every data section)
    ids = [s.session_id[:8] for s in fixture.sessions]
    data = _DATA_START.search(text)
    kept = [line for line in (text[:data.start()] if data else text).splitlines()
            if not any(i in line for i in ids) and "/tmp" not in line and "/home/" not in line]
    system = "\n".join(str(m.get("content")) for m in body.get("messages", [])
                       if m.get("role") == "system")
    instructions = system + "\n" + "\n".join(kept)
    facts = [f for f in expected_facts(fixture.labels, "memory")
             if any(k in f.sessions for k in keys)]
    reviewed = [s.session_id[:8] for s in fixture.sessions if s.key in keys]
    lines = text.splitlines()
    evidence = any(any(i in line for i in reviewed)
                   and any(_DATE.search(near) for near in lines[n:n + 3])
                   for n, line in enumerate(lines))
    return RunCheck(
        kind=kind,
        facts_expected=len(facts),
        facts_in_prompt=sum(1 for f in facts if f.matches(entry)),
        evidence=evidence,
        memory=None if previous_marker is None else previous_marker in text,
        newer_wins=bool(_NEWER_WINS.search(instructions)),
        formerly=bool(_FORMERLY.search(instructions)),
        noise_rule=bool(_NOISE_RULE.search(instructions)),
    )


def _kept(files: dict[str, str]) -> tuple[int, int, int]:
    long_index = sum(1 for line in files.get("MEMORY.md", "").splitlines() if len(line) > 150)
    secrets = sum(text.count(s) for text in files.values() for s in INVENTED)
    noise_patterns = [re.compile(rx, re.I | re.M) for _, rx in GLOBAL_NOISE[:4]]
    noise = 0
    for name, text in files.items():
        for e in entries_of(text, name):
            if any(p.search(e.text) for p in noise_patterns):
                noise += 1
    return long_index, secrets, noise


def run_llm_project(name: str, *, keep: Path | None = None) -> list[LlmResult]:
    fixture = Fixture.load(name)
    secrets = fixture.labels.secrets
    out: list[LlmResult] = []
    with contextlib.ExitStack() as stack:
        base = keep / f"{name}-llm" if keep else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix=f"reverie-eval-llm-{name}-")))
        for path in ("dream", "sleep"):
            model = FakeModel()
            server = stack.enter_context(FakeLLMServer(
                fallback=model, batch=BatchBehaviour(polls_before_done=0)))
            extra = {"REVERIE_PROVIDER": "openai", "REVERIE_BASE_URL": server.base_url,
                     "REVERIE_API_KEY": "test-key", "REVERIE_MAX_RETRIES": "0",
                     "REVERIE_MODEL": "fake-model"}
            box = Sandbox(base / path, fixture)
            result = LlmResult(path, name)
            runs: list[list[str]] = []  # session keys each run reviewed
            if path == "dream":
                for entry in fixture.sessions:
                    _, session_id = box.install(entry)
                    run_cli(["notes", session_id, "--workspace", str(box.workspace), "--force",
                             "--json"], box.env(), extra_env=extra)
                    code, _, _ = run_cli(["dream", "--manual", "--workspace",
                                          str(box.workspace), "--json"], box.env(),
                                         extra_env=extra)
                    if code:
                        result.errors.append(f"dream after {entry.key}: exit {code}")
                    runs.append([entry.key])
            else:
                for entry in fixture.sessions:
                    target, session_id = box.install(entry, mtime=entry.end.timestamp())
                    run_cli(["notes", session_id, "--workspace", str(box.workspace), "--force",
                             "--json"], box.env(), extra_env=extra)
                    os.utime(target, (entry.end.timestamp(), entry.end.timestamp()))
                for day in sorted({e.end.date() for e in fixture.sessions}):
                    model.today = day
                    code, _, _ = run_cli(["sleep", "--workspace", str(box.workspace), "--date",
                                          day.isoformat(), "--json"], box.env(),
                                         extra_env=extra)
                    if code:
                        result.errors.append(f"sleep {day}: exit {code}")
                    # the review window of ``--date D`` runs from D 00:00 to D+2 00:00
                    # (sleep/light.py): sessions that ended on D or on D+1
                    window = [e.key for e in fixture.sessions
                              if (e.end.date() - day).days in (0, 1)]
                    runs.append(window)
            bodies = [r.json for r in server.model_requests() if isinstance(r.json, dict)]
            result.requests = len(bodies)
            result.secrets_sent = sum(_request_text(b).count(s) for b in bodies for s in secrets)
            result.wrappers_sent = sum(1 for b in bodies if _is_notes(b)
                                       and _WRAPPERS.search(_request_text(b)))
            firsts = _first_requests(bodies, path)
            for n, body in enumerate(firsts):
                keys = runs[n] if n < len(runs) else []
                previous = model.marker(n) if n >= 1 else None
                result.runs.append(_check(body, path, fixture, keys, previous))
            with _environment(box.env()):
                memory_dir = ProjectPaths(Settings(), box.workspace).memory_dir
            result.long_index, result.secrets_kept, result.noise_kept = _kept(
                memory_files(memory_dir))
            out.append(result)
    return out


def run_llm_all(names: list[str], *, keep: Path | None = None) -> list[LlmResult]:
    out: list[LlmResult] = []
    for name in names:
        out += run_llm_project(name, keep=keep)
    return out


def pooled(results: list[LlmResult]) -> dict[str, LlmResult]:
    """One result per path, runs and counts pooled over the projects."""
    out: dict[str, LlmResult] = {}
    for r in results:
        total = out.setdefault(r.path, LlmResult(r.path, "ALL"))
        total.runs += r.runs
        for name in ("secrets_sent", "wrappers_sent", "long_index", "secrets_kept", "noise_kept",
                     "requests"):
            setattr(total, name, getattr(total, name) + getattr(r, name))
        total.errors += r.errors
    return out


def llm_table(results: list[LlmResult]) -> str:
    def pct(value: float | None) -> str:
        return "   -" if value is None else f"{value * 100:3.0f}%"

    head = (f"{'llm':<6} {'project':<13} {'runs':>4} {'facts':>5} {'evid':>5} {'memory':>6} "
            f"{'newer':>5} {'formr':>5} {'noise':>5} | {'sent':>4} {'wrap':>4} {'>150':>4} "
            f"{'kept':>4} {'noise':>5}")
    rows = [head, "-" * len(head)]
    totals = pooled(results)
    for r in [*results, *totals.values()]:
        d = r.summary()
        rows.append(f"{r.path:<6} {r.project:<13} {d['runs']:>4} {pct(d['facts_in_prompt']):>5} "
                    f"{pct(d['evidence']):>5} {pct(d['memory']):>6} {pct(d['newer_wins']):>5} "
                    f"{pct(d['formerly']):>5} {pct(d['noise_rule']):>5} | "
                    f"{r.secrets_sent:>4} {r.wrappers_sent:>4} {r.long_index:>4} "
                    f"{r.secrets_kept:>4} "
                    f"{r.noise_kept:>5}")
    rows.append("prompt: facts = labelled facts of the reviewed sessions found in the brief; evid ="
                " sessions named with dates; memory = previous memory in the brief; newer/formr ="
                " supersession rule (newer wins / old kept only as history); noise = never-keep"
                " rule. sent = planted secrets in requests; wrap = notes requests carrying raw"
                " wrappers (/clear, IDE block, task notification, /init prompt). output: >150 ="
                " long index lines;"
                " kept = invented secrets kept; noise = exploration / slip lines kept.")
    return "\n".join(rows)
