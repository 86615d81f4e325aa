"""The real-session evaluation: public transcripts nobody here wrote, labelled by hand, graded
by an explicit rubric.

Fixtures: ``tests/fixtures/real/<project>/`` in the same layout as the synthetic set
(``sessions.json``, ``labels.toml``, ``home/``), origins in ``tests/fixtures/real/SOURCES.md``.
The engine paths run exactly as in ``eval_harness`` (notes after each session, a dream after
each session); what differs is how the output is judged: a grade from 1 to 5 per notes file
and per memory, computed mechanically from the labels.

Rubric (``notes_grade``, ``memory_grade``), where a *fact* is a labelled pattern that must be
found in a useful entry, *noise* an entry that matches a noise pattern, *wrong* an entry that
matches a wrong-claim pattern, *other* an entry that matches nothing:

notes of one session::

    facts   = share of the session's facts found (state facts excluded; 1 when none)
    state   = share of its end-state facts found (``state = true``: committed? undone? …)
    clean   = max(0, 1 - noise / 4)
    grade   = 1 + 2 * facts + 1 * state + 1 * clean
    a wrong claim caps the grade: 1 wrong -> at most 2.5, 2 or more -> at most 1.5

memory of one project (after the last dream)::

    facts   = share of its durable facts found (1 when none is expected)
    clean   = max(0, 1 - (noise + other) / 4)   (memory has to earn every line)
    grade   = 1 + 3 * facts + 1 * clean
    the same caps for wrong claims

Goals (issue 26): notes mean >= 4.5, memory mean >= 4, no wrong claim.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .eval_harness import REAL_FIXTURES, Fixture, PathResult, project_names, run_project
from .eval_score import Labels, Score, expected_facts, load_labels, score_files

NOTES_GOAL = 4.5
MEMORY_GOAL = 4.0


def _cap(grade: float, wrong: int) -> float:
    if wrong >= 2:
        return min(grade, 1.5)
    if wrong == 1:
        return min(grade, 2.5)
    return grade


def _share(found: int, expected: int) -> float:
    return found / expected if expected else 1.0


def notes_grade(score: Score, state_ids: set[str]) -> float:
    facts = [f for f in score.expected if f not in state_ids]
    states = [f for f in score.expected if f in state_ids]
    found = set(score.matched)
    grade = (1 + 2 * _share(sum(f in found for f in facts), len(facts))
             + 1 * _share(sum(f in found for f in states), len(states))
             + 1 * max(0.0, 1 - score.count("noise") / 4))
    return round(_cap(grade, score.wrong), 2)


def memory_grade(score: Score) -> float:
    grade = (1 + 3 * _share(len(score.matched), len(score.expected))
             + 1 * max(0.0, 1 - (score.count("noise") + score.count("other")) / 4))
    return round(_cap(grade, score.wrong), 2)


@dataclass
class ProjectGrades:
    project: str
    notes: dict[str, float] = field(default_factory=dict)
    notes_scores: dict[str, Score] = field(default_factory=dict)
    memory: float | None = None
    memory_score: Score | None = None
    agents: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    @property
    def wrong(self) -> int:
        scores = [*self.notes_scores.values(), *([self.memory_score] if self.memory_score else [])]
        return sum(s.wrong for s in scores)


def state_ids(path: Path) -> set[str]:
    data = tomllib.loads(path.read_text("utf-8"))
    return {str(f["id"]) for f in data.get("fact", []) if f.get("state")}


def grade_project(name: str, *, keep: Path | None = None,
                  extra_env: dict[str, str] | None = None) -> ProjectGrades:
    root = REAL_FIXTURES / name
    labels: Labels = load_labels(root / "labels.toml")
    states = state_ids(root / "labels.toml")
    results: list[PathResult] = run_project(name, paths=("notes", "dream"), keep=keep,
                                            extra_env=extra_env, fixtures=REAL_FIXTURES)
    grades = ProjectGrades(name)
    fixture = Fixture.load(name, REAL_FIXTURES)
    grades.agents = {s.agent for s in fixture.sessions}
    for result in results:
        grades.errors += result.errors
        if result.path == "notes":
            # the sandbox's workspace, as the harness's own scoring sees it (not a temp path)
            workspace = re.compile(r"[^\s'\"`<>()]*/dream/work/" + re.escape(name))
            for entry in fixture.sessions:
                text = workspace.sub("<workspace>", result.files.get(f"{entry.key}.md", ""))
                score = score_files({f"{entry.key}.md": text} if text else {}, labels, "notes",
                                    expected_facts(labels, "notes", entry.key))
                grades.notes_scores[entry.key] = score
                grades.notes[entry.key] = notes_grade(score, states)
        elif result.path == "dream":
            grades.memory_score = result.score
            grades.memory = memory_grade(result.score)
    return grades


def grade_all(names: list[str] | None = None, **kwargs: Any) -> list[ProjectGrades]:
    return [grade_project(n, **kwargs) for n in names or project_names(REAL_FIXTURES)]


def means(grades: list[ProjectGrades]) -> tuple[float | None, float | None]:
    notes = [g for p in grades for g in p.notes.values()]
    memory = [p.memory for p in grades if p.memory is not None]
    return (round(sum(notes) / len(notes), 2) if notes else None,
            round(sum(memory) / len(memory), 2) if memory else None)


def real_table(grades: list[ProjectGrades], details: bool = False) -> str:
    rows = [f"{'project':<16} {'sessions':>8} {'agents':<20} {'notes':>6} {'min':>5} "
            f"{'memory':>6} {'wrong':>5}"]
    rows.append("-" * len(rows[0]))
    for p in grades:
        values = list(p.notes.values())
        mean = sum(values) / len(values) if values else 0.0
        rows.append(f"{p.project:<16} {len(values):>8} {','.join(sorted(p.agents)):<20} "
                    f"{mean:6.2f} {min(values, default=0):5.2f} "
                    f"{p.memory if p.memory is not None else 0:6.2f} {p.wrong:>5}")
    notes, memory = means(grades)
    sessions = sum(len(p.notes) for p in grades)
    agents = {a for p in grades for a in p.agents}
    rows.append(f"{'ALL':<16} {sessions:>8} {len(agents):<20} {notes or 0:6.2f} {'':>5} "
                f"{memory or 0:6.2f} {sum(p.wrong for p in grades):>5}")
    rows.append(f"goals: notes >= {NOTES_GOAL}, memory >= {MEMORY_GOAL}, wrong = 0")
    if details:
        for p in grades:
            rows.append(f"\n== {p.project}")
            for key, score in p.notes_scores.items():
                bad = [v for v in score.verdicts if v.label in ("wrong", "noise")]
                rows.append(f"  notes {key}: {p.notes[key]:.2f}  missed: "
                            f"{', '.join(score.missed) or '-'}")
                rows += [f"      {v.label:<5} {v.by:<18} {v.entry.text[:140]}" for v in bad]
            if p.memory_score is not None:
                rows.append(f"  memory: {p.memory:.2f}  missed: "
                            f"{', '.join(p.memory_score.missed) or '-'}")
                rows += [f"      {v.label:<5} {v.by:<18} {v.entry.file}: {v.entry.text[:140]}"
                         for v in p.memory_score.verdicts
                         if v.label in ("wrong", "noise", "other")]
    return "\n".join(rows)
