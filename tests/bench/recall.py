"""Retrieval quality of ``reverie search`` on a labelled set: hit@5 and MRR.

The set (``tests/fixtures/recall/questions.toml``, 67 questions) covers the five evaluation
projects of ``tests/fixtures/eval`` (their sessions installed in each agent's real layout, their
gold memory as the project's memory) and the real transcripts of ``tests/fixtures/transcripts``
(installed as one project, their cwd rewritten). Each question is searched in its own project
through ``reverie.services.search.search_project``, the CLI's and the MCP server's path.

Also counted, and required to be 0: hits that belong to another project (every question is
asked in every other project too) and planted secrets in any hit or anywhere in the index
files. The prompt hook's bar is measured on the same set: how many questions it would answer
(recall), and how many of 36 unrelated prompts it wrongly answers (in each project).

Run: ``.venv/bin/python tests/bench/recall.py`` (``--verbose`` lists every question's ranks).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if __name__ == "__main__":
    # run by hand (tests/bench/recall.py): tests/ replaces this folder on sys.path, as
    # pytest's pythonpath has it
    sys.path[0] = str(TESTS)

from eval.eval_harness import Fixture, Sandbox, project_names
from eval.eval_projects import DB_PASSWORD, GITHUB_TOKEN, STRIPE_KEY
from reverie.config import ProjectPaths, Settings, claude_project_slug
from reverie.search.recall import recall
from reverie.search.update import index_path, open_index, refresh
from reverie.services.search import SearchResult, search_project
from reverie.transcripts.reader import TranscriptReader

QUESTIONS = TESTS / "fixtures" / "recall" / "questions.toml"
REAL = TESTS / "fixtures" / "transcripts"
SECRETS = (GITHUB_TOKEN, DB_PASSWORD, STRIPE_KEY)
#: the real transcripts that make up the "real" project (sub-agent files ride along)
REAL_FILES = (
    "claude-code/spotter-v2.1.38-tool-heavy/tool_heavy.jsonl",
    "claude-code/codemie-v2.0.64-sibling-agent-files/-tmp-private/"
    "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
    "claude-code/claude-code-viewer-v1.0.108-inline-sidechains/sample-project/"
    "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "claude-code/codemie-v2.1.7-incremental-subagents/turn-2.jsonl",
    "codex/codemie-code/sessions/2026/05/11/"
    "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    "codex/codemie-code/sessions/2026/05/11/"
    "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
    "codex/codemie-code/sessions/2026/01/02/"
    "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl",
    "gemini-cli/codemie-code/chats/session-2025-12-01T21-45-5b959dae.json",
    "gemini-cli/codemie-code/chats/session-2026-01-16T11-01-file-ops-37b7abef.json",
)
#: prompts that have nothing to do with any project: the hook must add nothing
UNRELATED = (
    "write a haiku about autumn", "hello", "thanks, that's all", "what time is it in Tokyo?",
    "explain the difference between TCP and UDP", "tell me a joke", "how do I boil an egg?",
    "what is the capital of Australia", "translate good morning into Spanish",
    "summarise the plot of Hamlet", "what's 17 times 23", "recommend a good sci-fi novel",
    "who won the world cup in 2018", "convert 5 miles to kilometres", "ok", "continue",
    "yes please", "how tall is Mount Everest", "write a limerick about a cat",
    "what does HTTP 418 mean", "explain quantum entanglement simply",
    "draft a birthday message for my sister", "list three prime numbers",
    "how do vaccines work", "what is the speed of light", "name a famous painter",
    "give me a pasta recipe", "what's the weather like on Mars", "define serendipity",
    "how many continents are there",
    # everyday words that also occur in the projects' sessions
    "how do I fix a flat tyre on my bike", "run a quick test of my microphone",
    "help me build a birdhouse from scrap wood", "what error did the referee make last night",
    "rename my cat, suggest some names", "push the car start button twice?",
)


@dataclass
class Project:
    name: str
    settings: Settings
    workspace: Path
    #: session key (eval) or id (real) → the session id discovery gives it
    sessions: dict[str, str]
    memory_texts: list[str] = field(default_factory=list)


@dataclass
class Scores:
    questions: int = 0
    hits_at_5: int = 0
    reciprocal: float = 0.0
    foreign: int = 0
    secrets: int = 0
    hook_answered: int = 0
    hook_correct: int = 0
    hook_unrelated: int = 0
    unrelated_pairs: int = 0
    misses: list[str] = field(default_factory=list)
    per_project: dict[str, tuple[int, int, float]] = field(default_factory=dict)

    @property
    def hit_at_5(self) -> float:
        return self.hits_at_5 / self.questions if self.questions else 0.0

    @property
    def mrr(self) -> float:
        return self.reciprocal / self.questions if self.questions else 0.0


def _settings(box: Sandbox) -> Settings:
    return Settings(data_dir=box.data_dir, agent_home=box.agent_home,
                    config_dir=box.config_dir, provider="offline")


def install_eval(base: Path, name: str) -> Project:
    fixture = Fixture.load(name)
    box = Sandbox(base / name, fixture)
    sessions: dict[str, str] = {}
    for entry in fixture.sessions:
        _, session_id = box.install(entry)
        sessions[entry.key] = session_id
    settings = _settings(box)
    memory = ProjectPaths(settings, box.workspace).memory_dir
    memory.mkdir(parents=True, exist_ok=True)
    texts = []
    for gold in sorted((fixture.root / "gold").glob("*.md")):
        shutil.copyfile(gold, memory / gold.name)
        texts.append(gold.read_text("utf-8"))
    return Project(name, settings, box.workspace.resolve(), sessions, texts)


def install_real(base: Path) -> Project:
    home, data = base / "real" / "home", base / "real" / "data"
    workspace = (base / "real" / "work" / "real").resolve()
    workspace.mkdir(parents=True)
    sessions: dict[str, str] = {}
    for relative in REAL_FILES:
        source = REAL / relative
        reader = TranscriptReader(source)
        for _ in reader:
            pass
        cwd = reader.session.cwd
        text = source.read_text("utf-8")
        if cwd:
            text = text.replace(json.dumps(cwd)[1:-1], str(workspace))
        if relative.startswith("claude-code/"):
            target = home / ".claude" / "projects" / claude_project_slug(str(workspace)) / \
                (f"{reader.session.id}.jsonl" if source.name.startswith("turn-")
                 else source.name)
        elif relative.startswith("codex/"):
            target = home / ".codex" / relative.split("codemie-code/", 1)[1]
        else:
            project_id = hashlib.sha256(str(workspace).encode()).hexdigest()
            target = home / ".gemini" / "tmp" / project_id / "chats" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, "utf-8")
        sessions[reader.session.id] = reader.session.id
    settings = Settings(data_dir=data, agent_home=home, config_dir=base / "real" / "config",
                        provider="offline")
    return Project("real", settings, workspace, sessions)


def install_all(base: Path) -> dict[str, Project]:
    projects = {name: install_eval(base, name) for name in project_names()}
    projects["real"] = install_real(base)
    for project in projects.values():
        report = refresh(ProjectPaths(project.settings, project.workspace))
        assert not report.busy
    return projects


def _answers(hit: SearchResult, project: Project, answers: list[str]) -> bool:
    if hit.kind == "memory":
        return f"memory:{hit.source}" in answers
    wanted = {project.sessions.get(a, a) for a in answers if not a.startswith("memory:")}
    return hit.session_id in wanted


def _belongs(hit: SearchResult, project: Project) -> bool:
    if hit.kind == "memory":
        return any(hit.text.split("…")[0][:40] in text or hit.title in text
                   for text in project.memory_texts)
    return hit.session_id in set(project.sessions.values())


def evaluate(base: Path, verbose: bool = False) -> Scores:
    projects = install_all(base)
    questions = tomllib.loads(QUESTIONS.read_text("utf-8"))["q"]
    scores = Scores()
    for item in questions:
        project = projects[item["project"]]
        response = search_project(project.settings, project.workspace, item["question"],
                                  limit=10, update=False)
        rank = next((n for n, hit in enumerate(response.results, 1)
                     if _answers(hit, project, item["answers"])), None)
        scores.questions += 1
        done, hit5, rr = scores.per_project.get(project.name, (0, 0, 0.0))
        if rank is not None and rank <= 5:
            scores.hits_at_5 += 1
            hit5 += 1
        if rank is not None:
            scores.reciprocal += 1 / rank
            rr += 1 / rank
        scores.per_project[project.name] = (done + 1, hit5, rr)
        if rank is None or rank > 5:
            scores.misses.append(f"[{project.name}] {item['question']} -> rank {rank}")
        if verbose:
            print(f"  {rank or '-':>2}  [{project.name}] {item['question']}")
        for hit in response.results:
            scores.secrets += any(secret in hit.text or secret in hit.title
                                  for secret in SECRETS)
            scores.foreign += not _belongs(hit, project)
        for other in projects.values():
            if other is project:
                continue
            crossed = search_project(other.settings, other.workspace, item["question"],
                                     limit=10, update=False)
            scores.foreign += sum(not _belongs(hit, other) for hit in crossed.results)
        with open_index(ProjectPaths(project.settings, project.workspace)) as index:
            recalled = recall(index, item["question"])
        if recalled:
            scores.hook_answered += 1
            scores.hook_correct += any(
                (r.hit.kind == "memory" and f"memory:{r.hit.source}" in item["answers"])
                or r.hit.session_id in {project.sessions.get(a, a) for a in item["answers"]}
                for r in recalled)
    for prompt in UNRELATED:
        for project in projects.values():
            with open_index(ProjectPaths(project.settings, project.workspace)) as index:
                scores.hook_unrelated += bool(recall(index, prompt))
                scores.unrelated_pairs += 1
    for project in projects.values():
        directory = index_path(ProjectPaths(project.settings, project.workspace)).parent
        raw = b"".join(p.read_bytes() for p in directory.iterdir() if p.is_file())
        scores.secrets += sum(secret.encode() in raw for secret in SECRETS)
    return scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="reverie-bench-recall-"))
    try:
        scores = evaluate(base, verbose=args.verbose)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"labelled questions: {scores.questions}")
    for name, (count, hit5, rr) in sorted(scores.per_project.items()):
        print(f"  {name:<14} {count:>3} questions  hit@5 {hit5 / count:.2f}  MRR {rr / count:.2f}")
    print(f"hit@5 {scores.hit_at_5:.3f}   MRR {scores.mrr:.3f}   (goal 0.9 / 0.7)")
    print(f"hits from another project: {scores.foreign}   secrets in hits or index: "
          f"{scores.secrets}")
    print(f"prompt hook: answers {scores.hook_answered}/{scores.questions} labelled questions "
          f"({scores.hook_correct} with a right hit); {scores.hook_unrelated} of "
          f"{scores.unrelated_pairs} unrelated prompt x project pairs answered")
    for miss in scores.misses:
        print(f"  miss: {miss}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
