"""The real-session rubric (``real_eval.py``) may not regress: grades per notes file and per
memory, computed from the hand labels of public sessions (tests/fixtures/real)."""

from __future__ import annotations

import pytest

from eval.real_eval import MEMORY_GOAL, NOTES_GOAL, grade_all, means

# one run of the real set: one xdist worker
pytestmark = pytest.mark.xdist_group("eval-real-floors")

#: (min notes mean, min single notes grade, min memory mean, max wrong claims)
#: 2026-12-01, 15 Aider sessions of the aider repository: before issue 26's fixes the engine
#: scored notes 2.30 (min 1.50), memory 1.50, 16 wrong claims; after: 4.93 (min 4.00), 3.50, 0.
#: Then 18 sessions (a011, a012, a078 added: two errors in one check, /undo of ten commits, a
#: pasted traceback, three chat corrections): 4.99 (min 4.75), 3.50, 0.
#: 2026-12-02, 31 sessions: + 4 Codex (cpolar-connect, ai-trading-bot), 5 Claude Code and 4
#: Gemini CLI sessions (two users' home directories). On them the engine first scored notes
#: 4.52 overall (per project 3.25-4.99), memory 2.95, 4 wrong claims; after the fixes of this
#: round: notes 4.94 (min 4.00; per project 4.67-5.00), memory 4.70 (min 3.50), 0 wrong.
#: Memory's 3.50 is Aider's: `pytest` never passed there (precision first). Raise, never lower.
#: 2026-12-02, 29 sessions: two Codex rollouts left the set (ai-trading-bot's t01, cpolar's c01:
#: no stored public copy to cite). Same engine: notes 4.93 (min 4.00), memory 4.70, 0 wrong;
#: ai-trading-bot's notes mean is now its t02 alone, 4.33 (t02 graded 4.33 before too; t01
#: had 5.00), so the per-project notes floor follows the set, not the engine: 4.6 -> 4.3.
FLOORS = (4.9, 4.0, 4.7, 0)
#: every project's own notes mean, and its memory grade, at least this
PROJECT_FLOORS = (4.3, 3.5)


def test_real_sessions_meet_the_floors() -> None:
    grades = grade_all()
    notes, memory = means(grades)
    assert not [e for g in grades for e in g.errors]
    # the set the issue asks for: at least 15 sessions from 4 agents and 4 projects
    assert sum(len(g.notes) for g in grades) >= 29
    assert len({a for g in grades for a in g.agents}) >= 4
    assert len(grades) >= 5
    assert notes is not None and notes >= max(FLOORS[0], NOTES_GOAL), notes
    assert min(v for g in grades for v in g.notes.values()) >= FLOORS[1]
    assert memory is not None and memory >= max(FLOORS[2], MEMORY_GOAL), memory
    assert sum(g.wrong for g in grades) <= FLOORS[3]
    for project in grades:
        values = list(project.notes.values())
        assert sum(values) / len(values) >= PROJECT_FLOORS[0], (project.project, values)
        assert project.memory is not None and project.memory >= PROJECT_FLOORS[1], project.project
